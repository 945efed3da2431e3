package dev.stagehand.recall.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.data.Offset.offset;

import java.util.List;
import org.junit.jupiter.api.Test;

class LowerBoundTest {

    @Test
    void handComputedTwoTapesOneDrive() {
        long cw = 64_285_714_286L; // C / W
        List<LowerBound.Item> files = List.of(
                new LowerBound.Item("T1", 0, 4_000_000_000L, 0),            // p = 6.7+17+10+0 = 33.7, U = 55+30+6.7
                new LowerBound.Item("T2", cw / 2, 8_000_000_000L, 0),       // locate BOT->x=.5 = 4.3+30 = 34.3
                new LowerBound.Item("T2", cw * 3 / 4, 4_000_000_000L, 0));  // 2 runs: P = 34.3+4.3; p = 23.7+30+38.6
        LowerBound.Result r = LowerBound.compute(files, 1, 1, new TestCosts());
        assertThat(r.longestTape()).isCloseTo(92.3, offset(1e-3));
        assertThat(r.driveWork()).isCloseTo(33.7 + 92.3 + 91.7, offset(1e-3));      // (b) = 217.7
        assertThat(r.pigeonhole()).isCloseTo(92.3 + 91.7 + 33.7, offset(1e-3));     // (c)
        assertThat(r.accessorWork()).isCloseTo(3 * 6.7 + 33.7 - 6.7, offset(1e-3)); // (d) = 47.1
        assertThat(r.arrivals()).isCloseTo(20, offset(1e-9));                        // (e)
        assertThat(r.bound()).isCloseTo(217.7, offset(1e-3));
    }

    @Test
    void enoughDrivesLeaveTheLongestTape() {
        List<LowerBound.Item> files = List.of(new LowerBound.Item("T1", 0, 4_000_000_000L, 0),
                new LowerBound.Item("T2", 0, 40_000_000_000L, 500));
        LowerBound.Result r = LowerBound.compute(files, 2, 1, new TestCosts());
        assertThat(r.pigeonhole()).isZero();
        assertThat(r.bound()).isCloseTo(600, offset(1e-9)); // arrival 500 + 100 s of reading
    }

    @Test
    void theTightBoundCountsTheDrivesWaitingForTheOneAccessorAtTheStart() {
        // four one-file tapes at BOT on four drives and one accessor: the first mounts start their moves at
        // 0, 6.7, 13.4 and 20.1 s, so the drives idle 40.2 s in all before their first mount
        List<LowerBound.Item> files = new java.util.ArrayList<>();
        for (int t = 0; t < 4; t++) files.add(new LowerBound.Item("T" + t, 0, 40_000_000_000L, 0)); // p = 23.7 + 100
        LowerBound.Result model = LowerBound.compute(files, 4, 1, new TestCosts());
        LowerBound.Result tight = LowerBound.tight(files, 4, 1, new TestCosts());
        assertThat(model.driveWork()).isCloseTo(123.7, offset(1e-9));
        assertThat(tight.driveWork()).isCloseTo(123.7 + (0 + 1 + 2 + 3) * 6.7 / 4, offset(1e-9));
        // with two accessors two moves run at once: 0, 0, 6.7, 6.7
        assertThat(LowerBound.tight(files, 4, 2, new TestCosts()).driveWork()).isCloseTo(123.7 + 2 * 6.7 / 4, offset(1e-9));
    }

    @Test
    void exactToursMatchEveryOrderTriedAndTightenTheBound() {
        TestCosts cost = new TestCosts();
        java.util.Random rnd = new java.util.Random(5);
        for (int trial = 0; trial < 30; trial++) {
            int k = 1 + rnd.nextInt(6);
            List<LowerBound.Item> tape = new java.util.ArrayList<>();
            for (int i = 0; i < k; i++) tape.add(new LowerBound.Item("T", (long) (rnd.nextDouble() * 17e12), 2_000_000_000L, 0));
            tape.sort(java.util.Comparator.comparingLong(LowerBound.Item::offsetBytes));
            double brute = bestOrder(tape, new boolean[k], 0, cost);
            assertThat(LowerBound.exactTour(tape, cost)).isCloseTo(brute, offset(1e-6));
            LowerBound.Result model = LowerBound.compute(tape, 1, 1, cost), tight = LowerBound.tight(tape, 1, 1, cost);
            assertThat(tight.bound()).isGreaterThanOrEqualTo(model.bound() - 1e-9);
            assertThat(tight.longestTape()).isCloseTo(6.7 + 17 + cost.readSeconds(2_000_000_000L * k) + brute, offset(1e-6));
        }
    }

    /** Every order of the remaining files from head {@code h}: the least positioning time. */
    private static double bestOrder(List<LowerBound.Item> tape, boolean[] used, long h, TestCosts cost) {
        double best = Double.POSITIVE_INFINITY;
        boolean any = false;
        for (int i = 0; i < tape.size(); i++) {
            if (used[i]) continue;
            any = true;
            used[i] = true;
            LowerBound.Item f = tape.get(i);
            best = Math.min(best, cost.positionSeconds(h, f.offsetBytes()) + bestOrder(tape, used, f.offsetBytes() + f.sizeBytes(), cost));
            used[i] = false;
        }
        return any ? best : 0;
    }
}
