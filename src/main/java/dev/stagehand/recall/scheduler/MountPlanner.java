package dev.stagehand.recall.scheduler;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Which volume to mount next: a pure decision over the queue aggregates (no I/O), O(volumes log volumes).
 *
 * <p>Tape-aware order: (1) requests older than the aging limit (less {@link #AGING_LEAD}) first, oldest first — nothing starves;
 * (2) higher priority; (3) the experiment furthest below its fair share; (4) queues worth a mount in CTA's
 * sense (enough bytes or files, or old enough); (5) volumes that complete requests, by response ratio
 * (wait + service) / service times the number of requests they finish — short, complete-able work first,
 * which is what cuts request latency; (6) volumes that complete nothing yet (parts of big multi-tape
 * requests), longest first, which is what keeps the makespan of a bulk recall near its bound.
 * Greedy order: biggest queue first.
 */
public final class MountPlanner {

    private final SchedulerConfig config;
    private final CostModel cost;

    private final RunPlanner runPlanner;

    /** Queues with at most this many runs get their locate time planned exactly (cached); bigger ones estimated. */
    static final int PLANNED_RUNS_LIMIT = 200;

    public MountPlanner(SchedulerConfig config, CostModel cost) {
        this.config = config;
        this.cost = cost;
        this.runPlanner = new RunPlanner(cost, 0);
    }

    /** Estimated drive seconds to serve {@code q} from a mount to its dismount. */
    public double serviceSeconds(VolumeQueue q) {
        return cost.mountSeconds() + locateSeconds(q) + cost.readSeconds(q.bytes()) + cost.dismountSeconds(q.bytes());
    }

    /** Locate seconds of reading {@code q} from BOT: planned (SLTF, cached per queue version) or estimated. */
    double locateSeconds(VolumeQueue q) {
        int k = q.runs();
        if (k <= PLANNED_RUNS_LIMIT) {
            if (q.cachedVersion != q.version) {
                List<FileWork> files = new ArrayList<>(q.files.values());
                q.cachedLocateSeconds = runPlanner.locateSeconds(q.label, runPlanner.orderSltf(q.label, files, 0), 0);
                q.cachedVersion = q.version;
            }
            return q.cachedLocateSeconds;
        }
        // a fixed cost and a wrap change per run, plus about two passes along the tape once well ordered
        return k * 12.0 + 120.0;
    }

    /**
     * Candidates to mount, best first. {@code busy}: volumes in a drive (any state); {@code drivesInUse}:
     * drives held per experiment now. Volumes whose experiment is at its drive cap are left out.
     */
    public List<VolumeQueue> rank(QueueModel model, double now, Set<String> busy, Map<String, Integer> drivesInUse) {
        List<Cand> cands = new ArrayList<>();
        for (VolumeQueue q : model.queues()) {
            if (busy.contains(q.label)) continue;
            String exp = q.experiment();
            Integer cap = config.experimentDriveCaps().get(exp);
            if (config.policy() == SchedulerConfig.Policy.TAPE_AWARE && cap != null
                    && drivesInUse.getOrDefault(exp, 0) >= cap) continue;
            cands.add(new Cand(q, exp, now - q.oldestArrival(), serviceSeconds(q)));
        }
        Comparator<Cand> order = config.policy() == SchedulerConfig.Policy.GREEDY
                ? Comparator.comparingLong((Cand c) -> c.q.bytes()).reversed()
                : tapeAware(drivesInUse);
        cands.sort(order.thenComparing(c -> c.q.label));
        List<VolumeQueue> out = new ArrayList<>(cands.size());
        for (Cand c : cands) out.add(c.q);
        return out;
    }

    private record Cand(VolumeQueue q, String experiment, double age, double service) {}

    private Comparator<Cand> tapeAware(Map<String, Integer> drivesInUse) {
        double aging = startsAging();
        Map<String, Double> shares = config.experimentShares();
        return Comparator
                .comparing((Cand c) -> c.age < aging) // starving (false) first
                .thenComparing(c -> c.age >= aging ? -c.age : 0.0)
                .thenComparing(c -> !worthMounting(c))
                .thenComparing(c -> -c.q.maxPriority())
                .thenComparingDouble(c -> shares.isEmpty() ? 0.0
                        : drivesInUse.getOrDefault(c.experiment, 0) / shares.getOrDefault(c.experiment, 1e-3))
                .thenComparing(c -> c.q.completable() == 0)
                .thenComparingDouble(c -> c.q.completable() > 0
                        ? -((c.age + c.service) / c.service) * c.q.completable()
                        : -c.service);
    }

    /**
     * Balancing for multi-tape work: among the candidates from {@code i} on that belong to the same tier as
     * {@code ranked.get(i)} (nothing completes yet, same priority, not starving), plans which drive reads
     * which volume so that the drives finish as evenly as possible — longest-first assignment to the drive
     * free earliest, then moves and swaps of volumes between drives while the latest finish drops — and
     * returns the index of the biggest volume the plan gives to drive {@code drive} (free now). Plain
     * longest-first leaves drives finishing at uneven times at the end of a bulk recall.
     *
     * @param free     per drive: predicted time it can start a new mount (after its current dismount)
     * @param readEnds per drive: predicted end of the reads it holds now
     */
    public int balance(List<VolumeQueue> ranked, int i, double now, double[] free, double[] readEnds, int drive) {
        VolumeQueue first = ranked.get(i);
        // Starving queues go oldest first, except tape-fulls of bulk work: a recall longer than the aging
        // limit makes all its tapes starve together, and mounting them by age then ends drives unevenly
        // (bulk-hep-100k: 0.90 of the bound instead of 0.94). Those are balanced among themselves.
        boolean starving = starving(first, now);
        if (starving && !longWork(first)) return i;
        int prio = first.maxPriority();
        boolean completing = first.completable() != 0;
        int end = i;
        while (end < ranked.size() && end - i < 64) {
            VolumeQueue q = ranked.get(end);
            if (q.maxPriority() != prio || starving(q, now) != starving || (starving && !longWork(q))) break;
            if (!completing && q.completable() != 0) break;
            end++;
        }
        // A queue that completes requests keeps its place (latency) unless this is the last round: every
        // candidate left will start on the next free drive, so their order only decides how evenly drives end.
        if (completing && (end - i > free.length || end < ranked.size())) return i;
        int n = end - i, m = free.length;
        if (n <= 1) return i;
        double[] w = new double[n];
        for (int k = 0; k < n; k++) w[k] = serviceSeconds(ranked.get(i + k)); // read + dismount after it
        double base = 0;
        for (int d = 0; d < m; d++) if (d != drive) base = Math.max(base, readEnds[d]);
        int best = 0;
        double bestMk = Double.POSITIVE_INFINITY;
        double[] load = new double[m];
        for (int c = 0; c < Math.min(n, 24); c++) {
            for (int d = 0; d < m; d++) load[d] = d == drive ? now + w[c] : free[d];
            double mk = Math.max(base, plan(load, w, c));
            if (mk < bestMk - 1e-6) { bestMk = mk; best = c; }
        }
        return i + best;
    }

    private boolean starving(VolumeQueue q, double now) {
        return now - q.oldestArrival() >= startsAging();
    }

    /**
     * Share of the aging limit by which aging acts early. A queue that starts at the limit is done only after
     * waiting for a drive and its own service: at 4 drives random-user's oldest requests ended up to 463 s past
     * the 4 h limit. Starting at 90 % of it the latest end 14-19 min inside it (seeds 203-243, 3000-8000 files).
     */
    static final double AGING_LEAD = 0.1;

    /** Age from which a queue goes before everything else (a little before the aging limit, see {@link #AGING_LEAD}). */
    public double startsAging() {
        return config.agingLimitSeconds() * (1 - AGING_LEAD);
    }

    /** Reading time at least this long makes a queue bulk work: its place is set by balancing, not by latency. */
    static final double LONG_WORK_SECONDS = 600;

    /**
     * A queue whose locates and reads take long (a tape-full of a bulk recall): finishing its request a few
     * minutes sooner matters less than drives finishing evenly, so it is balanced even when it completes one.
     */
    public boolean longWork(VolumeQueue q) {
        return locateSeconds(q) + cost.readSeconds(q.bytes()) >= LONG_WORK_SECONDS;
    }

    /**
     * Predicted latest finish when the volumes (except {@code skip}) go to drives with the given loads:
     * longest first to the least-loaded drive, then moves and swaps off the latest drive while it helps.
     */
    static double plan(double[] load, double[] w, int skip) {
        int n = w.length, m = load.length;
        int[] at = new int[n];
        Integer[] byWork = new Integer[n];
        for (int k = 0; k < n; k++) byWork[k] = k;
        java.util.Arrays.sort(byWork, (x, y) -> Double.compare(w[y], w[x]));
        for (int k : byWork) {
            if (k == skip) { at[k] = -1; continue; }
            int best = 0;
            for (int d = 1; d < m; d++) if (load[d] < load[best]) best = d;
            at[k] = best;
            load[best] += w[k];
        }
        for (int iter = 0; iter < 500; iter++) {
            int top = 0;
            for (int d = 1; d < m; d++) if (load[d] > load[top]) top = d;
            boolean moved = false;
            for (int k = 0; k < n && !moved; k++) {
                if (at[k] != top) continue;
                for (int d = 0; d < m && !moved; d++) {
                    if (d == top || Double.isInfinite(load[d])) continue;
                    if (load[d] + w[k] < load[top] - 1e-6) {
                        load[d] += w[k]; load[top] -= w[k]; at[k] = d; moved = true;
                        continue;
                    }
                    for (int j = 0; j < n && !moved; j++) {
                        if (at[j] != d || w[j] >= w[k]) continue;
                        double delta = w[k] - w[j];
                        if (load[d] + delta < load[top] - 1e-6) {
                            load[d] += delta; load[top] -= delta; at[k] = d; at[j] = top; moved = true;
                        }
                    }
                }
            }
            if (!moved) break;
        }
        double mk = 0;
        for (double l : load) if (!Double.isInfinite(l)) mk = Math.max(mk, l);
        return mk;
    }

    /** CTA's test: enough bytes or files queued, or the oldest request old enough. */
    public boolean worthMounting(VolumeQueue q, double now) {
        return q.bytes() >= config.minMountBytes() || q.fileCount() >= config.minMountFiles()
                || now - q.oldestArrival() >= config.minMountAgeSeconds();
    }

    boolean worthMounting(Cand c) {
        return c.q.bytes() >= config.minMountBytes() || c.q.fileCount() >= config.minMountFiles()
                || c.age >= config.minMountAgeSeconds();
    }
}
