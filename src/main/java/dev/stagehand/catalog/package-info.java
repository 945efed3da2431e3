/**
 * What the HSM knows: files, datasets, tape volumes, segments (file to volume positions), sites and their
 * endpoints; bulk import of HSM dumps.
 * <p>Allowed dependencies are declared below and checked by {@code ModularityTest}. The module graph is
 * one-way: base (platform, catalog) &larr; devices (tape, cache, transfer) &larr; flows that drive them
 * (recall, archive) &larr; replication &larr; api &larr; console &larr; cli. Sub-packages are internal.
 */
@org.springframework.modulith.ApplicationModule(allowedDependencies = {"platform"})
package dev.stagehand.catalog;
