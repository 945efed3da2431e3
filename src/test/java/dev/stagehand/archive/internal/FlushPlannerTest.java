package dev.stagehand.archive.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.archive.internal.FlushPlanner.FamilyQueue;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class FlushPlannerTest {

    static final Instant NOW = Instant.parse("2025-01-01T12:00:00Z");

    static FamilyQueue q(String family, int copy, long bytes, Duration age, String volume, boolean busy) {
        return new FamilyQueue(family, copy, bytes, 10, NOW.minus(age), volume, busy);
    }

    @Test
    void aDatasetIsItsOwnFamilyUnlessAGroupMatchesIt() {
        Map<String, List<String>> groups = Map.of("phenix-raw", List.of("run*-raw", "calib"), "zz", List.of("*"));
        assertThat(FlushPlanner.family("run14-raw", groups)).isEqualTo("phenix-raw");
        assertThat(FlushPlanner.family("calib", groups)).isEqualTo("phenix-raw");
        assertThat(FlushPlanner.family("run14-dst", groups)).isEqualTo("zz"); // the catch-all group, matched last by name
        assertThat(FlushPlanner.family("run14.raw", Map.of("g", List.of("run*-raw")))).isEqualTo("run14.raw"); // '.' is literal
        assertThat(FlushPlanner.family("x", Map.of())).isEqualTo("x");
    }

    @Test
    void aQueueIsWorthAMountByBytesOrAgeAndOldestGoFirst() {
        List<FamilyQueue> qs = List.of(
                q("small-young", 1, 5, Duration.ofMinutes(1), null, false),
                q("big", 1, 100, Duration.ofMinutes(2), null, false),
                q("old", 1, 5, Duration.ofMinutes(30), null, false),
                q("busy", 1, 1000, Duration.ofHours(1), "V1", true));
        List<FamilyQueue> worth = FlushPlanner.worthFlushing(qs, NOW, 100, Duration.ofMinutes(10), false);
        assertThat(worth).extracting(FamilyQueue::family).containsExactly("old", "big");
    }

    @Test
    void underPressureEveryQueueGoesBiggestFirst() {
        List<FamilyQueue> qs = List.of(
                q("a", 1, 5, Duration.ofMinutes(1), null, false),
                q("b", 1, 50, Duration.ofMinutes(1), null, false),
                q("b", 2, 50, Duration.ofMinutes(1), null, false));
        assertThat(FlushPlanner.worthFlushing(qs, NOW, 1000, Duration.ofHours(1), true))
                .extracting(x -> x.family() + x.copy()).containsExactly("b1", "b2", "a1");
    }

    @Test
    void aDriveKeepsItsVolumeWhileItsFamilyIsWorthItOrNothingElseIs() {
        FamilyQueue mountedBig = q("a", 1, 500, Duration.ZERO, "V1", false);
        FamilyQueue mountedSmall = q("a", 1, 5, Duration.ZERO, "V1", false);
        FamilyQueue other = q("b", 2, 300, Duration.ofMinutes(1), "V2", false);
        assertThat(FlushPlanner.choose(List.of(other, mountedBig), mountedBig, 100)).isEqualTo(mountedBig);
        // a trickle on the mounted volume does not hold the drive while another family is worth a mount
        assertThat(FlushPlanner.choose(List.of(other), mountedSmall, 100)).isEqualTo(other);
        // ... but with nothing else worth it, the trickle streams on without an exchange
        assertThat(FlushPlanner.choose(List.of(), mountedSmall, 100)).isEqualTo(mountedSmall);
        assertThat(FlushPlanner.choose(List.of(other), null, 100)).isEqualTo(other);
        assertThat(FlushPlanner.choose(List.of(), null, 100)).isNull();
        assertThat(FlushPlanner.choose(List.of(), q("a", 1, 500, Duration.ZERO, "V1", true), 100)).isNull(); // busy elsewhere
    }

    @Test
    void aWriteListKeepsWriteOrderAndStopsAtTheFirstFileThatDoesNotFit() {
        long[] sizes = {40, 30, 20, 5};
        assertThat(FlushPlanner.take(sizes, 100, 1000, 100)).isEqualTo(4);
        assertThat(FlushPlanner.take(sizes, 75, 1000, 100)).isEqualTo(2); // 40+30; 20 does not fit and 5 must not jump it
        assertThat(FlushPlanner.take(sizes, 30, 1000, 100)).isZero();     // the volume is full for this family
        assertThat(FlushPlanner.take(sizes, 100, 50, 100)).isEqualTo(1); // batch bytes
        assertThat(FlushPlanner.take(sizes, 100, 1000, 3)).isEqualTo(3); // batch files
        assertThat(FlushPlanner.take(new long[] {500}, 1000, 10, 100)).isEqualTo(1); // one file above the batch size still goes
    }
}
