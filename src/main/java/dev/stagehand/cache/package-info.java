/**
 * The disk cache: space reservation, pins with lifetimes, LRU eviction, checksum verification.
 * <p>Allowed dependencies are declared below and checked by {@code ModularityTest}. The module graph is
 * one-way: base (platform, catalog) &larr; devices (tape, cache, transfer) &larr; flows that drive them
 * (recall, archive) &larr; replication &larr; api &larr; console &larr; cli. Sub-packages are internal.
 */
@org.springframework.modulith.ApplicationModule(allowedDependencies = {"platform", "catalog"})
package dev.stagehand.cache;
