package dev.stagehand.recall.scheduler;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Which volume to mount next: a pure decision over the queue aggregates (no I/O), O(volumes log volumes).
 *
 * <p>Tape-aware order: (1) requests older than the aging limit first, oldest first — nothing starves;
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
        double aging = config.agingLimitSeconds();
        Map<String, Double> shares = config.experimentShares();
        return Comparator
                .comparing((Cand c) -> c.age < aging) // starving (false) first
                .thenComparing(c -> c.age >= aging ? -c.age : 0.0)
                .thenComparing(c -> -c.q.maxPriority())
                .thenComparingDouble(c -> shares.isEmpty() ? 0.0
                        : drivesInUse.getOrDefault(c.experiment, 0) / shares.getOrDefault(c.experiment, 1e-3))
                .thenComparing(c -> !worthMounting(c))
                .thenComparing(c -> c.q.completable() == 0)
                .thenComparingDouble(c -> c.q.completable() > 0
                        ? -((c.age + c.service) / c.service) * c.q.completable()
                        : -c.service);
    }

    /**
     * Balancing for multi-tape work: among the candidates from {@code i} on that belong to the same tier as
     * {@code ranked.get(i)} (nothing completes yet, same priority, not starving), returns the index whose
     * mount on drive {@code drive} (free now) gives the smallest predicted makespan when the rest of the tier
     * follows longest-first on the drives as they free up. Plain longest-first leaves drives finishing at
     * uneven times at the end of a bulk recall; this looks one decision ahead to even them out.
     *
     * @param free     per drive: predicted time it can start a new mount (after its current dismount)
     * @param readEnds per drive: predicted end of the reads it holds now
     */
    public int balance(List<VolumeQueue> ranked, int i, double now, double[] free, double[] readEnds, int drive) {
        VolumeQueue first = ranked.get(i);
        if (first.completable() != 0 || now - first.oldestArrival() >= config.agingLimitSeconds()) return i;
        int prio = first.maxPriority();
        int end = i;
        while (end < ranked.size() && end - i < 400) {
            VolumeQueue q = ranked.get(end);
            if (q.completable() != 0 || q.maxPriority() != prio || now - q.oldestArrival() >= config.agingLimitSeconds()) break;
            end++;
        }
        int n = end - i;
        if (n <= 1) return i;
        double[] s = new double[n], u = new double[n];
        for (int k = 0; k < n; k++) {
            VolumeQueue q = ranked.get(i + k);
            u[k] = cost.dismountSeconds(q.bytes());
            s[k] = serviceSeconds(q) - u[k];
        }
        double base = 0;
        for (int k = 0; k < readEnds.length; k++) if (k != drive) base = Math.max(base, readEnds[k]);
        int best = 0;
        double bestMk = Double.POSITIVE_INFINITY;
        double[] f = new double[free.length];
        for (int c = 0; c < Math.min(n, 64); c++) {
            System.arraycopy(free, 0, f, 0, f.length);
            f[drive] = now + s[c] + u[c];
            double mk = Math.max(base, now + s[c]);
            for (int k = 0; k < n && mk < bestMk; k++) {
                if (k == c) continue;
                int m = 0;
                for (int d = 1; d < f.length; d++) if (f[d] < f[m]) m = d;
                double e = f[m] + s[k];
                mk = Math.max(mk, e);
                f[m] = e + u[k];
            }
            if (mk < bestMk - 1e-6) { bestMk = mk; best = c; }
        }
        return i + best;
    }

    boolean worthMounting(Cand c) {
        return c.q.bytes() >= config.minMountBytes() || c.q.fileCount() >= config.minMountFiles()
                || c.age >= config.minMountAgeSeconds();
    }
}
