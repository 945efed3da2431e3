package dev.stagehand.replication;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.TimeZone;
import org.quartz.CronExpression;
import org.quartz.CronScheduleBuilder;
import org.quartz.CronTrigger;
import org.quartz.JobBuilder;
import org.quartz.JobDetail;
import org.quartz.JobKey;
import org.quartz.Scheduler;
import org.quartz.SchedulerException;
import org.quartz.Trigger;
import org.quartz.TriggerBuilder;
import org.quartz.TriggerKey;
import org.quartz.impl.matchers.GroupMatcher;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;

/**
 * Cron schedules of replication rules, kept in Quartz's clustered JDBC job store (tables qrtz_*, V15): one
 * durable job per rule ({@code rule-<id>} in group {@code replication}) running {@link ReplicationRunJob}.
 *
 * <p>Misfires: a cron trigger that could not fire on time (every instance down at 02:00, or the rule's
 * previous run still going, since runs never overlap) fires <em>once</em> as soon as possible and then
 * keeps its schedule ({@code MISFIRE_INSTRUCTION_FIRE_ONCE_NOW}, "fire and proceed"): one run replicates
 * every file added since the last, so several missed nights need one catch-up run, not one each.
 */
@Component
public class ReplicationSchedules {

    public static final String GROUP = "replication";

    /** A rule's schedule as Quartz holds it; {@code state} is Quartz's trigger state (NORMAL, PAUSED, BLOCKED, ...). */
    public record Schedule(long ruleId, String cron, String timeZone, String state, Instant nextFire, Instant previousFire,
                           Run lastRun) {}

    /** One run of a scheduled rule. */
    public record Run(long id, String instance, Instant scheduledAt, Instant startedAt, Instant finishedAt,
                      Integer filesAdded, String outcome) {}

    private final ObjectProvider<Scheduler> scheduler;
    private final JdbcTemplate jdbc;
    private final ReplicationProperties props;

    public ReplicationSchedules(ObjectProvider<Scheduler> scheduler, JdbcTemplate jdbc, ReplicationProperties props) {
        this.scheduler = scheduler;
        this.jdbc = jdbc;
        this.props = props;
    }

    static JobKey jobKey(long ruleId) {
        return JobKey.jobKey("rule-" + ruleId, GROUP);
    }

    static TriggerKey triggerKey(long ruleId) {
        return TriggerKey.triggerKey("rule-" + ruleId, GROUP);
    }

    static final int MAX_CRON_LENGTH = 120;

    /** Refuses a malformed Quartz cron expression (seconds minutes hours day-of-month month day-of-week [year]). */
    static void checkCron(String cron) {
        // Quartz keeps the expression in a VARCHAR(120) (qrtz_cron_triggers, V15): a longer valid one failed there, a 500
        if (cron.strip().length() > MAX_CRON_LENGTH)
            throw ReplicationRejected.invalid("schedule", "at most " + MAX_CRON_LENGTH + " characters, got " + cron.strip().length());
        CronExpression parsed;
        try {
            parsed = new CronExpression(cron.strip());
        } catch (java.text.ParseException | RuntimeException e) {
            throw ReplicationRejected.invalid("schedule", "not a Quartz cron expression (e.g. '0 0 2 * * ?' for 02:00 daily): "
                    + e.getMessage());
        }
        // well-formed but no such time ahead (30 February, a past year): Quartz refuses to schedule it
        if (parsed.getNextValidTimeAfter(new java.util.Date()) == null)
            throw ReplicationRejected.invalid("schedule", "'" + cron.strip() + "' never fires: no such date and time ahead");
    }

    private Scheduler quartz() {
        Scheduler s = scheduler.getIfAvailable();
        if (s == null) throw new IllegalStateException("no Quartz scheduler in this service");
        return s;
    }

    /** The job and cron trigger of a rule (replacing any earlier ones). */
    public void schedule(long ruleId, String cron) {
        JobDetail job = JobBuilder.newJob(ReplicationRunJob.class).withIdentity(jobKey(ruleId))
                .withDescription("replication rule " + ruleId).usingJobData(ReplicationRunJob.RULE, ruleId)
                .storeDurably().requestRecovery().build();
        CronTrigger trigger = trigger(triggerKey(ruleId), job.getKey(), cron, TimeZone.getTimeZone(props.schedule().timeZone()));
        try {
            quartz().scheduleJob(job, java.util.Set.of(trigger), true);
        } catch (SchedulerException e) {
            throw new IllegalStateException("cannot schedule rule " + ruleId + ": " + e.getMessage(), e);
        }
    }

    /** A rule's cron trigger: misfires fire once now, then the schedule goes on (see the class comment). */
    static CronTrigger trigger(TriggerKey key, JobKey job, String cron, TimeZone zone) {
        return TriggerBuilder.newTrigger().withIdentity(key).forJob(job)
                .withSchedule(CronScheduleBuilder.cronSchedule(cron).inTimeZone(zone).withMisfireHandlingInstructionFireAndProceed())
                .build();
    }

    public void unschedule(long ruleId) {
        Scheduler s = scheduler.getIfAvailable();
        if (s == null) return;
        try {
            remove(s, jobKey(ruleId));
        } catch (SchedulerException e) {
            throw new IllegalStateException("cannot unschedule rule " + ruleId + ": " + e.getMessage(), e);
        }
    }

    /**
     * Removes a rule's job with its triggers in one transaction under Quartz's trigger lock. Not
     * {@code deleteJob}: it lists the triggers unlocked and removes each in a transaction of its own before the
     * job, so a reader saw the schedule gone with the job still there (and a crash between left the job for
     * good), and it failed when a "run now" trigger completed between its listing and its removal.
     */
    static void remove(Scheduler s, JobKey job) throws SchedulerException {
        s.deleteJobs(List.of(job));
    }

    public List<Schedule> list() {
        try {
            List<Schedule> out = new ArrayList<>();
            for (TriggerKey k : quartz().getTriggerKeys(GroupMatcher.triggerGroupEquals(GROUP))) {
                long id = Long.parseLong(k.getName().substring("rule-".length()));
                get(id).ifPresent(out::add);
            }
            out.sort(java.util.Comparator.comparingLong(Schedule::ruleId));
            return out;
        } catch (SchedulerException e) {
            throw new IllegalStateException(e.getMessage(), e);
        }
    }

    public java.util.Optional<Schedule> get(long ruleId) {
        try {
            Trigger t = quartz().getTrigger(triggerKey(ruleId));
            if (!(t instanceof CronTrigger c)) return java.util.Optional.empty();
            String state = quartz().getTriggerState(t.getKey()).name();
            List<Run> runs = runs(ruleId, 1);
            return java.util.Optional.of(new Schedule(ruleId, c.getCronExpression(), c.getTimeZone().getID(), state,
                    instant(c.getNextFireTime()), instant(c.getPreviousFireTime()), runs.isEmpty() ? null : runs.getFirst()));
        } catch (SchedulerException e) {
            throw new IllegalStateException(e.getMessage(), e);
        }
    }

    /** The rule's newest runs first. */
    public List<Run> runs(long ruleId, int limit) {
        return jdbc.query("SELECT * FROM replication_run WHERE rule_id = ? ORDER BY id DESC LIMIT ?",
                (rs, i) -> new Run(rs.getLong("id"), rs.getString("instance"), ts(rs.getTimestamp("scheduled_at")),
                        ts(rs.getTimestamp("started_at")), ts(rs.getTimestamp("finished_at")),
                        (Integer) rs.getObject("files_added"), rs.getString("outcome")), ruleId, limit);
    }

    /**
     * Pauses the rule's schedule. The rule's row says so first: a run starting checks it under a share lock,
     * so once this returns no firing of the schedule runs, whatever a node of the Quartz cluster had acquired.
     */
    public void pause(long ruleId) {
        act(ruleId, s -> {
            jdbc.update("UPDATE replication_rule SET schedule_paused = true WHERE id = ?", ruleId);
            s.pauseJob(jobKey(ruleId));
        });
    }

    public void resume(long ruleId) {
        act(ruleId, s -> {
            jdbc.update("UPDATE replication_rule SET schedule_paused = false WHERE id = ?", ruleId);
            s.resumeJob(jobKey(ruleId));
        });
    }

    /** Runs the rule now (on whichever instance picks it up), besides its schedule; never alongside a running one. */
    public void triggerNow(long ruleId) {
        act(ruleId, s -> s.triggerJob(jobKey(ruleId)));
    }

    private interface Action {
        void run(Scheduler s) throws SchedulerException;
    }

    private void act(long ruleId, Action a) {
        try {
            Scheduler s = quartz();
            if (!s.checkExists(jobKey(ruleId))) throw ReplicationRejected.notFound("rule", "rule " + ruleId + " has no schedule");
            a.run(s);
        } catch (SchedulerException e) {
            throw new IllegalStateException(e.getMessage(), e);
        }
    }

    private static Instant instant(java.util.Date d) {
        return d == null ? null : d.toInstant();
    }

    private static Instant ts(java.sql.Timestamp t) {
        return t == null ? null : t.toInstant();
    }
}
