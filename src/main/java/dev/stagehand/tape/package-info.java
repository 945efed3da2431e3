/**
 * The tape library: the bulk, cancellable driver SPI, drives, accessors and volumes, the simulated
 * library (the embedded default) and the script driver for real HSMs.
 * <p>Allowed dependencies are declared below and checked by {@code ModularityTest}. The module graph is
 * one-way: base (platform, catalog) &larr; devices (tape, cache, transfer) &larr; flows that drive them
 * (recall, archive) &larr; replication &larr; api &larr; console &larr; cli. Sub-packages are internal.
 */
@org.springframework.modulith.ApplicationModule(allowedDependencies = {"platform", "catalog"})
package dev.stagehand.tape;
