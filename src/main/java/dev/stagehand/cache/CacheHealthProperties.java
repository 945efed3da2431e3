package dev.stagehand.cache;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.util.unit.DataSize;

/**
 * {@code stagehand.cache.health.*}: when the cache directories count as healthy.
 *
 * @param minFree a directory whose file system has less free space than this is not usable
 */
@ConfigurationProperties("stagehand.cache.health")
public record CacheHealthProperties(@DefaultValue("256MB") DataSize minFree) {}
