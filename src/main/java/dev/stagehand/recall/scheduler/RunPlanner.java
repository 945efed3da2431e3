package dev.stagehand.recall.scheduler;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * Orders the requested files of one volume. Files lying back to back form runs that stream without a
 * locate; the runs are then ordered to minimise locate time from the head's position. The baseline is
 * shortest-locate-first (SLTF) from the head; {@link #order} improves on it with or-opt and 2-opt moves
 * on the locate cost (asymmetric, serpentine-aware through the cost model), within an evaluation budget.
 */
public final class RunPlanner {

    /** Runs above this count are ordered by SLTF only where the quadratic construction stays affordable. */
    static final int SLTF_LIMIT = 4000;

    private final CostModel cost;
    private final long budget;
    private final boolean readThrough;

    public RunPlanner(CostModel cost, long evaluationBudget) {
        this(cost, evaluationBudget, false);
    }

    /**
     * @param readThrough whether {@link #order} may plan to stream through a gap between runs when that is
     *                    quicker than a locate ({@link CostModel#positionSeconds}); the drive then reads the
     *                    unrequested bytes (time counted as reading, the bytes are dropped)
     */
    public RunPlanner(CostModel cost, long evaluationBudget, boolean readThrough) {
        this.cost = cost;
        this.budget = evaluationBudget;
        this.readThrough = readThrough;
    }

    public boolean readThrough() { return readThrough; }

    /** Positioning cost the tape-aware order plans with: a locate, or a read-through when allowed and cheaper. */
    double hopSeconds(long from, long to) {
        return readThrough ? cost.positionSeconds(from, to) : cost.locateSeconds(from, to);
    }

    /** A maximal set of requested files lying back to back on the volume. */
    record Run(long start, long end, List<FileWork> files) {}

    /** Groups {@code files} (all with a copy on {@code volume}) into runs in offset order. */
    static List<Run> runs(String volume, List<FileWork> files) {
        List<FileWork> sorted = new ArrayList<>(files);
        sorted.sort(Comparator.comparingLong(f -> f.offsetOn(volume)));
        List<Run> runs = new ArrayList<>();
        List<FileWork> cur = null;
        long start = 0, end = -1;
        for (FileWork f : sorted) {
            long o = f.offsetOn(volume);
            if (cur != null && o == end) {
                cur.add(f);
                end = o + f.sizeBytes;
            } else {
                if (cur != null) runs.add(new Run(start, end, cur));
                cur = new ArrayList<>();
                cur.add(f);
                start = o;
                end = o + f.sizeBytes;
            }
        }
        if (cur != null) runs.add(new Run(start, end, cur));
        return runs;
    }

    /** Shortest-locate-first from the head: the baseline (the greedy policy uses it). */
    public List<FileWork> orderSltf(String volume, List<FileWork> files, long head) {
        List<Run> runs = runs(volume, files);
        return flatten(runs, sltf(runs, head, false));
    }

    /**
     * The tape-aware order: two constructions — SLTF, and a serpentine sweep (forward-running wraps by
     * position going out, then backward-running wraps coming back) — each improved by or-opt and 2-opt
     * within half the budget; the cheaper wins, so it is never worse than SLTF.
     */
    public List<FileWork> order(String volume, List<FileWork> files, long head) {
        List<Run> runs = runs(volume, files);
        int[] a = sltf(runs, head, readThrough);
        improve(runs, a, head, budget / 2);
        int[] b = sweep(runs, head);
        improve(runs, b, head, budget / 2);
        return flatten(runs, pathCost(runs, a, head) <= pathCost(runs, b, head) ? a : b);
    }

    private double pathCost(List<Run> runs, int[] t, long head) {
        double s = 0;
        int prev = -1;
        for (int i : t) {
            s += c(runs, head, prev, i);
            prev = i;
        }
        return s;
    }

    /** Out along the forward wraps by position, back along the backward wraps (from where the head is). */
    private int[] sweep(List<Run> runs, long head) {
        int n = runs.size();
        Integer[] fwd = java.util.stream.IntStream.range(0, n).filter(i -> (cost.wrap(runs.get(i).start()) & 1) == 0).boxed().toArray(Integer[]::new);
        Integer[] bwd = java.util.stream.IntStream.range(0, n).filter(i -> (cost.wrap(runs.get(i).start()) & 1) == 1).boxed().toArray(Integer[]::new);
        java.util.Arrays.sort(fwd, Comparator.comparingDouble(i -> cost.position(runs.get(i).start())));
        java.util.Arrays.sort(bwd, Comparator.comparingDouble(i -> -cost.position(runs.get(i).start())));
        int[] t = new int[n];
        int k = 0;
        boolean headForward = (cost.wrap(head) & 1) == 0;
        for (Integer i : headForward ? fwd : bwd) t[k++] = i;
        for (Integer i : headForward ? bwd : fwd) t[k++] = i;
        return t;
    }

    /**
     * Total positioning seconds of visiting {@code files} in the given order from {@code head}: locates,
     * and gaps read through when this planner reads through them.
     */
    public double locateSeconds(String volume, List<FileWork> ordered, long head) {
        double s = 0;
        long h = head;
        for (FileWork f : ordered) {
            long o = f.offsetOn(volume);
            s += hopSeconds(h, o);
            h = o + f.sizeBytes;
        }
        return s;
    }

    /** Positioning and reading seconds of visiting {@code ordered} from {@code head}. */
    double workSeconds(String volume, List<FileWork> ordered, long head) {
        long bytes = 0;
        for (FileWork f : ordered) bytes += f.sizeBytes;
        return locateSeconds(volume, ordered, head) + cost.readSeconds(bytes);
    }

    private static List<FileWork> flatten(List<Run> runs, int[] tour) {
        List<FileWork> out = new ArrayList<>();
        for (int i : tour) out.addAll(runs.get(i).files());
        return out;
    }

    private int[] sltf(List<Run> runs, long head, boolean through) {
        int n = runs.size();
        int[] tour = new int[n];
        if (n > SLTF_LIMIT) { // offset order: a fallback that stays linear on enormous queues
            for (int i = 0; i < n; i++) tour[i] = i;
            return tour;
        }
        boolean[] used = new boolean[n];
        long h = head;
        for (int k = 0; k < n; k++) {
            int best = -1;
            double bc = Double.POSITIVE_INFINITY;
            for (int j = 0; j < n; j++) {
                if (used[j]) continue;
                long to = runs.get(j).start();
                double c = through ? cost.positionSeconds(h, to) : cost.locateSeconds(h, to);
                if (c < bc) { bc = c; best = j; }
            }
            used[best] = true;
            tour[k] = best;
            h = runs.get(best).end();
        }
        return tour;
    }

    /** c(i, j): locate from the end of run i (or the head, i = -1) to the start of run j; 0 to "nowhere". */
    private double c(List<Run> runs, long head, int i, int j) {
        if (j < 0) return 0;
        long from = i < 0 ? head : runs.get(i).end();
        return hopSeconds(from, runs.get(j).start());
    }

    private void improve(List<Run> runs, int[] t, long head, long budget) {
        int n = t.length;
        if (n < 3) return;
        long evals = 0;
        boolean improved = true;
        while (improved && evals < budget) {
            improved = false;
            // or-opt: move a segment of 1..3 runs to another place in the path
            for (int len = 1; len <= 3 && evals < budget; len++) {
                for (int i = 0; i + len <= n && evals < budget; i++) {
                    int prev = i == 0 ? -1 : t[i - 1];
                    int first = t[i], last = t[i + len - 1];
                    int next = i + len < n ? t[i + len] : -1;
                    double removeGain = c(runs, head, prev, first) + c(runs, head, last, next) - c(runs, head, prev, next);
                    evals += 3;
                    if (removeGain <= 1e-9) continue;
                    int bestJ = -2;
                    double bestDelta = -1e-9;
                    // insert between positions j and j+1 of the path without the segment (j = -1: right after the head)
                    for (int j = -1; j < n; j++) {
                        if (j >= i - 1 && j < i + len) continue;
                        int a = j < 0 ? -1 : t[j];
                        int b = j + 1 < n ? t[j + 1] : -1;
                        if (j + 1 == i) continue;
                        double add = c(runs, head, a, first) + c(runs, head, last, b) - c(runs, head, a, b);
                        evals += 3;
                        double delta = add - removeGain;
                        if (delta < bestDelta) { bestDelta = delta; bestJ = j; }
                    }
                    if (bestJ != -2) {
                        moveSegment(t, i, len, bestJ);
                        improved = true;
                    }
                }
            }
            // 2-opt: reverse the order of a stretch of runs (costs recomputed, the locate cost is asymmetric)
            if (n <= 400) {
                for (int i = 0; i < n - 1 && evals < budget; i++) {
                    for (int k = i + 1; k < n && evals < budget; k++) {
                        double before = 0, after = 0;
                        int prev = i == 0 ? -1 : t[i - 1];
                        int next = k + 1 < n ? t[k + 1] : -1;
                        before += c(runs, head, prev, t[i]) + c(runs, head, t[k], next);
                        after += c(runs, head, prev, t[k]) + c(runs, head, t[i], next);
                        for (int m = i; m < k; m++) {
                            before += c(runs, head, t[m], t[m + 1]);
                            after += c(runs, head, t[m + 1], t[m]);
                        }
                        evals += 2L * (k - i) + 4;
                        if (after < before - 1e-9) {
                            for (int a = i, b = k; a < b; a++, b--) { int x = t[a]; t[a] = t[b]; t[b] = x; }
                            improved = true;
                        }
                    }
                }
            }
        }
    }

    /** Moves t[i..i+len) to just after position j (positions as in the current array). */
    private static void moveSegment(int[] t, int i, int len, int j) {
        int n = t.length;
        int[] seg = new int[len];
        System.arraycopy(t, i, seg, 0, len);
        int[] rest = new int[n - len];
        int r = 0;
        for (int k = 0; k < n; k++) if (k < i || k >= i + len) rest[r++] = t[k];
        // j indexes the original array; its position in rest
        int insertAfter = j < i ? j : j - len;
        int w = 0;
        for (int k = -1; k < rest.length; k++) {
            if (k >= 0) t[w++] = rest[k];
            if (k == insertAfter) for (int s : seg) t[w++] = s;
        }
    }
}
