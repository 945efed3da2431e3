package dev.stagehand.recall.request;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * Limits and defaults of stage requests ({@code stagehand.requests.*}).
 *
 * @param defaultDiskLifetimeSeconds pin lifetime of staged files when the client names none
 * @param maxDiskLifetimeSeconds     the longest pin lifetime a client may ask for
 * @param maxPriority                priorities run from -maxPriority to +maxPriority (0 is normal)
 */
@ConfigurationProperties("stagehand.requests")
public record StageRequestProperties(
        @DefaultValue("86400") long defaultDiskLifetimeSeconds,
        @DefaultValue("2592000") long maxDiskLifetimeSeconds,
        @DefaultValue("1000") int maxPriority) {}
