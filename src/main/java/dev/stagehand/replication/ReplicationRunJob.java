package dev.stagehand.replication;

import org.quartz.DisallowConcurrentExecution;
import org.quartz.Job;
import org.quartz.JobExecutionContext;
import org.quartz.JobExecutionException;
import org.quartz.SchedulerException;
import org.springframework.beans.factory.annotation.Autowired;

/**
 * One scheduled run of a rule: adds the dataset's files not yet covered, dispatches them, and waits until
 * they settle (see {@link ReplicationEngine#runScheduled}). {@code @DisallowConcurrentExecution}: Quartz
 * never starts a rule's run while its previous run is still going, on any instance of the cluster (the
 * clustered store holds the job BLOCKED meanwhile; a firing that is late for it misfires, see
 * {@link ReplicationSchedules}). Made by Spring's job factory, which injects the engine.
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
        java.time.Instant scheduled = context.getScheduledFireTime() == null ? null : context.getScheduledFireTime().toInstant();
        // the rule's own cron trigger, or an operator's "run now" (a one-off trigger of the same job)
        boolean bySchedule = context.getTrigger().getKey().equals(ReplicationSchedules.triggerKey(rule));
        if (!engine.runScheduled(rule, scheduled, instance, bySchedule)) {
            // the rule is gone: its job goes too
            try {
                context.getScheduler().deleteJob(context.getJobDetail().getKey());
            } catch (SchedulerException e) {
                throw new JobExecutionException(e);
            }
        }
    }
}
