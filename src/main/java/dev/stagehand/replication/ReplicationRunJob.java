package dev.stagehand.replication;

import org.quartz.DisallowConcurrentExecution;
import org.quartz.Job;
import org.quartz.JobExecutionContext;
import org.quartz.JobExecutionException;
import org.quartz.Scheduler;
import org.quartz.SchedulerException;
import org.quartz.TriggerKey;
import org.springframework.beans.factory.annotation.Autowired;

/**
 * One scheduled run of a rule: adds the dataset's files not yet covered, dispatches them, and waits until
 * they settle (see {@link ReplicationEngine#runScheduled}). {@code @DisallowConcurrentExecution}: Quartz
 * never starts a rule's run while its previous run is still going, on any instance of the cluster (the
 * clustered store holds the job BLOCKED meanwhile; a firing that is late for it misfires, see
 * {@link ReplicationSchedules}). The job requests recovery: a firing whose node was lost is given to another
 * node, which finishes the lost run's row and runs the firing only if it had not started (at most once).
 * Made by Spring's job factory, which injects the engine.
 */
@DisallowConcurrentExecution
public class ReplicationRunJob implements Job {

    static final String RULE = "rule";

    private ReplicationEngine engine;

    @Autowired
    public void setEngine(ReplicationEngine engine) {
        this.engine = engine;
    }

    @Override
    public void execute(JobExecutionContext context) throws JobExecutionException {
        long rule = context.getMergedJobDataMap().getLong(RULE);
        String instance;
        try {
            instance = context.getScheduler().getSchedulerInstanceId();
        } catch (SchedulerException e) {
            instance = "unknown";
        }
        // A firing whose node was lost (its Quartz instance stopped checking in: a crash, or a stall of ~15 s)
        // comes again under a one-off "recover_..." trigger: it is judged as the firing it recovers, by that
        // trigger's key and scheduled time (else it ran as an operator's run: paused or not, and again)
        boolean recovering = context.isRecovering();
        TriggerKey fired = recovering ? context.getRecoveringTriggerKey() : context.getTrigger().getKey();
        String original = recovering
                ? context.getMergedJobDataMap().getString(Scheduler.FAILED_JOB_ORIGINAL_TRIGGER_SCHEDULED_FIRETIME_IN_MILLISECONDS) : null;
        java.time.Instant scheduled = original != null ? java.time.Instant.ofEpochMilli(Long.parseLong(original))
                : context.getScheduledFireTime() == null ? null : context.getScheduledFireTime().toInstant();
        // the rule's own cron trigger, or an operator's "run now" (a one-off trigger of the same job)
        boolean bySchedule = fired.equals(ReplicationSchedules.triggerKey(rule));
        if (!engine.runScheduled(rule, scheduled, instance, bySchedule, recovering)) {
            // the rule is gone, or expired: its job goes too
            try {
                ReplicationSchedules.remove(context.getScheduler(), context.getJobDetail().getKey());
            } catch (SchedulerException e) {
                throw new JobExecutionException(e);
            }
        }
    }
}
