package dev.stagehand.recall.scheduler;

import dev.stagehand.platform.EventClock;
import dev.stagehand.recall.scheduler.RecallEngine.DState;
import dev.stagehand.recall.scheduler.RecallEngine.Drive;
import dev.stagehand.recall.scheduler.SchedulerConfig.Policy;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Which drives a {@link RecallEngine} keeps free or empties: the last free drive held for a queue worth a
 * mount, half the drives kept empty or emptying for requests to come, and the idle drive to empty for a mount.
 * Part of the engine: it is called only from the engine's pass, under the engine's monitor, and holds no lock
 * of its own; its timers take the engine's monitor. Its only state is those two timers.
 */
final class DriveReadiness {

    /** Share of the drives kept empty or emptying when idle drives could be emptied. */
    static final double READY_SHARE = 0.5;

    /** A drive holding a popular volume idle at least this long may be emptied early to keep drives ready. */
    static final double READY_MIN_IDLE_S = 60;

    private final RecallEngine engine;
    private final Map<String, Drive> drives;
    private final EventClock clock;
    private final SchedulerConfig config;
    private final MountPlanner mountPlanner;
    private final VolumeDemand demand;
    private EventClock.Scheduled holdTimer;
    private EventClock.Scheduled readyTimer;

    DriveReadiness(RecallEngine engine, Map<String, Drive> drives, EventClock clock, SchedulerConfig config,
                   MountPlanner mountPlanner, VolumeDemand demand) {
        this.engine = engine;
        this.drives = drives;
        this.clock = clock;
        this.config = config;
        this.mountPlanner = mountPlanner;
        this.demand = demand;
    }

    /**
     * CTA's mount policy on the last free drive: a piece of a multi-tape request too small to be worth a
     * mount (and not yet old enough) does not take the last drive, which stays free for a worthy queue
     * arriving meanwhile (a bulk recall's next, bigger tapes). A pass runs again once it is old enough.
     */
    boolean holdLastDrive(VolumeQueue q, double now, Set<Drive> victims, List<VolumeQueue> cands, int i) {
        if (config.policy() != Policy.TAPE_AWARE || engine.usableDrives() < 4 || q.completable() != 0
                || mountPlanner.worthMounting(q, now)) return false;
        // Balancing may put q ahead of worthy queues (a longer tape of the same bulk recall, arrived later):
        // holding q would not keep the drive free, the next worthy one would take it instead of q.
        for (int j = i + 1; j < cands.size(); j++) if (mountPlanner.worthMounting(cands.get(j), now)) return false;
        int free = 0;
        for (Drive d : drives.values()) {
            if (d.state == DState.EMPTY || (d.state == DState.IDLE && !engine.hasWork(d.volume) && !victims.contains(d))) free++;
        }
        if (free > 1) return false;
        double wait = q.oldestArrival() + config.minMountAgeSeconds() - now;
        if (holdTimer == null) {
            holdTimer = clock.schedule(Duration.ofMillis((long) Math.ceil(Math.max(0, wait) * 1000) + 1), () -> {
                synchronized (engine) {
                    holdTimer = null;
                }
                engine.requestPass();
            });
        }
        return true;
    }

    /**
     * Keeps half the drives empty or emptying while others sit idle with nothing queued: a request for an
     * unmounted volume then finds a drive ready instead of waiting behind a rewind and unload (85–195 s,
     * several times a mount), and bursts of requests for different volumes do not queue behind unloads
     * either. The drive whose volume is least in demand goes first (then the one idle longest); a volume
     * asked for by one request lately may go as soon as its drive is idle, a popular one only after
     * {@link #READY_MIN_IDLE_S} — its next request most likely finds it still mounted, and a volume
     * being unloaded cannot be mounted again until the unload ends.
     */
    void keepDrivesReady(Set<Drive> taken) {
        int ready = 0;
        for (Drive d : drives.values()) if (RecallEngine.usable(d) && (d.state == DState.EMPTY || d.state == DState.UNLOADING)) ready++;
        // with fewer than four drives an empty one is too large a share of the capacity to hold back. Only the
        // drives this engine can use: not failed, disabled, going down or another instance's (a shared library)
        int usable = engine.usableDrives();
        int want = usable < 4 ? 0 : (int) (usable * READY_SHARE);
        double now = engine.now();
        while (ready < want) {
            double soonest = Double.POSITIVE_INFINITY;
            Drive victim = null;
            for (Drive d : drives.values()) {
                if (d.state != DState.IDLE || engine.hasWork(d.volume) || taken.contains(d)) continue;
                double wait = d.busyUntil + (demand.popular(d.volume, now) ? READY_MIN_IDLE_S : 0) - now;
                if (wait > 0) soonest = Math.min(soonest, wait);
                else if (colder(d, victim, now)) victim = d;
            }
            if (victim == null) {
                if (soonest < Double.POSITIVE_INFINITY && readyTimer == null) { // look again once one may go
                    readyTimer = clock.schedule(Duration.ofMillis((long) Math.ceil(soonest * 1000) + 1), () -> {
                        synchronized (engine) {
                            readyTimer = null;
                        }
                        engine.requestPass();
                    });
                }
                return;
            }
            taken.add(victim);
            engine.dismount(victim);
            ready++;
        }
    }

    /** {@code d}'s volume is less in demand than {@code than}'s (or as much, and idle longer); any drive beats none. */
    private boolean colder(Drive d, Drive than, double now) {
        if (than == null) return true;
        double a = demand.of(d.volume, now), b = demand.of(than.volume, now);
        if (Math.abs(a - b) > 1e-9) return a < b;
        return d.busyUntil < than.busyUntil;
    }

    /** An idle drive whose volume has nothing queued, idle the longest: it makes room for other work. */
    Drive idleVictim(Set<Drive> taken) {
        Drive best = null;
        for (Drive d : drives.values()) {
            if (d.state != DState.IDLE || engine.hasWork(d.volume) || taken.contains(d)) continue;
            if (best == null || d.busyUntil < best.busyUntil) best = d;
        }
        return best;
    }
}
