/**
 * Stage (recall) requests and the tape-aware recall scheduler: requests are grouped per volume, ordered
 * along the tape, mounted within drive and accessor limits, staged into the cache and handed to transfer.
 * <p>Allowed dependencies are declared below and checked by {@code ModularityTest}. The module graph is
 * one-way: base (platform, catalog) &larr; devices (tape, cache, transfer) &larr; flows that drive them
 * (recall, archive) &larr; replication &larr; api &larr; console &larr; cli. Sub-packages are internal.
 */
@org.springframework.modulith.ApplicationModule(allowedDependencies = {"platform", "catalog", "tape", "cache", "transfer"})
package dev.stagehand.recall;
