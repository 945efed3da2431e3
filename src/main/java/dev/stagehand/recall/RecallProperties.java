package dev.stagehand.recall;

import java.time.Duration;
import java.util.Map;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * {@code stagehand.recall.*}: the recall scheduler in the service. Documented in config/application.yml.
 *
 * @param enabled               run the scheduler in this instance
 * @param policy                tape-aware (default), greedy or fifo
 * @param cacheBatchBytes       a volume is mounted only when this much disk cache space (or its whole queue, if
 *                              less) can be reserved: staging waits for space instead of filling the cache
 * @param pollInterval          how often new requests are taken from the database (and staged files handed off);
 *                              submissions, verified files and ended transfers in this instance also wake it at once
 * @param lease                 a claim lapses unless renewed within this (another instance then takes over)
 * @param instanceId            names this instance's claims; empty: host name and process id
 * @param minMountBytes         CTA-like mount policy: a queue with this many bytes is worth a mount
 * @param minMountFiles         ... or this many files
 * @param minMountAge           ... or whose oldest request waited this long
 * @param agingLimit            requests older than this go first (no starvation)
 * @param idleDismount          dismount a drive idle this long with nothing queued for its tape
 * @param maxBatchBytes         bytes per read list (the rest is re-planned with new arrivals)
 * @param maxBatchFiles         files per read list
 * @param maxBatchTime          planned drive time (positioning and reading) per read list: requests arriving
 *                              for a mounted volume join the plan at the next list instead of a later pass
 * @param exchangesPerAccessor  mounts under way at once per robot accessor
 * @param experimentDriveCaps   most drives per experiment, e.g. {atlas: 4}
 * @param experimentShares      fair-share weights per experiment, e.g. {atlas: 3, cms: 1}
 */
@ConfigurationProperties("stagehand.recall")
public record RecallProperties(
        @DefaultValue("true") boolean enabled,
        @DefaultValue("tape-aware") String policy,
        @DefaultValue("20000000000") long cacheBatchBytes,
        @DefaultValue("2s") Duration pollInterval,
        @DefaultValue("10m") Duration lease,
        @DefaultValue("") String instanceId,
        @DefaultValue("500000000000") long minMountBytes,
        @DefaultValue("10000") int minMountFiles,
        @DefaultValue("5m") Duration minMountAge,
        @DefaultValue("4h") Duration agingLimit,
        @DefaultValue("5m") Duration idleDismount,
        @DefaultValue("2000000000000") long maxBatchBytes,
        @DefaultValue("20000") int maxBatchFiles,
        @DefaultValue("4") int exchangesPerAccessor,
        Map<String, Integer> experimentDriveCaps,
        Map<String, Double> experimentShares,
        @DefaultValue("150s") Duration maxBatchTime) {

    @org.springframework.boot.context.properties.bind.ConstructorBinding
    public RecallProperties {
    }

    /** The scheduler's settings these properties give. */
    public dev.stagehand.recall.scheduler.SchedulerConfig schedulerConfig() {
        dev.stagehand.recall.scheduler.SchedulerConfig.Policy p;
        try {
            p = dev.stagehand.recall.scheduler.SchedulerConfig.Policy.parse(policy);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("stagehand.recall.policy: " + e.getMessage(), e);
        }
        return new dev.stagehand.recall.scheduler.SchedulerConfig(p, minMountBytes, minMountFiles, seconds(minMountAge),
                seconds(agingLimit), seconds(idleDismount), maxBatchBytes, maxBatchFiles, seconds(maxBatchTime),
                exchangesPerAccessor, 3_000_000, experimentDriveCaps, experimentShares);
    }

    private static double seconds(Duration d) {
        return d.toMillis() / 1000.0;
    }

    /** Without {@code maxBatchTime}: its default, 150 s. */
    public RecallProperties(boolean enabled, String policy, long cacheBatchBytes, Duration pollInterval, Duration lease,
                            String instanceId, long minMountBytes, int minMountFiles, Duration minMountAge,
                            Duration agingLimit, Duration idleDismount, long maxBatchBytes, int maxBatchFiles,
                            int exchangesPerAccessor, Map<String, Integer> experimentDriveCaps,
                            Map<String, Double> experimentShares) {
        this(enabled, policy, cacheBatchBytes, pollInterval, lease, instanceId, minMountBytes, minMountFiles, minMountAge,
                agingLimit, idleDismount, maxBatchBytes, maxBatchFiles, exchangesPerAccessor, experimentDriveCaps,
                experimentShares, Duration.ofSeconds(150));
    }
}
