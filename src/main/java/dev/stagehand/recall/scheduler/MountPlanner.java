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

    public MountPlanner(SchedulerConfig config, CostModel cost) {
        this.config = config;
        this.cost = cost;
    }

    /** Estimated drive seconds to serve {@code q} from a mount to its dismount. */
    public double serviceSeconds(VolumeQueue q) {
        int n = q.fileCount();
        // locates: a few seconds per run plus at most two passes along the tape once well ordered
        double locate = Math.min(n * 46.0, n * 12.0 + 120.0);
        return cost.mountSeconds() + locate + cost.readSeconds(q.bytes()) + cost.dismountSeconds(q.bytes());
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

    boolean worthMounting(Cand c) {
        return c.q.bytes() >= config.minMountBytes() || c.q.fileCount() >= config.minMountFiles()
                || c.age >= config.minMountAgeSeconds();
    }
}
