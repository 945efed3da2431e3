package dev.stagehand.replication;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class ReplicationPropertiesTest {

    static ReplicationProperties.Schedule schedule(String zone) {
        return new ReplicationProperties.Schedule(zone, Duration.ofHours(12), Duration.ofSeconds(2));
    }

    @Test
    void anUnknownScheduleTimeZoneStopsTheStartInsteadOfRunningEveryCronInGmt() {
        // java.util.TimeZone, which the triggers are built with, reads an unknown id as GMT without a word
        assertThatThrownBy(() -> schedule("Europe/Berln")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("stagehand.replication.schedule.time-zone").hasMessageContaining("Europe/Berln");
        for (String known : new String[] {"UTC", "GMT", "Europe/Berlin", "America/New_York", "GMT+02:00", "EST"}) {
            assertThat(schedule(known).timeZone()).isEqualTo(known);
        }
    }

    @Test
    void theReplicaHistoryIsKeptThirtyDaysByDefaultAndAKeepOfNothingIsRefused() {
        var bound = new org.springframework.boot.context.properties.bind.Binder(
                new org.springframework.boot.context.properties.source.MapConfigurationPropertySource(java.util.Map.of()))
                .bindOrCreate("stagehand.replication", ReplicationProperties.class);
        assertThat(bound.historyKeep()).isEqualTo(Duration.ofDays(30));
        for (String keep : new String[] {"0s", "-1d"}) {
            assertThatThrownBy(() -> new org.springframework.boot.context.properties.bind.Binder(
                    new org.springframework.boot.context.properties.source.MapConfigurationPropertySource(
                            java.util.Map.of("stagehand.replication.history-keep", keep)))
                    .bindOrCreate("stagehand.replication", ReplicationProperties.class))
                    .hasStackTraceContaining("stagehand.replication.history-keep must be positive");
        }
    }
}
