package dev.stagehand.recall.scheduler;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The lower bound on a recall's makespan of ../shared/docs/tape-model.md, computed exactly: the maximum of
 * (a) the longest tape, (b) total drive work over D, (c) the pigeonhole bound when tapes outnumber drives,
 * (d) accessor work over A and (e) the latest arrival plus its read. Valid whatever the scheduler does.
 */
public final class LowerBound {

    /** One distinct requested file. */
    public record Item(String volume, long offsetBytes, long sizeBytes, double arrival) {}

    /** The bound and its parts, in seconds. */
    public record Result(double bound, double longestTape, double driveWork, double pigeonhole, double accessorWork,
                         double arrivals, int volumes, double arrivedTape) {}

    private LowerBound() {}

    public static Result compute(List<Item> files, int drives, int accessors, CostModel cost) {
        return compute(files, drives, accessors, cost, false);
    }

    /** Tapes with at most this many runs get their exact minimum positioning tour in {@link #tight}. */
    static final int EXACT_TOUR_RUNS = 12;

    /**
     * A tighter bound than the model's, still valid whatever the scheduler does: each tape's positioning is
     * its exact minimum tour from BOT through its runs (locates, or streaming over a gap where quicker)
     * instead of one locate plus the 4.3 s fixed cost per further run. Splitting a tape's runs over two
     * mounts never beats one tour (a dismount and a mount, at least 115 s, cost more than any single locate,
     * at most 91 s), so one mount per tape is assumed for its positioning. Tapes with more than
     * {@value #EXACT_TOUR_RUNS} runs keep the model's charge. It shows how much of the gap between a
     * schedule and the model's bound is the tapes' geometry rather than the schedule. Its drive-work term
     * also counts the drives' wait for the accessors at the start: with A accessors the j-th first mount
     * starts its move no sooner than floor(j / A) moves after time 0 (16 drives on one accessor: the last
     * waits 100 s, 50 s per drive on average).
     */
    public static Result tight(List<Item> files, int drives, int accessors, CostModel cost) {
        return compute(files, drives, accessors, cost, true);
    }

    private static Result compute(List<Item> files, int drives, int accessors, CostModel cost, boolean exactTours) {
        if (files.isEmpty()) return new Result(0, 0, 0, 0, 0, 0, 0, 0);
        Map<String, List<Item>> perTape = new HashMap<>();
        double e = 0;
        for (Item f : files) {
            perTape.computeIfAbsent(f.volume(), k -> new ArrayList<>()).add(f);
            e = Math.max(e, f.arrival() + cost.readSeconds(f.sizeBytes()));
        }
        List<Double> p = new ArrayList<>();
        List<Double> u = new ArrayList<>();
        double arrived = 0;
        for (List<Item> tape : perTape.values()) {
            tape.sort((x, y) -> Long.compare(x.offsetBytes(), y.offsetBytes()));
            long bytes = 0;
            int runs = 0;
            long end = -1;
            double firstLocate = Double.POSITIVE_INFINITY;
            double firstArrival = Double.POSITIVE_INFINITY;
            for (Item f : tape) {
                firstArrival = Math.min(firstArrival, f.arrival());
                bytes += f.sizeBytes();
                if (f.offsetBytes() != end) runs++;
                end = f.offsetBytes() + f.sizeBytes();
                firstLocate = Math.min(firstLocate, cost.locateSeconds(0, f.offsetBytes()));
            }
            double positioning = firstLocate + cost.minLocateSeconds() * (runs - 1);
            if (exactTours && runs <= EXACT_TOUR_RUNS) positioning = Math.max(positioning, exactTour(tape, cost));
            double pt = cost.mountSeconds() + cost.readSeconds(bytes) + positioning;
            p.add(pt);
            arrived = Math.max(arrived, firstArrival + pt);
            u.add(cost.dismountSeconds(bytes));
        }
        int n = p.size();
        p.sort(Collections.reverseOrder());
        Collections.sort(u);
        double a = p.get(0);
        double sumP = 0;
        for (double x : p) sumP += x;
        double sumU = 0;
        for (int i = 0; i < Math.max(0, n - drives); i++) sumU += u.get(i);
        double ramp = 0;
        if (exactTours) {
            // The accessors move one cartridge each at a time: the j-th first mount (0-based) cannot start its
            // move before floor(j / A) moves of each accessor, so the drives idle at least that long at the start.
            for (int j = 0; j < Math.min(n, drives); j++) ramp += Math.floor((double) j / accessors) * cost.accessorMoveSeconds();
        }
        double b = (sumP + sumU + ramp) / drives;
        double c = n > drives ? p.get(drives - 1) + u.get(0) + p.get(drives) : 0;
        double r = cost.accessorMoveSeconds();
        double d = (n + Math.max(0, n - drives)) * r / accessors + p.get(n - 1) - r;
        double lb = Math.max(Math.max(a, b), Math.max(Math.max(c, d), e));
        return new Result(lb, a, b, c, d, e, n, arrived);
    }

    /** Minimum positioning seconds from BOT through every run of {@code tape} (sorted by offset): Held-Karp. */
    static double exactTour(List<Item> tape, CostModel cost) {
        List<long[]> runs = new ArrayList<>();
        for (Item f : tape) {
            long[] last = runs.isEmpty() ? null : runs.getLast();
            if (last != null && last[1] == f.offsetBytes()) last[1] = f.offsetBytes() + f.sizeBytes();
            else runs.add(new long[] {f.offsetBytes(), f.offsetBytes() + f.sizeBytes()});
        }
        int k = runs.size();
        double[][] c = new double[k][k];
        for (int i = 0; i < k; i++) for (int j = 0; j < k; j++) if (i != j) c[i][j] = cost.positionSeconds(runs.get(i)[1], runs.get(j)[0]);
        double[][] dp = new double[1 << k][k];
        for (double[] row : dp) java.util.Arrays.fill(row, Double.POSITIVE_INFINITY);
        for (int j = 0; j < k; j++) dp[1 << j][j] = cost.positionSeconds(0, runs.get(j)[0]);
        for (int mask = 1; mask < 1 << k; mask++) {
            for (int j = 0; j < k; j++) {
                double v = dp[mask][j];
                if (v == Double.POSITIVE_INFINITY) continue;
                for (int n = 0; n < k; n++) {
                    if ((mask & 1 << n) != 0) continue;
                    double w = v + c[j][n];
                    if (w < dp[mask | 1 << n][n]) dp[mask | 1 << n][n] = w;
                }
            }
        }
        double best = Double.POSITIVE_INFINITY;
        for (double v : dp[(1 << k) - 1]) best = Math.min(best, v);
        return best;
    }
}
