package dev.stagehand.recall.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.offset;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class MountPlannerTest {

    @Test
    void aPlanEndsWithTheLastReadsNotWithTheDismountAfterThem() {
        // drive 0 takes the one volume (300 s from mount to the end of its 200 s dismount); drive 1 is
        // reading until 50 s and gets nothing more
        double[] ends = MountPlanner.plan(new double[] {0, 250}, new double[] {0, 50}, new double[] {300},
                new double[] {200}, 0, 0, 0);
        assertThat(ends[0]).isCloseTo(100, offset(1e-9));
        assertThat(ends[1]).isCloseTo(50, offset(1e-9));
    }

    @Test
    void whenADriveAlreadyBusySetsTheLatestEndTheNextLatestDecides() {
        // drive 2 reads until 5,000 s whatever is chosen; drive 1 frees at 400 s. Volume 0 is short (400 s
        // with its dismount), volume 1 long (1,200 s). Long now, short on drive 1: drives 0 and 1 end at
        // 1,000 and 600 s; short now, long on drive 1: at 200 and 1,400 s.
        double[] free = {0, 400, 5_200}, readEnds = {0, 200, 5_000};
        double[] w = {400, 1_200}, u = {200, 200};
        double[] shortNow = MountPlanner.plan(free, readEnds, w, u, 0, 0, 0);
        double[] longNow = MountPlanner.plan(free, readEnds, w, u, 0, 0, 1);
        assertThat(shortNow[0]).isEqualTo(longNow[0]).isEqualTo(5_000); // the latest end ties
        assertThat(longNow[1]).isCloseTo(1_000, offset(1e-9));
        assertThat(shortNow[1]).isCloseTo(1_400, offset(1e-9));
        assertThat(MountPlanner.earlier(longNow, shortNow)).isTrue();
        assertThat(MountPlanner.earlier(shortNow, longNow)).isFalse();
    }

    @Test
    void drivesBelowTheLatestAreStillEvenedOut() {
        // drive 2 reads until 5,000 s. Volume 0 (800 s) starts on drive 0 now; longest first gives 900 s to
        // drive 1 (free at 300 s), 700 to drive 0, 600 to drive 1: ends 1,500 and 1,800 s. Swapping the 900
        // and the 700 ends them at 1,700 and 1,600 s, though the latest end (5,000 s) does not move.
        double[] ends = MountPlanner.plan(new double[] {0, 300, 5_200}, new double[] {0, 300, 5_000},
                new double[] {800, 700, 900, 600}, new double[] {0, 0, 0, 0}, 0, 0, 0);
        assertThat(ends).containsExactly(5_000, 1_700, 1_600);
    }

    @Test
    void theVolumeMountedNowPaysItsDismountWhenAnotherFollowsOnTheSameDrive() {
        // drive 1 reads until 5,000 s, so both volumes go to drive 0: small S (300 s, 140 s dismount) and
        // big B (600 s, 195 s). S now, B last: 900 - 195 = 705 s; B now, S last: 900 - 140 = 760 s.
        double[] free = {0, 5_200}, readEnds = {0, 5_000}, w = {300, 600}, u = {140, 195};
        double[] smallNow = MountPlanner.plan(free, readEnds, w, u, 0, 0, 0);
        double[] bigNow = MountPlanner.plan(free, readEnds, w, u, 0, 0, 1);
        assertThat(smallNow).containsExactly(5_000, 705);
        assertThat(bigNow).containsExactly(5_000, 760);
        assertThat(MountPlanner.earlier(smallNow, bigNow)).isTrue();
    }

    static final long GB = 1_000_000_000L;

    /**
     * Two requests wait for a mount, each on a tape of its own: "short" (one file, waiting 60 s) and "long"
     * (five 10 GB files along the tape, just arrived). By response ratio the short one goes first; but the long
     * one ends under the recent p95 latency only if mounted now, while the short one can wait a round and still
     * end under it, so with no more queues than drives the long one goes first. With more queues waiting than
     * drives, or before the recent p95 is known, the ranking stays by response ratio.
     */
    @Test
    void withFewQueuesWaitingTheOneThatCanStillEndUnderTheTailLineOnlyIfMountedNowGoesFirst() {
        SchedulerConfig config = SchedulerConfig.defaults(SchedulerConfig.Policy.TAPE_AWARE);
        TestCosts cost = new TestCosts();
        MountPlanner planner = new MountPlanner(config, cost);
        QueueModel model = new QueueModel();
        model.addRequest("short", 0, 0, "exp", List.of(Harness.file(1, "SHORT", 3_000 * GB, GB)), v -> false);
        List<QueueModel.FileSpec> files = new ArrayList<>();
        for (int i = 0; i < 5; i++) files.add(Harness.file(10 + i, "LONG", (1_000 + 3_000L * i) * GB, 10 * GB));
        model.addRequest("long", 50, 0, "exp", files, v -> false);
        double now = 60;
        VolumeQueue lq = model.queue("LONG"), sq = model.queue("SHORT");
        double longEnds = 10 + planner.serviceSeconds(lq) - cost.dismountSeconds(lq.bytes()); // its latency if mounted now
        double shortEnds = 60 + planner.serviceSeconds(sq) - cost.dismountSeconds(sq.bytes());
        double line = longEnds + 20;
        assertThat(shortEnds + 100).isLessThan(line); // the short one has time to spare, the long one 20 s

        assertThat(labels(planner.rank(model, now, Set.of(), Map.of(), Double.POSITIVE_INFINITY, 2)))
                .containsExactly("SHORT", "LONG"); // p95 not known yet
        assertThat(labels(planner.rank(model, now, Set.of(), Map.of(), line, 2))).containsExactly("LONG", "SHORT");
        // more queues than drives: by response ratio
        assertThat(labels(planner.rank(model, now, Set.of(), Map.of(), line, 1))).containsExactly("SHORT", "LONG");
        // the long one ends past the line whatever is done: no reason to go first
        assertThat(labels(planner.rank(model, now, Set.of(), Map.of(), longEnds - 20, 2))).containsExactly("SHORT", "LONG");
    }

    private static List<String> labels(List<VolumeQueue> qs) {
        return qs.stream().map(VolumeQueue::label).toList();
    }
}
