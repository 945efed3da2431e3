package dev.stagehand.recall.scheduler;

import dev.stagehand.recall.scheduler.RecallEngine.Drive;
import dev.stagehand.recall.scheduler.SchedulerConfig.Policy;
import java.util.ArrayList;
import java.util.List;

/**
 * Which files go into a drive's next read list: the volume's queue in planned order (the order the drive kept
 * from its last list while its queue is unchanged), cut at the list's file, byte and time limits; the rest of
 * the order is kept on the drive for the next list. Part of {@link RecallEngine}: called only under the
 * engine's monitor, no lock of its own; the plan it keeps is the drive's.
 */
final class ReadListPlanner {

    private final RecallEngine engine;
    private final QueueModel model;
    private final SchedulerConfig config;
    private final CostModel cost;
    private final RunPlanner runPlanner;
    private final ShortRequestsFirst shortRequestsFirst;

    ReadListPlanner(RecallEngine engine, QueueModel model, SchedulerConfig config, CostModel cost,
                    RunPlanner runPlanner, ShortRequestsFirst shortRequestsFirst) {
        this.engine = engine;
        this.model = model;
        this.config = config;
        this.cost = cost;
        this.runPlanner = runPlanner;
        this.shortRequestsFirst = shortRequestsFirst;
    }

    /** The files chosen for a read list, and where they leave the planned order (for {@link #keepRest}). */
    static final class Choice {
        final List<FileWork> files = new ArrayList<>();
        private final boolean fifo;
        private final List<FileWork> ordered;
        private final int from;
        /** Seconds of ordered[from..] when known, else NaN. */
        private final double planned;
        private double seconds;
        private long at;

        private Choice(boolean fifo, List<FileWork> ordered, int from, double planned) {
            this.fifo = fifo;
            this.ordered = ordered;
            this.from = from;
            this.planned = planned;
        }
    }

    /**
     * The next read list's files on the drive's volume ({@code only}, for FIFO, in that order), at most
     * {@code room} bytes (but at least one file). The drive's kept plan is used up.
     */
    Choice choose(Drive d, List<FileWork> only, long room) {
        String volume = d.volume;
        Choice c;
        if (only != null) {
            c = new Choice(true, only, 0, Double.NaN);
        } else {
            VolumeQueue q = model.queue(volume);
            if (d.plan != null && d.planVersion == q.version) {
                // nothing arrived or left since it was planned: go on with the same order
                c = new Choice(false, d.plan, d.planFrom, d.planSeconds);
            } else {
                List<FileWork> queued = new ArrayList<>(q.files.values());
                c = new Choice(false, config.policy() == Policy.GREEDY
                        ? runPlanner.orderSltf(volume, queued, d.head)
                        : shortRequestsFirst.order(volume, runPlanner.order(volume, queued, d.head), d.head, engine.now(),
                                engine::waitingForMounts), 0, Double.NaN);
            }
        }
        d.plan = null;
        long limit = Math.min(config.maxBatchBytes(), room);
        long bytes = 0;
        double seconds = 0, maxSeconds = only == null && config.policy() == Policy.TAPE_AWARE
                ? config.maxBatchSeconds() : Double.POSITIVE_INFINITY;
        long at = d.head;
        List<FileWork> batch = c.files;
        for (int i = c.from; i < c.ordered.size(); i++) {
            FileWork f = c.ordered.get(i);
            if (!batch.isEmpty() && (batch.size() >= config.maxBatchFiles() || bytes + f.sizeBytes > limit
                    || seconds >= maxSeconds)) break;
            batch.add(f);
            bytes += f.sizeBytes;
            long o = f.offsetOn(volume);
            seconds += runPlanner.hopSeconds(at, o) + cost.readSeconds(f.sizeBytes);
            at = o + f.sizeBytes;
        }
        c.seconds = seconds;
        c.at = at;
        return c;
    }

    /**
     * Once the chosen files are claimed: the rest keeps its planned order for the drive's next read list unless
     * the queue changes meanwhile (the plan is stamped with the queue's version after the claims).
     */
    void keepRest(Drive d, Choice c) {
        String volume = d.volume;
        int next = c.from + c.files.size();
        if (c.fifo || next >= c.ordered.size()) return;
        double planned = c.planned;
        if (Double.isNaN(planned)) {
            planned = c.seconds;
            long at = c.at;
            for (int i = next; i < c.ordered.size(); i++) {
                FileWork f = c.ordered.get(i);
                long o = f.offsetOn(volume);
                planned += runPlanner.hopSeconds(at, o) + cost.readSeconds(f.sizeBytes);
                at = o + f.sizeBytes;
            }
        }
        d.plan = c.ordered;
        d.planFrom = next;
        d.planSeconds = Math.max(0, planned - c.seconds);
        d.planVersion = model.queue(volume).version;
    }
}
