package dev.stagehand.recall.scheduler;

import dev.stagehand.recall.scheduler.RecallEngine.DState;
import dev.stagehand.recall.scheduler.RecallEngine.Drive;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * When a {@link RecallEngine}'s drives free up and its queues are done, from the scheduler's own model of
 * them: for balancing mounts, the long-work share and requests' ETAs. Part of the engine: called only under
 * its monitor, no lock and no state of its own; it reads the engine's drives and queues.
 */
final class DriveForecast {

    private final Map<String, Drive> drives;
    private final QueueModel model;
    private final MountPlanner mountPlanner;
    private final CostModel cost;

    DriveForecast(Map<String, Drive> drives, QueueModel model, MountPlanner mountPlanner, CostModel cost) {
        this.drives = drives;
        this.model = model;
        this.mountPlanner = mountPlanner;
        this.cost = cost;
    }

    /** Per drive: when it can start a new mount, and when the reads it holds end (the scheduler's own model). */
    void predict(List<Drive> dl, double now, double[] free, double[] readEnds) {
        for (int k = 0; k < dl.size(); k++) {
            Drive d = dl.get(k);
            double readEnd = now, until;
            switch (d.state) {
                case FAILED -> { free[k] = Double.POSITIVE_INFINITY; readEnds[k] = now; continue; }
                case EMPTY -> until = now;
                case UNLOADING -> until = Math.max(now, d.busyUntil);
                default -> {
                    readEnd = Math.max(now, d.busyUntil);
                    long bytes = d.moved;
                    VolumeQueue q = model.queue(d.volume);
                    if (q != null && !q.isEmpty()) {
                        readEnd += d.plan != null && d.planVersion == q.version ? d.planSeconds
                                : mountPlanner.locateSeconds(q) + cost.readSeconds(q.bytes());
                        bytes += q.bytes();
                    }
                    until = readEnd + cost.dismountSeconds(bytes);
                }
            }
            free[k] = until;
            readEnds[k] = readEnd;
        }
    }

    /**
     * ETAs from the scheduler's own model: drives finish what they hold, then take the ranked queues in
     * order (list scheduling on the earliest free drive); a request's ETA is when its last volume is done.
     * Sets each open request's {@code eta} (NaN, not known, while it is still being taken in); the engine records them.
     */
    void etas(double now, List<VolumeQueue> ranked, Set<RequestWork> open) {
        Map<String, Double> finish = new HashMap<>();
        double[] free = new double[drives.size()];
        int i = 0;
        for (Drive d : drives.values()) {
            double until = Math.max(now, d.busyUntil);
            if (d.state == DState.FAILED) until = Double.POSITIVE_INFINITY;
            if (d.volume != null && d.state != DState.UNLOADING) {
                VolumeQueue q = model.queue(d.volume);
                if (q != null && !q.isEmpty()) {
                    until += mountPlanner.serviceSeconds(q) - cost.mountSeconds() - cost.dismountSeconds(q.bytes());
                }
                finish.put(d.volume, until);
            }
            free[i++] = until;
        }
        for (VolumeQueue q : ranked) {
            int best = 0;
            for (int k = 1; k < free.length; k++) if (free[k] < free[best]) best = k;
            double done = free[best] + mountPlanner.serviceSeconds(q) - cost.dismountSeconds(q.bytes());
            finish.put(q.label, done);
            free[best] = done + cost.dismountSeconds(q.bytes());
        }
        for (RequestWork r : open) {
            // still being taken in: its volumes so far are not the whole of it, and an ETA from them read too early
            // (the rest's volumes are what the slices have not read yet): none until its last slice has come
            if (r.intakePending) {
                r.eta = Double.NaN;
                continue;
            }
            double eta = now;
            for (String v : r.queuedPerVolume.keySet()) eta = Math.max(eta, finish.getOrDefault(v, now));
            for (String v : r.claimedPerVolume.keySet()) eta = Math.max(eta, finish.getOrDefault(v, now));
            r.eta = eta;
        }
    }
}
