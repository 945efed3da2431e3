package dev.stagehand.cache;

import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.util.unit.DataSize;

/**
 * {@code stagehand.cache.health.*}: when the cache directories count as healthy.
 *
 * @param minFree         a directory whose file system has less free space than this is not usable
 * @param refreshInterval how often the cache reads its directories' out-of-service marks for the health check (which
 *                        never asks the database itself): a mark or a put-back by another instance sharing a directory
 *                        shows at most this late
 */
@ConfigurationProperties("stagehand.cache.health")
public record CacheHealthProperties(@DefaultValue("256MB") DataSize minFree, @DefaultValue("10s") Duration refreshInterval) {

    @org.springframework.boot.context.properties.bind.ConstructorBinding
    public CacheHealthProperties {
        if (refreshInterval == null || refreshInterval.isNegative() || refreshInterval.isZero()) {
            throw new IllegalArgumentException("stagehand.cache.health.refresh-interval must be positive, got " + refreshInterval);
        }
    }
}
