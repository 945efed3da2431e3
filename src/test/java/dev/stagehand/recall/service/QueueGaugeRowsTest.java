package dev.stagehand.recall.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MultiGauge;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Queue gauge rows keep their gauge between refreshes (re-registering them races with Prometheus scrapes), and
 * refreshes are spaced so that a slow one (a huge queue) does not keep the database busy.
 */
class QueueGaugeRowsTest {

    @Test
    void aRowKeepsItsGaugeAndTakesTheNewValueAndAGoneRowIsRemoved() {
        var registry = new SimpleMeterRegistry();
        var rows = new RecallQueueMetrics.Rows(MultiGauge.builder("q").register(registry));
        Tags a = Tags.of("volume", "A00001"), b = Tags.of("volume", "B00001");

        rows.set(Map.of(a, 3L, b, 5L));
        Gauge first = registry.get("q").tags(a).gauge();
        assertThat(first.value()).isEqualTo(3);

        rows.set(Map.of(a, 7L));
        Gauge again = registry.get("q").tags(a).gauge();
        assertThat(again).isSameAs(first);
        assertThat(again.value()).isEqualTo(7);
        assertThat(registry.find("q").tags(b).gauge()).isNull();
    }

    @Test
    void aRefreshLongerThanATenthOfTheIntervalIsFollowedByTenTimesItsOwnTimeAtMostTenIntervals() {
        Duration interval = Duration.ofSeconds(30);
        assertThat(RecallQueueMetrics.pauseAfter(interval, Duration.ofMillis(40))).isEqualTo(interval);
        assertThat(RecallQueueMetrics.pauseAfter(interval, Duration.ofSeconds(3))).isEqualTo(interval);
        assertThat(RecallQueueMetrics.pauseAfter(interval, Duration.ofSeconds(9))).isEqualTo(Duration.ofSeconds(90));
        // a refresh held up for ten minutes by a busy database does not leave the gauges stale for 100
        assertThat(RecallQueueMetrics.pauseAfter(interval, Duration.ofMinutes(10))).isEqualTo(Duration.ofMinutes(5));
    }
}
