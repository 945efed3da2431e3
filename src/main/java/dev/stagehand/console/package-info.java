/**
 * The web admin console (Thymeleaf + htmx).
 * <p>Allowed dependencies are declared below and checked by {@code ModularityTest}. The module graph is
 * one-way: base (platform, catalog) &larr; devices (tape, cache, transfer) &larr; flows that drive them
 * (recall, archive) &larr; replication &larr; api &larr; console &larr; cli. Sub-packages are internal.
 */
@org.springframework.modulith.ApplicationModule(allowedDependencies = {"platform", "catalog", "tape", "cache", "transfer", "recall", "archive", "replication", "api"})
package dev.stagehand.console;
