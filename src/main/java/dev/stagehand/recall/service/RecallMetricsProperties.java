package dev.stagehand.recall.service;

import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * {@code stagehand.recall.metrics.*}.
 *
 * @param queueInterval how often the recall queue gauges are recomputed from the database (0: never)
 */
@ConfigurationProperties("stagehand.recall.metrics")
public record RecallMetricsProperties(@DefaultValue("30s") Duration queueInterval) {}
