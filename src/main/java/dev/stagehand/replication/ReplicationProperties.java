package dev.stagehand.replication;

import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * {@code stagehand.replication.*} (documented in config/application.yml).
 *
 * @param enabled       run the replication engine in this service (passes are leased: one instance at a time)
 * @param passInterval  how often the engine applies rules, follows transfers and dispatches pending replicas
 * @param stuckAfter    an incomplete dataset at a site with no replica done for this long is STUCK
 * @param maxAttempts   attempts per replica before it is failed for good (an operator may retry it)
 * @param retryBackoff  wait before the first retry of a replica; doubles per attempt, capped at 1 h
 * @param dispatchBatch pending replicas looked at per pass, at most
 * @param homeSite      the site the local disk copy and tape are at (for bottleneck links); empty: none
 * @param owner         owner of the recall requests replication submits for copies that come from tape
 * @param schedule      cron-scheduled rules (Quartz)
 * @param deletion      deleting the copies no rule wants any more
 * @param historyKeep   how long replica events (each replica's state changes and failed attempts, with their errors)
 *                      are kept; the engine's pass deletes older ones
 */
@ConfigurationProperties("stagehand.replication")
public record ReplicationProperties(@DefaultValue("true") boolean enabled, @DefaultValue("2s") Duration passInterval,
                                    @DefaultValue("1h") Duration stuckAfter, @DefaultValue("5") int maxAttempts,
                                    @DefaultValue("30s") Duration retryBackoff, @DefaultValue("2000") int dispatchBatch,
                                    @DefaultValue("") String homeSite, @DefaultValue("replication") String owner,
                                    @DefaultValue Schedule schedule, @DefaultValue Deletion deletion,
                                    @DefaultValue("30d") Duration historyKeep) {

    public ReplicationProperties {
        if (deletion.grace().isNegative())
            throw new IllegalArgumentException("stagehand.replication.deletion.grace must not be negative");
        if (deletion.batch() < 1) throw new IllegalArgumentException("stagehand.replication.deletion.batch must be at least 1");
        if (historyKeep.isNegative() || historyKeep.isZero())
            throw new IllegalArgumentException("stagehand.replication.history-keep must be positive");
    }

    /**
     * @param enabled delete, at their site, the done or verified copies no active rule has wanted for {@code grace}
     *                (a rule expired or deleted), unless the copy is the file's last one outside tape
     * @param grace   how long an unwanted copy is kept (a new rule wanting it again meanwhile keeps it)
     * @param batch   copies deleted per pass, at most
     */
    public record Deletion(@DefaultValue("true") boolean enabled, @DefaultValue("24h") Duration grace,
                           @DefaultValue("500") int batch) {}

    /**
     * @param timeZone   time zone of cron schedules ("02:00" is 02:00 there)
     * @param maxRunTime a scheduled run waits for the replicas it started to settle (done, verified or failed)
     *                   at most this long; meanwhile the rule's next run does not start
     * @param settlePoll how often a running scheduled run looks whether its replicas settled
     */
    public record Schedule(@DefaultValue("UTC") String timeZone, @DefaultValue("12h") Duration maxRunTime,
                           @DefaultValue("2s") Duration settlePoll) {

        public Schedule {
            // TimeZone.getTimeZone, which the triggers are built with, reads an unknown id as GMT without a word
            if (!"GMT".equals(timeZone) && java.util.TimeZone.getTimeZone(timeZone).getID().equals("GMT"))
                throw new IllegalArgumentException("stagehand.replication.schedule.time-zone: unknown time zone '" + timeZone + "'");
        }
    }
}
