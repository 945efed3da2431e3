/**
 * GridFTP movers (jglobus): per-link connection pools, parallel streams, stall detection, retries,
 * checksum verification, adaptive concurrency.
 * <p>Allowed dependencies are declared below and checked by {@code ModularityTest}. The module graph is
 * one-way: base (platform, catalog) &larr; devices (tape, cache, transfer) &larr; flows that drive them
 * (recall, archive) &larr; replication &larr; api &larr; console &larr; cli. Sub-packages are internal.
 */
@org.springframework.modulith.ApplicationModule(allowedDependencies = {"platform", "catalog", "cache"})
package dev.stagehand.transfer;
