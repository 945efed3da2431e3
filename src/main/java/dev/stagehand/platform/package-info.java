/**
 * Cross-cutting plumbing every capability may use: the private PostgreSQL cluster of the embedded
 * defaults, DataSource set-up, clocks.
 * <p>Allowed dependencies are declared below and checked by {@code ModularityTest}. The module graph is
 * one-way: base (platform, catalog) &larr; devices (tape, cache, transfer) &larr; flows that drive them
 * (recall, archive) &larr; replication &larr; api &larr; console &larr; cli. Sub-packages are internal.
 */
@org.springframework.modulith.ApplicationModule(allowedDependencies = {})
package dev.stagehand.platform;
