package dev.stagehand.recall.scheduler;

import dev.stagehand.recall.scheduler.RecallEngine.DState;
import dev.stagehand.recall.scheduler.RecallEngine.Drive;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The long-work share of a {@link RecallEngine}'s mount pass: which queue takes an empty drive when long (bulk)
 * work of lower priority would otherwise wait behind short urgent queues, or run past the aging limit.
 * Part of the engine: it is called only from the engine's pass, under the engine's monitor, and holds no
 * lock of its own; the drives and queues it reads are the engine's.
 */
final class LongWorkShare {

    /** Share of the drives for long (bulk) work of lower priority while short urgent queues keep coming. */
    static final double LONG_WORK_SHARE = 0.25;

    /** Share of the aging limit by which long work is planned to end (the plan is an estimate: keep a margin). */
    static final double DUE_BY = 0.925;

    /** This pass's long queues, oldest request first (built on first use; null: not yet). */
    private List<VolumeQueue> longByArrival;

    private final DriveForecast forecast;
    private final Map<String, Drive> drives;
    private final QueueModel model;
    private final MountPlanner mountPlanner;
    private final CostModel cost;
    private final SchedulerConfig config;

    LongWorkShare(DriveForecast forecast, Map<String, Drive> drives, QueueModel model, MountPlanner mountPlanner,
                  CostModel cost, SchedulerConfig config) {
        this.forecast = forecast;
        this.drives = drives;
        this.model = model;
        this.mountPlanner = mountPlanner;
        this.cost = cost;
        this.config = config;
    }

    /** A pass begins: the long queues by arrival are built again on first use (the queues have changed). */
    void newPass() {
        longByArrival = null;
    }

    /**
     * Strict priority lets a steady stream of small urgent requests hold every drive with short, costly
     * mounts while bulk campaigns wait for the aging limit; the mount-worthiness gate, the other way round,
     * lets worthy bulk take every drive while young urgent queues wait. So while both kinds are queued,
     * long work of a lower priority gets a quarter of the drives: when the head of the ranking is short work
     * and fewer than a quarter hold long work, the best-ranked such long queue takes this drive; when the head
     * is long work, a quarter already hold long work and a queue of higher priority waits, that one takes it.
     * Before the share, a long queue due for the aging limit ({@link #longWorkDue}) takes the drive.
     * Returns the index of the queue to mount (or {@code i}). Starving queues keep their place; within
     * one priority the ranking and the balancing decide.
     */
    int reserveForLongWork(List<VolumeQueue> cands, int i, double now, Set<String> busy) {
        VolumeQueue head = cands.get(i);
        if (mountPlanner.starving(head, now)) return i;
        int holding = 0, usable = 0;
        for (Drive d : drives.values()) {
            if (!RecallEngine.usable(d)) continue; // failed, disabled, going down or another instance's
            usable++;
            if (d.longWork && d.volume != null && d.state != DState.UNLOADING) holding++;
        }
        boolean longHead = mountPlanner.longWork(head);
        if (holding < usable) {
            int due = longWorkDue(cands, i, now, busy);
            if (due >= 0) return due;
        }
        boolean underShare = holding < Math.max(1, (int) Math.round(usable * LONG_WORK_SHARE));
        if (longHead == underShare) return i;
        for (int j = i + 1; j < cands.size() && j - i < 256; j++) {
            VolumeQueue q = cands.get(j);
            if (longHead ? q.maxPriority() > head.maxPriority() && !mountPlanner.longWork(q)
                         : q.maxPriority() < head.maxPriority() && mountPlanner.longWork(q)) return j;
        }
        return i;
    }

    /**
     * The index in {@code cands} of a long queue to mount now instead of {@code cands.get(from)}, the ranking's
     * choice, or -1. One is due when, the ranking's choice taking the drive free first and then long queues
     * (of its priority or lower) taking each drive as it frees, oldest request first, one of them would end
     * after {@link #DUE_BY} of the aging limit; then the long queue with the oldest request that the ranking
     * holds after the head goes now (drive caps leave some out).
     * A quarter of the drives for long work is not always enough: at 4 drives two campaigns of ten tape-fulls
     * need about 1.7 drives, and started only once aging they ended an hour past the limit (multi-experiment
     * seed 229). Acting this late, rather than giving long work from its arrival the drives it needs on average,
     * keeps short requests' latency: that way raised the mean latency of seed 229's 261 short requests by 57-74 %.
     */
    private int longWorkDue(List<VolumeQueue> cands, int from, double now, Set<String> busy) {
        VolumeQueue head = cands.get(from);
        if (longByArrival == null) {
            longByArrival = new ArrayList<>();
            for (VolumeQueue q : model.queues()) if (!q.isEmpty() && mountPlanner.longWork(q)) longByArrival.add(q);
            // ties (the tapes of one recall): longest first, as the ranking orders them
            longByArrival.sort(Comparator.comparingDouble(VolumeQueue::oldestArrival)
                    .thenComparing(Comparator.comparingDouble(mountPlanner::serviceSeconds).reversed()));
        }
        List<VolumeQueue> order = new ArrayList<>();
        order.add(head);
        for (VolumeQueue q : longByArrival) {
            if (q == head) {
                if (order.size() == 1) return -1; // the ranking's choice is already the oldest long queue
                continue;
            }
            if (!busy.contains(q.label) && q.maxPriority() <= head.maxPriority()) order.add(q);
        }
        if (order.size() == 1) return -1;
        List<Drive> dl = new ArrayList<>(drives.values());
        double[] free = new double[dl.size()], readEnds = new double[dl.size()];
        forecast.predict(dl, now, free, readEnds);
        for (VolumeQueue q : order) {
            int first = 0;
            for (int d = 1; d < free.length; d++) if (free[d] < free[first]) first = d;
            if (Double.isInfinite(free[first])) return -1;
            double service = mountPlanner.serviceSeconds(q);
            if (mountPlanner.longWork(q) && free[first] + service - cost.dismountSeconds(q.bytes())
                    > q.oldestArrival() + config.agingLimitSeconds() * DUE_BY) {
                for (VolumeQueue o : order.subList(1, order.size())) { // oldest first, among the ranked ones left
                    int j = cands.indexOf(o);
                    if (j > from) return j;
                }
                return -1;
            }
            free[first] += service;
        }
        return -1;
    }
}
