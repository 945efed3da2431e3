package dev.stagehand.recall.scheduler;

import dev.stagehand.platform.Durable;
import dev.stagehand.platform.EventClock;
import dev.stagehand.recall.scheduler.SchedulerConfig.Policy;
import dev.stagehand.tape.DriveState;
import dev.stagehand.tape.DriveStatus;
import dev.stagehand.tape.ReadBatch;
import dev.stagehand.tape.ReadResult;
import dev.stagehand.tape.SegmentRead;
import dev.stagehand.tape.TapeFailure;
import dev.stagehand.tape.TapeLibrary;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletionException;

/**
 * The event-driven recall engine: the one scheduler production and simulation both run. It keeps the
 * {@link QueueModel}, asks the pure deciders ({@link MountPlanner}, {@link RunPlanner}) what to do, and
 * talks to a {@link TapeLibrary} on an {@link EventClock}; durable effects go through a {@link QueueStore}.
 * Library callbacks may arrive on other threads in production, so the public methods are synchronized;
 * scheduling passes are coalesced and run as clock tasks.
 */
public final class RecallEngine {

    enum DState { EMPTY, MOUNTING, IDLE, READING, UNLOADING, FAILED }

    static final class Drive {
        final String name;
        DState state = DState.EMPTY;
        String volume;
        String experiment;
        /** The mounted volume's queue was long work (bulk) when mounted: see {@link LongWorkShare#reserveForLongWork}. */
        boolean longWork;
        long head;
        long moved;
        double busyUntil;
        boolean failed;
        /**
         * Out of use because another instance holds it or the volume in it (a shared library): taken back once the
         * library reports it free, or the volume's lease is ours ({@link #libraryDrives}). Not a broken drive.
         */
        boolean elsewhere;
        /** An operator took it down while it held a volume: no new list, unloaded once idle, then out of use. */
        boolean draining;
        EventClock.Scheduled idleTimer;
        /** The planned read order of the mounted volume (its rest from {@link #planFrom}), valid while its queue is unchanged. */
        List<FileWork> plan;
        int planFrom;
        int planVersion;
        /** Positioning and reading seconds of the plan's rest from the end of the current read list. */
        double planSeconds;
        /** The read list under way (null when none). */
        ReadList reading;

        Drive(String name) { this.name = name; }
    }

    private static final double ETA_INTERVAL_S = 60;

    private final TapeLibrary library;
    private final EventClock clock;
    private final CostModel cost;
    private final SchedulerConfig config;
    private final QueueStore store;
    private final Staging staging;
    /** Cache space counted for volumes being mounted whose read list has not reserved it yet. */
    private final Map<String, Long> promised = new HashMap<>();
    private final EngineListener listener;
    private final QueueModel model = new QueueModel();
    private final MountPlanner mountPlanner;
    private final RunPlanner runPlanner;
    private final ShortRequestsFirst shortRequestsFirst;
    private final ReadListPlanner readListPlanner;
    private final Map<String, Drive> drives = new LinkedHashMap<>();
    private final int accessors;
    private final Instant epoch;
    private final Set<RequestWork> open = new LinkedHashSet<>();
    private final VolumeDemand demand = new VolumeDemand();
    private final DriveReadiness readiness;
    private final LongWorkShare longWorkShare;
    private final DriveForecast forecast;
    private final FifoPolicy fifo;
    private boolean passScheduled;
    private double lastEta = Double.NEGATIVE_INFINITY;

    public RecallEngine(TapeLibrary library, EventClock clock, CostModel cost, SchedulerConfig config,
                        QueueStore store, Staging staging, EngineListener listener) {
        this.library = library;
        this.clock = clock;
        this.cost = cost;
        this.config = config;
        this.store = store;
        this.staging = staging;
        this.listener = listener;
        this.runPlanner = new RunPlanner(cost, config.orderingBudget(),
                config.policy() == Policy.TAPE_AWARE && library.readsWithoutTarget());
        this.mountPlanner = new MountPlanner(config, cost, runPlanner);
        this.shortRequestsFirst = new ShortRequestsFirst(cost, runPlanner, mountPlanner);
        this.readListPlanner = new ReadListPlanner(this, model, config, cost, runPlanner, shortRequestsFirst);
        this.readiness = new DriveReadiness(this, drives, clock, config, mountPlanner, demand);
        this.forecast = new DriveForecast(drives, model, mountPlanner, cost);
        this.longWorkShare = new LongWorkShare(forecast, drives, model, mountPlanner, cost, config);
        this.fifo = new FifoPolicy(this, drives, store);
        this.accessors = Math.max(1, library.layout().accessors());
        this.epoch = clock.now();
        for (DriveStatus s : library.drives()) {
            Drive d = new Drive(s.drive());
            switch (s.state()) {
                case MOUNTED_IDLE -> {
                    d.state = DState.IDLE;
                    d.volume = s.volume();
                    d.moved = s.bytesMoved();
                    d.draining = s.downRequested(); // taken down before a restart: unloaded at the first pass
                }
                // a failed drive may hold its cartridge: that volume is known to be stuck, not mounted elsewhere
                case FAILED, DISABLED -> { d.state = DState.FAILED; d.volume = s.volume(); }
                case EMPTY -> { }
                case ELSEWHERE -> { d.state = DState.FAILED; d.elsewhere = true; }
                // busy with something we did not start (restart mid-operation): leave it alone until it settles
                default -> d.state = DState.FAILED;
            }
            drives.put(d.name, d);
            // a cartridge left in a drive is this instance's (restart): hold it against the other instances
            if (d.volume != null && !store.claimVolume(d.volume)) {
                // held elsewhere (state from another library view): leave the drive alone until the lease is ours
                // (libraryDrives). Not a stuck cartridge of ours: its volume's files are not sent to other copies
                if (d.state == DState.IDLE) {
                    d.elsewhere = true;
                    d.volume = null;
                }
                d.state = DState.FAILED;
            }
        }
    }

    /**
     * Follows an operator's change to the library's drives: a drive this engine holds as failed that the library
     * now reports EMPTY (recovered, enabled) is used again; an empty one it reports DISABLED or FAILED is not used.
     * A drive another instance sharing the library uses ({@link DriveState#ELSEWHERE}) is left alone until the
     * library reports it free, or holding a volume whose lease this instance now takes.
     * Read only at start before, a recovered drive stayed out of use until the service was restarted.
     */
    public synchronized void libraryDrives(Collection<DriveStatus> states) {
        boolean back = false;
        for (DriveStatus s : states) {
            Drive d = drives.get(s.drive());
            if (d == null) continue;
            if (s.downRequested() != d.draining && d.state != DState.EMPTY && d.state != DState.FAILED) {
                // an operator took it down (or changed their mind): the list under way ends, nothing new starts
                d.draining = s.downRequested();
                if (d.draining && d.state == DState.IDLE) dismount(d);
                back = true;
                continue;
            }
            if (d.state == DState.FAILED && s.state() == DriveState.EMPTY) {
                if (d.volume != null) store.releaseVolume(d.volume); // only a lease of ours
                d.state = DState.EMPTY;
                d.volume = null;
                d.experiment = null;
                d.failed = false;
                d.elsewhere = false;
                d.draining = false;
                back = true;
            } else if (d.state == DState.FAILED && d.elsewhere && s.state() == DriveState.MOUNTED_IDLE && s.volume() != null) {
                // left out because another instance held the volume in it (or the drive): ours once that lease
                // has ended. Before, such a drive stayed out of use until this service was restarted
                if (store.claimVolume(s.volume())) {
                    d.state = DState.IDLE;
                    d.volume = s.volume();
                    d.moved = s.bytesMoved();
                    d.head = 0;
                    d.experiment = null;
                    d.failed = false;
                    d.elsewhere = false;
                    d.busyUntil = now();
                    back = true;
                }
            } else if ((d.state == DState.EMPTY || d.state == DState.FAILED && d.volume == null)
                    && s.state() == DriveState.ELSEWHERE) {
                // another instance sharing the library uses it now (a mount refused for that lands here too)
                d.state = DState.FAILED;
                d.volume = null;
                d.elsewhere = true;
            } else if (d.state == DState.EMPTY && (s.state() == DriveState.DISABLED || s.state() == DriveState.FAILED)) {
                d.state = DState.FAILED;
                d.volume = s.volume();
            }
        }
        if (back) requestPass();
    }

    /** Seconds since this engine started, its time line. */
    public double now() {
        return Duration.between(epoch, clock.now()).toNanos() / 1e9;
    }

    public Instant toInstant(double t) {
        return epoch.plusNanos((long) (t * 1e9));
    }

    public QueueModel model() { return model; }

    public SchedulerConfig config() { return config; }

    /** Queues a request; files on disk or already queued/being read are joined, not read again. */
    public synchronized RequestWork submit(String id, Instant arrival, int priority, String experiment,
                                           List<QueueModel.FileSpec> files) {
        return submit(id, arrival, priority, experiment, files, false);
    }

    /**
     * Queues a request of which {@code files} is the first slice; {@code more}: the rest follows through
     * {@link #addFiles} (a large request is taken in a slice a round, so that its first volumes are planned
     * before the whole of it has been read from the database). Until its last slice it does not end.
     */
    public synchronized RequestWork submit(String id, Instant arrival, int priority, String experiment,
                                           List<QueueModel.FileSpec> files, boolean more) {
        double t = Duration.between(epoch, arrival).toNanos() / 1e9;
        RequestWork r = model.addRequest(id, t, priority, experiment, files, more, this::isMounted);
        taken(r, r.files, t);
        return r;
    }

    /**
     * The next slice of a request submitted with more to come ({@link #submit(String, Instant, int, String, List,
     * boolean)}); {@code more}: still more follow. Its files are planned as if they had come with the request.
     */
    public synchronized void addFiles(String id, List<QueueModel.FileSpec> files, boolean more) {
        RequestWork r = model.request(id);
        if (r == null || !r.intakePending()) throw new IllegalArgumentException("request " + id + " takes no more files");
        List<FileWork> added = model.addFiles(id, files, more, now(), this::isMounted);
        // taken in whole: its first ETA at the next pass rather than up to ETA_INTERVAL_S later (it had none meanwhile)
        if (!more) lastEta = Double.NEGATIVE_INFINITY;
        taken(r, added, now());
    }

    /** The files just taken in for {@code r} at {@code t}: demand, a cut for a short request, FIFO order, failures, its end. */
    private void taken(RequestWork r, List<FileWork> files, double t) {
        Set<String> asked = new HashSet<>(2);
        for (FileWork f : files) {
            if (f.home != null && (f.state == FileWork.State.QUEUED || f.state == FileWork.State.CLAIMED)) asked.add(f.home.volume());
        }
        // each request counts once per volume: a later slice only for the volumes its earlier ones did not ask for
        if (r.intakePending() || r.askedVolumes != null) {
            if (r.askedVolumes == null) r.askedVolumes = new HashSet<>();
            asked.removeAll(r.askedVolumes);
            if (r.intakePending()) r.askedVolumes.addAll(asked);
            else r.askedVolumes = null; // the last slice: no more to compare with
        }
        for (String v : asked) demand.asked(v, r.arrival);
        // now, not the arrival: a request taken in again after a restart arrived long before
        String completes = r.completesOn();
        if (config.policy() == Policy.TAPE_AWARE && completes != null) cutForShortRequest(completes, now());
        if (config.policy() == Policy.FIFO) fifo.arrived(files);
        for (FileWork f : files) {
            if (f.state == FileWork.State.FAILED) { // only now: every copy is on an unavailable volume
                store.failed(f);
                listener.fileFailed(f, t);
            }
        }
        if (r.finished()) {
            open.remove(r);
            store.requestFinished(r);
            listener.requestFinished(r, t);
        } else {
            open.add(r);
            requestPass();
        }
    }

    /** Whether the request is held and takes more slices ({@link #addFiles}). */
    public synchronized boolean takesMore(String id) {
        RequestWork r = model.request(id);
        return r != null && r.intakePending();
    }

    /** A read list with less than this left is not cut for a new request: it ends soon anyway. */
    static final double CUT_MIN_LEFT_S = 30;

    /**
     * A request that completes on a volume being read arrived: the drive's read list ends after the file under
     * way, so the request's files are planned with the rest at once (see {@link ShortRequestsFirst}) instead
     * of after the list (up to {@code max-batch-time}). The dropped files go back to the queue; the head has
     * not moved for them, so nothing is lost.
     */
    private void cutForShortRequest(String volume, double t) {
        if (!library.dropsCancelledReads()) return; // the drive would read the dropped files anyway, then again
        for (Drive d : drives.values()) {
            if (d.state == DState.READING && volume.equals(d.volume) && d.reading != null && d.busyUntil - t > CUT_MIN_LEFT_S
                    && model.queue(volume).fileCount() + d.reading.open <= ShortRequestsFirst.MAX_FILES) {
                d.reading.cutAfterCurrent();
            }
        }
    }

    /** Stops serving a request (cancelled, or completed by another instance). */
    public synchronized void forget(String requestId) {
        RequestWork r = model.request(requestId);
        if (r == null) return;
        open.remove(r);
        model.forget(requestId);
    }

    /**
     * Files of an open request were cancelled one by one: it stops waiting for them, and reads no open request
     * needs any more stop where the library drops cancelled reads (the segment under way is left to end).
     */
    public synchronized void forgetFiles(String requestId, Set<Long> fileIds) {
        RequestWork r = model.request(requestId);
        if (r == null || r.finished()) return;
        double t = now();
        Set<FileWork> unwanted = new HashSet<>(model.forgetFiles(requestId, fileIds, t));
        if (!unwanted.isEmpty() && library.dropsCancelledReads()) {
            for (Drive d : drives.values()) {
                if (d.reading != null) d.reading.cancel(unwanted);
            }
        }
        if (r.finished()) {
            open.remove(r);
            store.requestFinished(r);
            listener.requestFinished(r, t);
        }
        requestPass();
    }

    /** A file another instance had claimed is queued again (its lease lapsed): we may read it. */
    public synchronized void requeueIfClaimedElsewhere(long fileId) {
        FileWork f = model.file(fileId);
        if (f == null || f.state != FileWork.State.CLAIMED || readingHere(f)) return;
        model.requeue(f, this::isMounted);
        requeuedForFifo(f);
        requestPass();
    }

    /** A file read elsewhere reached its end there: requests here waiting only on it finish. */
    public synchronized void finishedElsewhere(long fileId, boolean onDisk, String error) {
        FileWork f = model.file(fileId);
        if (f == null || f.state == FileWork.State.ON_DISK || f.state == FileWork.State.FAILED || readingHere(f)) return;
        double t = now();
        List<RequestWork> ended = onDisk ? model.onDisk(f, t) : model.fail(f, error, t);
        for (RequestWork r : ended) {
            open.remove(r);
            listener.requestFinished(r, t);
        }
    }

    /** The file's copy left the cache (evicted): a new request for it reads it again. */
    public synchronized void evicted(long fileId) {
        FileWork f = model.file(fileId);
        if (f == null || f.state != FileWork.State.ON_DISK) return;
        f.state = FileWork.State.FAILED; // the model's "ask again: read from scratch" state
        f.error = "evicted from the cache";
    }

    private final Set<Long> readingHere = new HashSet<>();

    private boolean readingHere(FileWork f) {
        return readingHere.contains(f.id);
    }

    /** Ids of the files this engine is reading now: its live claims, whose leases it renews. */
    public synchronized List<Long> readingNow() {
        return new ArrayList<>(readingHere);
    }

    /**
     * Files found claimed by another instance when this one tried to claim them ({@link #startBatch}), the only
     * way a file becomes claimed without being read here. Kept so that {@link #claimedElsewhere()} need not walk
     * every file at each intake round (20-40 ms at 10^6 queued files); entries that moved on are dropped there.
     */
    private final Set<FileWork> seenClaimedElsewhere = new HashSet<>();

    /** Ids of files this engine holds as claimed by another instance. */
    public synchronized List<Long> claimedElsewhere() {
        List<Long> ids = new ArrayList<>();
        seenClaimedElsewhere.removeIf(f -> f.state != FileWork.State.CLAIMED || readingHere(f) || model.files.get(f.id) != f);
        for (FileWork f : seenClaimedElsewhere) ids.add(f.id);
        return ids;
    }

    /** Ids of the requests still open here. */
    public synchronized List<String> openRequestIds() {
        List<String> ids = new ArrayList<>();
        for (RequestWork r : open) ids.add(r.id);
        return ids;
    }

    /** Ids of the requests this engine holds, open or ended but not yet forgotten ({@link #forgetEnded}). */
    public synchronized Set<String> heldRequestIds() {
        return new HashSet<>(model.requests.keySet());
    }

    /** See {@link QueueModel#forgetEnded}: returns how many ended requests were dropped. */
    public synchronized int forgetEnded() {
        return model.forgetEnded();
    }

    /** Schedules one pass soon (coalesced). */
    public synchronized void requestPass() {
        if (passScheduled) return;
        passScheduled = true;
        clock.schedule(Duration.ZERO, this::pass);
    }

    /** One scheduling pass: start reads on mounted volumes with work, mount and dismount. */
    synchronized void pass() {
        passScheduled = false;
        longWorkShare.newPass();
        double now = now();
        for (Drive d : drives.values()) if (d.state == DState.IDLE && d.draining) dismount(d); // taken down: its list has ended
        if (config.policy() == Policy.FIFO) {
            fifo.pass();
            return;
        }
        for (Drive d : drives.values()) {
            if (d.state == DState.IDLE && hasWork(d.volume)) startBatch(d, null);
            if (d.state == DState.FAILED && d.volume != null && hasWork(d.volume)) rehomeFromStuck(d);
        }
        Set<Drive> victims = new HashSet<>();
        List<VolumeQueue> ranked = mountVolumes(now, victims);
        for (Drive d : drives.values()) {
            if (d.state == DState.IDLE && !hasWork(d.volume) && d.idleTimer == null) armIdleTimer(d);
        }
        if (config.policy() == Policy.TAPE_AWARE) readiness.keepDrivesReady(victims);
        if (now - lastEta >= ETA_INTERVAL_S) {
            lastEta = now;
            forecast.etas(now, ranked, open);
            store.etas(open);
            demand.prune(now);
        }
    }

    /**
     * The pass's mounts: the volumes {@link MountPlanner} ranks go to empty drives, idle drives emptied for
     * them, as far as the accessors, the experiments' drive caps and the cache's room allow. The drives emptied
     * are added to {@code victims}; returns the ranking as first made (the ETAs follow it).
     */
    private List<VolumeQueue> mountVolumes(double now, Set<Drive> victims) {
        // the cache's room is asked only when a volume may be mounted, and only as far as this pass can use it:
        // counting a large cache's evictable copies is not free
        long room = Long.MIN_VALUE;
        Set<String> busy = new HashSet<>();
        Map<String, Integer> inUse = new HashMap<>();
        // drives with an exchange of this engine's under way: it counts its mounts itself, and not its dismounts. A
        // dismount holds an accessor only for its last move (6.7 s after 85-195 s of rewind and unthread); counted
        // whole against the budget they held mounts back while the robot was free (16/1: tape-aware's p95 went from
        // 0.79-0.84 to 0.98-1.29 of greedy's, bulk-climate's makespan 890 -> 1417 s). Counted only in their last move
        // (their expected end within one move), no better (latency-sweep: a few cases worse)
        List<String> exchanging = new ArrayList<>();
        int mounting = 0;
        boolean canExchange = false;
        for (Drive d : drives.values()) {
            if (d.volume != null) busy.add(d.volume);
            if (d.experiment != null && d.state != DState.EMPTY && d.state != DState.FAILED) inUse.merge(d.experiment, 1, Integer::sum);
            if (d.state == DState.MOUNTING) mounting++;
            if (d.state == DState.MOUNTING || d.state == DState.UNLOADING) exchanging.add(d.name);
            if (d.state == DState.EMPTY || d.state == DState.IDLE) canExchange = true;
        }
        double tailLine = shortRequestsFirst.recentP95();
        int usable = usableDrives();
        List<VolumeQueue> cands = mountPlanner.rank(model, now, busy, inUse, tailLine, usable);
        List<VolumeQueue> ranked = cands;
        int limit = config.policy() == Policy.TAPE_AWARE ? accessors * config.exchangesPerAccessor() : Integer.MAX_VALUE;
        boolean rerank = !config.experimentShares().isEmpty(); // shares move with every mount
        boolean balance = config.policy() == Policy.TAPE_AWARE && !rerank;
        List<Drive> dl = new ArrayList<>(drives.values());
        double[] free = new double[dl.size()], readEnds = new double[dl.size()];
        if (balance && !cands.isEmpty()) forecast.predict(dl, now, free, readEnds);
        // mounts and dismounts under way on the library's other drives (other instances sharing it, the archive's
        // write drives; the simulated library counts the archive's mounts only) take the same accessors: asked once,
        // and only when this pass may start one. Counting its own only, each instance started the whole budget
        int others = limit == Integer.MAX_VALUE || !canExchange || cands.isEmpty() ? 0 : library.exchangesUnderWayBesides(exchanging);
        int started = mounting;
        for (int i = 0; i < cands.size(); i++) {
            if (started + others >= limit) break;
            Drive empty = firstDrive(DState.EMPTY, null);
            if (empty != null && balance) {
                int di = dl.indexOf(empty);
                int j = mountPlanner.balance(cands, i, now, free, readEnds, di);
                if (j != i) {
                    if (cands == ranked) cands = new ArrayList<>(ranked);
                    cands.add(i, cands.remove(j));
                }
            }
            if (empty != null && config.policy() == Policy.TAPE_AWARE) {
                int j = longWorkShare.reserveForLongWork(cands, i, now, busy);
                if (j != i) {
                    if (cands == ranked) cands = new ArrayList<>(ranked);
                    cands.add(i, cands.remove(j));
                }
            }
            VolumeQueue q = cands.get(i);
            String exp = q.experiment();
            Integer cap = config.experimentDriveCaps().get(exp);
            if (config.policy() == Policy.TAPE_AWARE && cap != null && inUse.getOrDefault(exp, 0) >= cap) continue;
            if (readiness.holdLastDrive(q, now, victims, cands, i)) continue;
            // Backpressure: a volume is mounted only when the cache can take a useful batch of it now; the
            // queue waits (nothing fails) and a later pass mounts it as space frees.
            long needed = Math.min(q.bytes(), Math.max(staging.usefulBatchBytes(), 1));
            if (room == Long.MIN_VALUE) room = roomForMounts();
            if (room < needed) continue;
            if (empty != null) {
                if (!store.claimVolume(q.label)) { // mounted by another instance sharing the library
                    busy.add(q.label);
                    continue;
                }
                if (takenElsewhere(q)) { // ranked on files another instance has taken since: ranked again
                    store.releaseVolume(q.label);
                    requestPass();
                    continue;
                }
                // the look above and this mount's note as one step: another instance may have started one since
                if (limit != Integer.MAX_VALUE && !library.reserveMount(empty.name, exchanging, limit - started)) {
                    store.releaseVolume(q.label);
                    break; // the accessors are taken: a later pass tries again
                }
                if (room != Long.MAX_VALUE) {
                    promised.put(q.label, needed);
                    room -= needed;
                }
                mount(empty, q.label, exp);
                started++;
                exchanging.add(empty.name);
                inUse.merge(exp, 1, Integer::sum);
                busy.add(q.label);
                if (balance) {
                    int di = dl.indexOf(empty);
                    double s = mountPlanner.balanceSeconds(q) - cost.dismountSeconds(q.bytes());
                    readEnds[di] = now + s;
                    free[di] = now + s + cost.dismountSeconds(q.bytes());
                }
                if (rerank) {
                    cands = mountPlanner.rank(model, now, busy, inUse, tailLine, usable);
                    i = -1;
                }
                continue;
            }
            Drive victim = readiness.idleVictim(victims);
            if (victim == null) break;
            victims.add(victim);
            dismount(victim);
            exchanging.add(victim.name);
        }
        return ranked;
    }

    /**
     * Takes out of {@code q} the files another instance sharing the queue has claimed, read or failed since this
     * engine took them in (it hears of them otherwise only through its own claims): learnt at the claim after
     * the mount, such a mount read little or nothing (bench/shared-library.sh: 6-39 empty mounts per 64
     * volumes). True when any were.
     */
    private boolean takenElsewhere(VolumeQueue q) {
        List<QueueStore.Taken> taken = store.takenElsewhere(new ArrayList<>(q.files.values()));
        for (QueueStore.Taken x : taken) {
            FileWork f = model.file(x.fileId());
            if (f == null || f.state != FileWork.State.QUEUED) continue;
            switch (x.state()) {
                case CLAIMED -> {
                    model.claimedElsewhere(f);
                    seenClaimedElsewhere.add(f); // its outcome is looked for at the intake rounds
                }
                case ON_DISK -> finishedElsewhere(f.id, true, null);
                case FAILED -> finishedElsewhere(f.id, false, x.error());
            }
        }
        return !taken.isEmpty();
    }

    /**
     * Cache space free for new mounts: what the cache can reserve, asked for as much as a useful batch on every
     * drive could take, less what volumes being mounted were promised (Long.MAX_VALUE: no limit).
     */
    private long roomForMounts() {
        long promisedBytes = 0;
        for (long p : promised.values()) promisedBytes += p;
        long wanted = promisedBytes + Math.max(staging.usefulBatchBytes(), 1) * (long) Math.max(1, usableDrives());
        long room = staging.reservableBytes(wanted);
        if (room != Long.MAX_VALUE) room -= promisedBytes;
        return room;
    }

    /**
     * Whether the drive can take new work here: not failed, disabled or used by another instance sharing the
     * library (all FAILED here), nor going down. Mount plans are sized by these drives only: counting another
     * instance's drives made two drives of four look like four (half of them then kept empty).
     */
    static boolean usable(Drive d) {
        return d.state != DState.FAILED && !d.draining;
    }

    int usableDrives() {
        int n = 0;
        for (Drive d : drives.values()) if (usable(d)) n++;
        return n;
    }

    // hasWork, firstDrive, mount, dismount and startBatch are package-private: DriveReadiness and FifoPolicy
    // call them within a pass
    boolean hasWork(String volume) {
        VolumeQueue q = model.queue(volume);
        return q != null && !q.isEmpty();
    }

    private boolean isMounted(String volume) {
        for (Drive d : drives.values()) {
            if (volume.equals(d.volume) && (d.state == DState.MOUNTING || d.state == DState.IDLE || d.state == DState.READING)) return true;
        }
        return false;
    }

    Drive firstDrive(DState s, String volume) {
        for (Drive d : drives.values()) if (d.state == s && (volume == null || volume.equals(d.volume))) return d;
        return null;
    }

    private void armIdleTimer(Drive d) {
        d.idleTimer = clock.schedule(Duration.ofMillis((long) (config.idleDismountSeconds() * 1000)), () -> {
            synchronized (this) {
                d.idleTimer = null;
                if (d.state == DState.IDLE && !hasWork(d.volume)) dismount(d);
            }
        });
    }

    private void cancelIdleTimer(Drive d) {
        if (d.idleTimer != null) {
            d.idleTimer.cancel();
            d.idleTimer = null;
        }
    }

    void mount(Drive d, String volume, String experiment) {
        cancelIdleTimer(d);
        d.plan = null;
        d.state = DState.MOUNTING;
        d.volume = volume;
        d.experiment = experiment;
        VolumeQueue mq = model.queue(volume);
        d.longWork = mq != null && mountPlanner.longWork(mq);
        d.moved = 0;
        d.head = 0;
        d.failed = false;
        double t = now();
        d.busyUntil = t + cost.mountSeconds();
        model.preferMounted(volume, this::isMounted);
        listener.mountStarted(d.name, volume, t);
        library.mount(d.name, volume).whenComplete((v, e) -> mountDone(d, volume, e));
    }

    private synchronized void mountDone(Drive d, String volume, Throwable e) {
        double t = now();
        if (e != null) {
            promised.remove(volume);
            store.releaseVolume(volume);
        }
        if (e == null) {
            d.state = DState.IDLE;
            d.busyUntil = t;
            listener.mounted(d.name, volume, t);
        } else {
            boolean takenDown = d.draining;
            d.draining = false; // nothing mounted: the library has it failed, or DISABLED when it was taken down
            TapeFailure tf = tapeFailure(e);
            if (tf != null && tf.kind() == TapeFailure.Kind.DRIVE_FAILURE) {
                d.state = DState.FAILED;
            } else if (tf != null && tf.kind() == TapeFailure.Kind.VOLUME_UNAVAILABLE) {
                d.state = DState.EMPTY;
                d.volume = null;
                volumeUnavailable(volume, tf.getMessage(), t);
            } else {
                // a mount timeout or cancellation: its files go to other copies or fail
                d.state = DState.EMPTY;
                String reason = e instanceof CancellationException ? "mount cancelled" : String.valueOf(rootCause(e).getMessage());
                VolumeQueue q = model.queue(volume);
                if (q != null) {
                    for (FileWork f : new ArrayList<>(q.files.values())) finish(f, model.copyFailed(f, volume, reason, t, this::isMounted), t);
                }
            }
            d.volume = null;
            d.experiment = null;
            if (takenDown) d.state = DState.FAILED; // out of use until enabled, as after its dismount
        }
        requestPass();
    }

    void dismount(Drive d) {
        cancelIdleTimer(d);
        d.plan = null;
        if (d.volume != null) promised.remove(d.volume);
        d.state = DState.UNLOADING;
        double t = now();
        d.busyUntil = t + cost.dismountSeconds(d.moved);
        listener.dismountStarted(d.name, d.volume, d.moved, t);
        String volume = d.volume;
        library.dismount(d.name).whenComplete((v, e) -> dismountDone(d, volume, e));
    }

    private synchronized void dismountDone(Drive d, String volume, Throwable e) {
        if (e == null && volume != null) store.releaseVolume(volume);
        // taken down by an operator: the library has it DISABLED now; out of use here until it is enabled (EMPTY)
        d.state = e == null && !d.draining ? DState.EMPTY : DState.FAILED;
        d.draining = false;
        d.volume = null;
        d.experiment = null;
        listener.dismounted(d.name, now());
        requestPass();
    }

    /**
     * Reads the volume's queued files (the given ones for FIFO) in the planned order, one read list. Space
     * is reserved for the whole list first; files without space stay queued (the drive waits for space),
     * files already cached are done at once.
     */
    void startBatch(Drive d, List<FileWork> only) {
        String volume = d.volume;
        promised.remove(volume);
        long room = staging.reservableBytes(config.maxBatchBytes());
        if (room <= 0) { // the cache is full: wait for space (a later pass tries again)
            if (only != null) for (FileWork f : only) fifo.backToHead(f);
            return;
        }
        cancelIdleTimer(d);
        ReadListPlanner.Choice next = readListPlanner.choose(d, only, room);
        List<FileWork> batch = next.files;
        List<FileWork> claimed = store.claim(volume, batch);
        Set<FileWork> mineSet = new HashSet<>(claimed);
        for (FileWork f : batch) {
            if (mineSet.contains(f)) {
                model.claim(f);
            } else {
                model.claimedElsewhere(f);
                seenClaimedElsewhere.add(f);
            }
        }
        readListPlanner.keepRest(d, next);
        if (claimed.isEmpty()) {
            requestPass();
            return;
        }
        double t = now();
        List<Staging.Slot> slots = staging.reserve(volume, claimed);
        List<FileWork> mine = new ArrayList<>(claimed.size());
        List<Staging.Slot> mineSlots = new ArrayList<>(claimed.size());
        boolean waiting = false;
        for (int i = 0; i < claimed.size(); i++) {
            FileWork f = claimed.get(i);
            Staging.Slot slot = slots.get(i);
            switch (slot.kind()) {
                case READ -> {
                    mine.add(f);
                    mineSlots.add(slot);
                    readingHere.add(f.id);
                }
                case CACHED -> {
                    store.staged(f, volume, Long.parseLong(slot.adler32(), 16), slot.target());
                    finish(f, model.onDisk(f, t), t);
                }
                case WAIT -> {
                    waiting = true;
                    putBack(f);
                }
                case FAIL -> {
                    afterFailure(f, model.fail(f, slot.reason(), t), t);
                }
            }
        }
        if (mine.isEmpty()) {
            if (!waiting) requestPass(); // nothing waits for space: go on at once
            return;
        }
        d.state = DState.READING;
        d.busyUntil = t + runPlanner.workSeconds(volume, mine, d.head);
        ReadList list = ReadList.of(d, volume, mine, mineSlots, runPlanner.readThrough(), cost);
        ReadBatch rb;
        try {
            rb = library.read(d.name, list.segments);
        } catch (RuntimeException e) {
            // Refused outright (the library's drive is not in the state this engine holds, or the list is wrong):
            // taken as a drive failure, so the files and their cache space go back and the drive leaves service.
            // Left READING with no list it would hold them until a restart; retried, it would be refused again.
            System.getLogger(RecallEngine.class.getName()).log(System.Logger.Level.WARNING,
                    "drive " + d.name + " refused a read list; it is taken out of service", e);
            rb = ReadList.refused(new TapeFailure(TapeFailure.Kind.DRIVE_FAILURE, d.name, volume, "read list refused: " + e));
        }
        // The list is done when this engine has recorded every segment's outcome, not when the library's
        // futures have all completed: their callbacks run on several threads and may wait for this monitor
        // in any order, so "all complete" can be seen before the last outcome is recorded (a drive failure
        // not yet known, the drive handed a new list while a file of the old one is still unaccounted for).
        list.handedTo(rb);
        d.reading = list;
        for (int i = 0; i < list.segments.size(); i++) {
            SegmentRead s = list.segments.get(i);
            FileWork f = list.files.get(i);
            Staging.Slot slot = list.slots.get(i);
            if (f == null) rb.result(s).whenComplete((r, e) -> gapDone(list, s, e));
            else rb.result(s).whenComplete((r, e) -> segmentDone(list, f, s, slot, r, e));
        }
    }

    /** Open requests with files queued for a volume no drive holds: they wait for a mount. */
    int waitingForMounts() { // package-private: ReadListPlanner orders by it
        int n = 0;
        for (RequestWork r : open) {
            for (String v : r.queuedPerVolume.keySet()) {
                if (!isMounted(v)) {
                    n++;
                    break;
                }
            }
        }
        return n;
    }

    /** A gap read through: the head moved on; a failure there is left to the next file's own read. */
    private synchronized void gapDone(ReadList list, SegmentRead s, Throwable e) {
        if (e == null) {
            list.drive.head = s.offsetBytes() + s.sizeBytes();
            list.drive.moved += s.sizeBytes();
        }
        if (list.settled(s)) batchDone(list.drive);
    }

    private synchronized void segmentDone(ReadList list, FileWork f, SegmentRead s, Staging.Slot slot, ReadResult r, Throwable e) {
        try {
            segmentDone0(list.drive, f, s, slot, r, e);
        } catch (RuntimeException unexpected) {
            // thrown into a future's callback it would vanish: say so here. The claim, no longer renewed,
            // lapses and the file is read again.
            System.getLogger(RecallEngine.class.getName()).log(System.Logger.Level.WARNING,
                    "outcome of reading " + f.name + " not recorded; its claim will lapse and it is read again", unexpected);
            throw unexpected;
        } finally {
            if (list.settled(s)) batchDone(list.drive);
        }
    }

    private void segmentDone0(Drive d, FileWork f, SegmentRead s, Staging.Slot slot, ReadResult r, Throwable e) {
        double t = now();
        readingHere.remove(f.id);
        if (e == null) {
            d.head = s.offsetBytes() + s.sizeBytes();
            d.moved += s.sizeBytes();
            // nothing unverified is ever handed on: a refused copy is gone, the file goes to another copy or fails
            Staging.Committed c = staging.commit(f, s.volume(), slot, r.adler32());
            if (c.verdict() == Staging.Verdict.REFUSED) {
                afterFailure(f, model.copyFailed(f, s.volume(), c.reason(), t, this::isMounted), t);
                return;
            }
            if (c.verdict() == Staging.Verdict.LOST) {
                if (++f.lostCopies >= MAX_LOST_COPIES) {
                    afterFailure(f, model.fail(f, c.reason() + " (" + f.lostCopies + " times)", t), t);
                    return;
                }
                // read again, as after a lapsed claim: blaming the copy would fail a file that has only this one
                System.getLogger(RecallEngine.class.getName()).log(System.Logger.Level.WARNING,
                        f.name + " read again: " + c.reason());
                putBack(f);
                return;
            }
            listener.segmentRead(d.name, f, r, t);
            store.staged(f, s.volume(), r.adler32(), s.target());
            finish(f, model.onDisk(f, t), t);
            return;
        }
        Durable.NotForced notForced = notForced(e);
        if (notForced != null) staging.notForced(f, slot, notForced.getMessage() + ": " + notForced.getCause().getMessage());
        else staging.abort(f, slot, String.valueOf(rootCause(e).getMessage()));
        TapeFailure tf = tapeFailure(e);
        if (tf == null || rootCause(e) instanceof CancellationException) {
            putBack(f);
        } else if (tf.kind() == TapeFailure.Kind.DRIVE_DOWN) {
            // the library refused the list: an operator took the drive down before this engine's round saw it.
            // Nothing is wrong with the file or its volume: it waits, and the drive is unloaded once the list settles
            d.draining = true;
            putBack(f); // its turn kept (FIFO): it is read once a drive takes its volume
        } else if (tf.kind() == TapeFailure.Kind.DRIVE_FAILURE) {
            d.failed = true;
            model.requeue(f, v -> false);
            requeuedForFifo(f);
            store.released(f);
        } else {
            afterFailure(f, model.copyFailed(f, s.volume(), tf.getMessage(), t, this::isMounted), t);
            if (tf.kind() == TapeFailure.Kind.VOLUME_UNAVAILABLE) volumeUnavailable(s.volume(), tf.getMessage(), t);
        }
    }

    /**
     * A file whose staged copy was lost this many times fails (a new request reads it anew): each loss needs
     * an outside event (a claim lapsed in a long database outage, two instances sharing one cache node name),
     * and one that keeps happening would otherwise read the tape for ever.
     */
    static final int MAX_LOST_COPIES = 3;

    /** The file is queued here again (a mounted copy first) and its claim given back, to be read again. */
    private void putBack(FileWork f) {
        model.requeue(f, this::isMounted);
        requeuedForFifo(f);
        store.released(f);
    }

    /**
     * FIFO: a file queued again (read cancelled or failed untyped, drive failure, staged copy lost, no cache space)
     * rejoins the arrival-order queue in its place. Before, it went back to its volume's queue only, which the FIFO
     * policy does not read: it was never read again and its requests never ended.
     */
    private void requeuedForFifo(FileWork f) {
        if (config.policy() == Policy.FIFO && f.state == FileWork.State.QUEUED) fifo.backToHead(f);
    }

    /**
     * The library says the volume cannot be used: it is marked unavailable (durably, through the store),
     * takes no new work, and its queued files go to their other copies or fail with the reason.
     */
    private void volumeUnavailable(String volume, String reason, double t) {
        if (model.unavailable.contains(volume)) return;
        promised.remove(volume);
        store.volumeUnavailable(volume, reason);
        List<FileWork> queued = model.queue(volume) == null ? List.of() : new ArrayList<>(model.queue(volume).files.values());
        model.volumeUnavailable(volume, reason, t, this::isMounted);
        for (FileWork f : queued) {
            if (f.state == FileWork.State.FAILED) store.failed(f);
            else store.released(f);
        }
        List<RequestWork> ended = new ArrayList<>();
        for (FileWork f : queued) {
            if (f.state == FileWork.State.FAILED) listener.fileFailed(f, t);
            for (RequestWork r : f.requests) if (r.finished() && open.contains(r) && !ended.contains(r)) ended.add(r);
        }
        for (RequestWork r : ended) {
            open.remove(r);
            store.requestFinished(r);
            listener.requestFinished(r, t);
        }
        requestPass();
    }

    /** An operator made the volume available again: it may be mounted for new work. */
    public synchronized void volumeAvailable(String volume) {
        model.volumeAvailable(volume);
    }

    /** Volumes this engine holds as unavailable. */
    public synchronized Set<String> unavailableVolumes() {
        return model.unavailableVolumes();
    }

    /**
     * A request's priority changed (an operator's decision): its queued files are re-ranked at once, raised
     * or lowered, including files it shares with other requests (they keep the highest wanting priority).
     */
    public synchronized void changePriority(String requestId, int priority) {
        RequestWork r = model.request(requestId);
        if (r == null || r.priority == priority) return;
        model.changePriority(requestId, priority);
        requestPass();
    }

    private void afterFailure(FileWork f, List<RequestWork> ended, double t) {
        if (f.state == FileWork.State.FAILED) {
            store.failed(f);
            listener.fileFailed(f, t);
        } else {
            store.released(f);
        }
        finish(f, ended, t);
    }

    private void finish(FileWork f, List<RequestWork> ended, double t) {
        if (f.state == FileWork.State.FAILED && ended.isEmpty()) listener.fileFailed(f, t);
        for (RequestWork r : ended) {
            shortRequestsFirst.completed(t - r.arrival);
            open.remove(r);
            store.requestFinished(r);
            listener.requestFinished(r, t);
        }
        requeuedForFifo(f);
    }

    private synchronized void batchDone(Drive d) {
        if (d.state != DState.READING) return;
        d.state = d.failed ? DState.FAILED : DState.IDLE;
        d.busyUntil = now();
        if (d.failed && d.volume != null) rehomeFromStuck(d);
        requestPass();
    }

    /**
     * A failed drive keeps its cartridge until an operator recovers it: files queued for that volume that
     * have another copy are read from it instead; the others wait for the volume to come back.
     */
    private void rehomeFromStuck(Drive d) {
        VolumeQueue q = model.queue(d.volume);
        if (q == null) return;
        double t = now();
        String reason = "volume " + d.volume + " stuck in failed drive " + d.name;
        for (FileWork f : new ArrayList<>(q.files.values())) {
            boolean other = false;
            for (Copy c : f.copies) if (!c.volume().equals(d.volume) && f.usable(c)) other = true;
            if (other) finish(f, model.copyFailed(f, d.volume, reason, t, this::isMounted), t);
        }
    }

    /** Drive names and what each holds, for status pages. */
    public synchronized Map<String, String> driveStates() {
        Map<String, String> m = new LinkedHashMap<>();
        for (Drive d : drives.values()) m.put(d.name, d.state + (d.volume != null ? " " + d.volume : ""));
        return m;
    }

    public synchronized int openRequests() {
        return open.size();
    }

    /**
     * The queued files of open requests as this engine plans them, per volume (each file once, on the volume it
     * is queued for) and per experiment, from the queues' running totals: O(volumes + open requests), under the
     * engine's monitor, for status pages and gauges, which otherwise read every open file from the database.
     * Files in {@code readElsewhere} that are queued here are taken off their volume's counts (the caller counts
     * them where they are being read); the oldest and the ETA still count their requests.
     */
    public synchronized Backlog backlog(Set<Long> readElsewhere) {
        Backlog b = new Backlog();
        for (VolumeQueue q : model.queues()) {
            b.perVolume.put(q.label, new Backlog.Totals(q.fileCount(), q.bytes()));
            q.filesPerExperiment.forEach((e, n) -> b.perExperiment.computeIfAbsent(e == null ? "" : e, k -> new Backlog.Totals())
                    .add(n, q.bytesPerExperiment.getOrDefault(e, 0L)));
        }
        for (long id : readElsewhere) {
            FileWork f = model.file(id);
            if (f == null || f.state != FileWork.State.QUEUED || f.home == null) continue;
            Backlog.Totals v = b.perVolume.get(f.home.volume());
            if (v != null) v.add(-1, -f.sizeBytes);
            Backlog.Totals e = b.perExperiment.get(f.experiment == null ? "" : f.experiment);
            if (e != null) e.add(-1, -f.sizeBytes);
        }
        b.perVolume.values().removeIf(t -> t.files() <= 0);
        b.perExperiment.values().removeIf(t -> t.files() <= 0);
        for (RequestWork r : open) {
            for (String volume : r.queuedPerVolume.keySet()) {
                Backlog.Totals v = b.perVolume.get(volume);
                if (v != null) v.waiting(r.arrival, r.eta);
            }
        }
        return b;
    }

    private static Throwable rootCause(Throwable e) {
        while ((e instanceof CompletionException || e instanceof java.util.concurrent.ExecutionException) && e.getCause() != null) e = e.getCause();
        return e;
    }

    /** The copy was read but could not be forced to disk (the cache disk's fault), or null. */
    private static Durable.NotForced notForced(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause())
            if (t instanceof Durable.NotForced n) return n;
        return null;
    }

    private static TapeFailure tapeFailure(Throwable e) {
        return rootCause(e) instanceof TapeFailure tf ? tf : null;
    }
}
