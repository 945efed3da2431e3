package dev.stagehand.recall.scheduler;

import java.util.Map;

/**
 * Scheduler tuning, shared by production (from {@code stagehand.recall.*}) and simulation.
 *
 * @param policy             which decision policy runs
 * @param minMountBytes      a queue holding this many bytes is worth a mount (CTA: 500 GB)
 * @param minMountFiles      ... or this many files (CTA: 10,000)
 * @param minMountAgeSeconds ... or whose oldest request waited this long
 * @param agingLimitSeconds  a request older than this goes before everything else (no starvation)
 * @param idleDismountSeconds an idle drive with no work for its volume is dismounted after this long
 * @param maxBatchBytes      bytes handed to the drive per read list; the rest is re-planned with new arrivals
 * @param maxBatchFiles      files per read list
 * @param maxBatchSeconds    planned positioning and reading seconds per read list (tape-aware): what arrives for
 *                           a mounted volume joins the plan at the next list; an unchanged rest keeps its order
 * @param exchangesPerAccessor mounts under way at once per accessor (more would only queue at the robot)
 * @param orderingBudget     locate-cost evaluations allowed per run ordering (bounded, deterministic)
 * @param experimentDriveCaps most drives one experiment may hold at once (absent: no cap)
 * @param experimentShares   fair-share weights; an experiment below its share goes first (absent: equal)
 */
public record SchedulerConfig(
        Policy policy,
        long minMountBytes,
        int minMountFiles,
        double minMountAgeSeconds,
        double agingLimitSeconds,
        double idleDismountSeconds,
        long maxBatchBytes,
        int maxBatchFiles,
        double maxBatchSeconds,
        int exchangesPerAccessor,
        long orderingBudget,
        Map<String, Integer> experimentDriveCaps,
        Map<String, Double> experimentShares) {

    /** The decision policies. */
    public enum Policy {
        /** Tape-aware: mount policy, aging, shares, dataset-aware choice, run ordering beyond SLTF. */
        TAPE_AWARE,
        /** Baseline: biggest queue first, shortest-locate-first inside a tape. */
        GREEDY,
        /** Baseline: files handed to the library one at a time in arrival order (a plain HSM queue). */
        FIFO;

        /** The policy named {@code tape-aware}, {@code greedy} or {@code fifo} (any case). */
        public static Policy parse(String name) {
            return switch (name.toLowerCase(java.util.Locale.ROOT)) {
                case "tape-aware" -> TAPE_AWARE;
                case "greedy" -> GREEDY;
                case "fifo" -> FIFO;
                default -> throw new IllegalArgumentException("unknown policy '" + name + "'; choose one of tape-aware, greedy, fifo");
            };
        }
    }

    public SchedulerConfig {
        experimentDriveCaps = experimentDriveCaps == null ? Map.of() : Map.copyOf(experimentDriveCaps);
        experimentShares = experimentShares == null ? Map.of() : Map.copyOf(experimentShares);
        if (exchangesPerAccessor < 1) throw new IllegalArgumentException("exchangesPerAccessor must be >= 1");
        if (maxBatchFiles < 1 || maxBatchBytes < 1) throw new IllegalArgumentException("batch limits must be >= 1");
        if (!(maxBatchSeconds > 0)) throw new IllegalArgumentException("maxBatchSeconds must be > 0");
    }

    /** The defaults documented in config/application.yml. */
    public static SchedulerConfig defaults(Policy policy) {
        return new SchedulerConfig(policy, 500_000_000_000L, 10_000, 300, 4 * 3600, 300,
                2_000_000_000_000L, 20_000, 150, 4, 3_000_000, Map.of(), Map.of());
    }

    public SchedulerConfig withPolicy(Policy p) {
        return new SchedulerConfig(p, minMountBytes, minMountFiles, minMountAgeSeconds, agingLimitSeconds,
                idleDismountSeconds, maxBatchBytes, maxBatchFiles, maxBatchSeconds, exchangesPerAccessor, orderingBudget,
                experimentDriveCaps, experimentShares);
    }

    public SchedulerConfig withCaps(Map<String, Integer> caps, Map<String, Double> shares) {
        return new SchedulerConfig(policy, minMountBytes, minMountFiles, minMountAgeSeconds, agingLimitSeconds,
                idleDismountSeconds, maxBatchBytes, maxBatchFiles, maxBatchSeconds, exchangesPerAccessor, orderingBudget, caps, shares);
    }

    public SchedulerConfig withAgingLimit(double seconds) {
        return new SchedulerConfig(policy, minMountBytes, minMountFiles, minMountAgeSeconds, seconds,
                idleDismountSeconds, maxBatchBytes, maxBatchFiles, maxBatchSeconds, exchangesPerAccessor, orderingBudget,
                experimentDriveCaps, experimentShares);
    }

    public SchedulerConfig withMaxBatchSeconds(double seconds) {
        return new SchedulerConfig(policy, minMountBytes, minMountFiles, minMountAgeSeconds, agingLimitSeconds,
                idleDismountSeconds, maxBatchBytes, maxBatchFiles, seconds, exchangesPerAccessor, orderingBudget,
                experimentDriveCaps, experimentShares);
    }
}
