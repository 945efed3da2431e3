package dev.stagehand.tape;

import dev.stagehand.platform.Durable;
import dev.stagehand.platform.EventClock;
import dev.stagehand.platform.VirtualClock;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.locks.ReentrantLock;
import java.util.stream.Stream;
import java.util.zip.Adler32;

/**
 * The simulated tape library: D drives and A robot accessors on an {@link EventClock}, timed by a
 * {@link TapeModel} (LTO-9 by default). A mount waits for a free accessor, moves the cartridge in (r) and
 * loads it (L); reads position the head with the model's locate cost and stream at B; a dismount rewinds
 * and unthreads by the bytes the mount moved, waits for an accessor and moves the cartridge out. At most
 * A cartridge moves are under way at once; further moves wait in FIFO order.
 *
 * <p>Data are real bytes: a file's content is generated from its name ({@link SimulatedContent}) unless it
 * was written through {@link #write}, in which case its bytes are kept under {@code root/<volume>/}. A
 * segment with a target gets those bytes and their Adler32; one without a target only costs time (its
 * {@link ReadResult#adler32()} is -1), so a simulation of hundreds of terabytes touches no disk.
 *
 * <p>Semantics worth knowing: {@link #read} on a drive that is already reading queues the new list behind
 * the current one; {@link #dismount} drops queued items, breaks off a read under way (a write under way
 * finishes) and then unloads; a cancelled mount loads and goes straight back to its slot (or is simply
 * withdrawn while it still waits for an accessor); a volume in a drive (even a FAILED one) cannot be mounted
 * in another (VOLUME_UNAVAILABLE). Wrong use (unknown drive, drive not empty, segment of another volume)
 * throws IllegalArgumentException or IllegalStateException at once.
 *
 * <p>On a {@link VirtualClock} everything, callbacks included, runs on the clock's thread with no thread
 * per operation, and bytes are copied synchronously; on a real or scaled clock bytes are copied on worker
 * threads while the clock times the transfer. Thread-safe: one lock guards the state; futures complete
 * and listeners are called after it is released.
 */
public final class SimulatedLibrary implements TapeLibrary, AutoCloseable {

    private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(SimulatedLibrary.class);

    private final LibraryLayout layout;
    private final TapeModel model;
    private final EventClock clock;
    private final Path root;
    private final Duration mountTimeout;
    private final LibraryEvents events;
    private final FaultPlan faults;
    private final boolean copyOnClockThread;
    /** Forces each file read to disk before its segment is reported. */
    private final Durable durable;
    private final ExecutorService io;
    private final Instant t0;
    private final double t0Seconds; // t0 on a virtual clock, as seconds from its start

    private final ReentrantLock lock = new ReentrantLock();
    private List<Runnable> after = new ArrayList<>();
    private final ThreadLocal<ArrayDeque<Runnable>> draining = new ThreadLocal<>();
    private final Map<String, Drive> drives = new LinkedHashMap<>();
    private final Map<String, SimVolume> volumes = new HashMap<>();
    private int freeAccessors;
    private final ArrayDeque<AccessorRequest> accessorQueue = new ArrayDeque<>();

    // statistics
    private long mounts, dismounts, segmentsRead, bytesRead, segmentsFailed, filesWritten, bytesWritten;
    private double locateSeconds, readSeconds, writeSeconds, accessorBusySeconds, accessorWaitSeconds;

    private SimulatedLibrary(Builder b) {
        this.model = b.model;
        this.clock = b.clock;
        this.root = b.root;
        this.mountTimeout = b.mountTimeout;
        this.events = b.events;
        this.faults = b.faults;
        this.copyOnClockThread = b.clock instanceof VirtualClock;
        this.durable = b.durable;
        this.io = copyOnClockThread ? null : Executors.newVirtualThreadPerTaskExecutor();
        this.t0 = clock.now();
        this.t0Seconds = clock instanceof VirtualClock v ? v.elapsedSeconds() : 0;
        List<String> names = new ArrayList<>();
        for (int i = 1; i <= b.drives; i++) names.add(String.format("%s%02d", b.drivePrefix, i));
        this.layout = new LibraryLayout(b.name, List.copyOf(names), b.accessors);
        this.freeAccessors = b.accessors;
        for (String n : names) drives.put(n, new Drive(n));
        for (DriveStatus s : b.initial) restore(s);
    }

    public static Builder builder(EventClock clock) {
        return new Builder(clock);
    }

    /** Settings of a simulated library; defaults: "sim", 4 drives, 1 accessor, LTO-9, var/tape, 15 min mount timeout. */
    public static final class Builder {
        private final EventClock clock;
        private String name = "sim";
        private String drivePrefix = "drive";
        private int drives = 4;
        private int accessors = 1;
        private TapeModel model = TapeModel.lto9();
        private Path root = Path.of("var/tape");
        private Duration mountTimeout = Duration.ofMinutes(15);
        private LibraryEvents events = LibraryEvents.NONE;
        private FaultPlan faults = new FaultPlan();
        private Collection<DriveStatus> initial = List.of();
        private Durable durable = Durable.FSYNC;

        private Builder(EventClock clock) {
            this.clock = Objects.requireNonNull(clock, "clock");
        }

        public Builder name(String name) { this.name = name; return this; }
        /** Drives are named prefix01, prefix02, ... */
        public Builder drivePrefix(String prefix) { this.drivePrefix = prefix; return this; }
        public Builder drives(int drives) { this.drives = drives; return this; }
        public Builder accessors(int accessors) { this.accessors = accessors; return this; }
        public Builder model(TapeModel model) { this.model = model; return this; }
        /** Where written files are kept, one directory per volume. */
        public Builder root(Path root) { this.root = root; return this; }
        public Builder mountTimeout(Duration timeout) { this.mountTimeout = timeout; return this; }
        public Builder events(LibraryEvents events) { this.events = events; return this; }
        public Builder faults(FaultPlan faults) { this.faults = faults; return this; }
        /** Drive states persisted by an earlier run (a tape left mounted is still mounted). */
        public Builder initialDrives(Collection<DriveStatus> persisted) { this.initial = persisted; return this; }
        /** How files read are forced to disk (tests: to see that it happens before a segment is reported). */
        Builder durable(Durable durable) { this.durable = Objects.requireNonNull(durable); return this; }

        public SimulatedLibrary build() {
            if (drives < 1) throw new IllegalArgumentException("a library needs at least one drive, got " + drives);
            if (accessors < 1) throw new IllegalArgumentException("a library needs at least one accessor, got " + accessors);
            if (mountTimeout.isNegative() || mountTimeout.isZero())
                throw new IllegalArgumentException("mount timeout must be > 0");
            return new SimulatedLibrary(this);
        }
    }

    // ---------------------------------------------------------------- public API

    @Override
    public LibraryLayout layout() {
        return layout;
    }

    public TapeModel model() {
        return model;
    }

    public EventClock clock() {
        return clock;
    }

    public FaultPlan faults() {
        return faults;
    }

    @Override
    public List<DriveStatus> drives() {
        lock.lock();
        try {
            return drives.values().stream().map(Drive::status).toList();
        } finally {
            lock.unlock();
        }
    }

    /** One drive's state. */
    public DriveStatus drive(String name) {
        lock.lock();
        try {
            return drive0(name).status();
        } finally {
            lock.unlock();
        }
    }

    /** Where the head of {@code drive} is (byte offset on its volume). */
    public long headOffset(String drive) {
        lock.lock();
        try {
            return drive0(drive).head;
        } finally {
            lock.unlock();
        }
    }

    /** Accessors not moving a cartridge right now. */
    public int freeAccessors() {
        lock.lock();
        try {
            return freeAccessors;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Mounts under way on drives not in {@code drives}: those of this library's other user (the archive's write
     * drives, {@link DriveRoles}) take the accessors the recall scheduler budgets. Without them it started its whole
     * budget beside the archive's mounts. Dismounts are not counted, as the recall scheduler does not count its own:
     * one holds an accessor only for its last move, after minutes of rewind and unthread in the drive, and counted
     * whole they held mounts back while the robot was free.
     */
    @Override
    public int exchangesUnderWayBesides(Collection<String> drives) {
        lock.lock();
        try {
            return mountsBesides(drives, null);
        } finally {
            lock.unlock();
        }
    }

    /**
     * True when fewer than {@code budget} mounts are under way besides those on {@code drives} and {@code drive}
     * ({@link #exchangesUnderWayBesides}); the mount that follows is noted by its own start (MOUNTING).
     */
    @Override
    public boolean reserveMount(String drive, Collection<String> drives, int budget) {
        lock.lock();
        try {
            return mountsBesides(drives, drive) < budget;
        } finally {
            lock.unlock();
        }
    }

    /**
     * A mount its caller gave up on (timed out or cancelled while moving) is not counted: it is no user's mount any
     * more, and a scheduler no longer counts it on its drive, so counting it here would count that drive's exchange
     * anew.
     */
    private int mountsBesides(Collection<String> besides, String also) {
        int n = 0;
        for (Drive d : drives.values())
            if (d.state == DriveState.MOUNTING && d.mount != null && !d.mount.abandoned
                    && !d.name.equals(also) && !besides.contains(d.name)) n++;
        return n;
    }

    @Override
    public CompletableFuture<Void> mount(String drive, String volume) {
        Objects.requireNonNull(volume, "volume");
        CompletableFuture<Void> f = new CompletableFuture<>();
        locked(() -> {
            Drive d = drive0(drive);
            if (d.state == DriveState.FAILED || d.state == DriveState.DISABLED) {
                fail(f, new TapeFailure(TapeFailure.Kind.DRIVE_FAILURE, drive, volume, "drive is " + d.state));
                return;
            }
            if (d.state != DriveState.EMPTY)
                throw new IllegalStateException("drive " + drive + " is " + d.state + " with " + d.volume + ", not empty");
            Instant now = clock.now();
            later(() -> events.mountStarted(drive, volume, now));
            if (faults.isMissing(volume)) {
                mountFailed(d, volume, f, new TapeFailure(TapeFailure.Kind.VOLUME_UNAVAILABLE, drive, volume,
                        "volume is not in the library"));
                return;
            }
            for (Drive o : drives.values())
                if (volume.equals(o.volume)) {
                    mountFailed(d, volume, f, new TapeFailure(TapeFailure.Kind.VOLUME_UNAVAILABLE, drive, volume,
                            "volume is in drive " + o.name + " (" + o.state + ")"));
                    return;
                }
            Mount m = new Mount(d, volume, f);
            d.mount = m;
            setState(d, DriveState.MOUNTING, volume);
            m.timeout = schedule(mountTimeout.toNanos(), () -> mountTimedOut(m));
            m.accessor = acquireAccessor(() -> {
                m.phase = Mount.MOVING;
                schedule(model.accessorMoveSeconds(), () -> {
                    releaseAccessor();
                    m.phase = Mount.LOADING;
                    if (faults.takeHang(volume)) { // never loads: the mount timeout ends it
                        if (m.timedOut) stuck(m);
                        return;
                    }
                    m.load = schedule(model.loadSeconds(), () -> mountLoaded(m));
                });
            });
        });
        f.whenComplete((v, e) -> {
            if (f.isCancelled()) locked(() -> mountCancelled(f));
        });
        return f;
    }

    @Override
    public ReadBatch read(String drive, List<SegmentRead> segments) {
        SimReadBatch batch = new SimReadBatch(List.copyOf(segments));
        if (log.isDebugEnabled()) { // what the scheduler asked for, to tell a file read twice from a list that held it twice
            StringBuilder ids = new StringBuilder();
            for (SegmentRead s : segments) ids.append(ids.isEmpty() ? "" : ",").append(s.fileId() < 0 ? "gap" : s.fileId());
            log.debug("library {}: read list on {}: {}", layout.name(), drive, ids);
        }
        locked(() -> {
            Drive d = drive0(drive);
            for (SegmentRead s : batch.segments)
                if (!Objects.equals(s.volume(), d.volume))
                    throw new IllegalArgumentException("segment of file " + s.fileName() + " is on volume " + s.volume()
                            + ", drive " + drive + " holds " + d.volume);
            batch.drive = d;
            enqueue(d, batch);
        });
        return batch;
    }

    /** A segment without a target only costs drive time (its bytes stream past). */
    @Override
    public boolean readsWithoutTarget() {
        return true;
    }

    /** A cancelled segment not yet started is skipped; one under way is broken off where the head is. */
    @Override
    public boolean dropsCancelledReads() {
        return true;
    }

    @Override
    public WriteBatch write(String drive, List<FileWrite> files) {
        SimWriteBatch batch = new SimWriteBatch(List.copyOf(files));
        locked(() -> {
            Drive d = drive0(drive);
            batch.drive = d;
            enqueue(d, batch);
        });
        return batch;
    }

    /**
     * Unloads the mounted volume and returns it to its slot. Reads or writes still queued or under way on
     * the drive are cancelled first.
     */
    @Override
    public CompletableFuture<Void> dismount(String drive) {
        CompletableFuture<Void> f = new CompletableFuture<>();
        locked(() -> {
            Drive d = drive0(drive);
            switch (d.state) {
                case FAILED, DISABLED -> fail(f, new TapeFailure(TapeFailure.Kind.DRIVE_FAILURE, drive, d.volume,
                        "drive is " + d.state + "; recover it first"));
                case EMPTY, MOUNTING, UNLOADING -> throw new IllegalStateException(
                        "drive " + drive + " is " + d.state + ", nothing mounted to dismount");
                default -> {
                    if (d.pendingDismount != null) throw new IllegalStateException("drive " + drive + " is already dismounting");
                    for (Job j : d.jobs) j.cancelAllLocked();
                    d.jobs.clear();
                    if (d.current == null) {
                        unload(d, f);
                    } else { // a read under way is broken off, a write under way finishes; then the unload
                        d.pendingDismount = f;
                        d.current.cancelAllLocked();
                    }
                }
            }
        });
        return f;
    }

    /**
     * The operator's recovery of a FAILED drive: its stuck cartridge (if any) is taken out by an accessor
     * and returned to its slot, and the drive is EMPTY again. Completes when done.
     */
    @Override
    public CompletableFuture<Void> recover(String drive) {
        CompletableFuture<Void> f = new CompletableFuture<>();
        locked(() -> {
            Drive d = drive0(drive);
            if (d.state != DriveState.FAILED)
                throw new IllegalStateException("drive " + drive + " is " + d.state + ", not FAILED");
            if (d.volume == null) {
                setState(d, DriveState.EMPTY, null);
                complete(f);
                return;
            }
            String volume = d.volume;
            acquireAccessor(() -> schedule(model.accessorMoveSeconds(), () -> {
                releaseAccessor();
                d.head = 0;
                d.bytesMoved = 0;
                setState(d, DriveState.EMPTY, null);
                Instant now = clock.now();
                later(() -> events.dismounted(drive, volume, now));
                complete(f);
            }));
        });
        return f;
    }

    /**
     * Takes an empty drive out of service (DISABLED) or back (EMPTY). A drive holding a volume is marked down
     * instead: the schedulers give it no new work and unload it, and it is DISABLED once empty; enabling it before
     * then cancels that.
     */
    @Override
    public void setEnabled(String drive, boolean enabled) {
        locked(() -> {
            Drive d = drive0(drive);
            boolean holding = d.state.holdsVolume();
            if (holding && d.down == enabled || enabled && d.down) { // a FAILED drive may be going down too
                d.down = !enabled;
                DriveStatus st = d.status();
                Instant now = clock.now();
                later(() -> events.driveChanged(layout.name(), st, now));
                return;
            }
            if (holding && !enabled) return; // already going down
            DriveState from = enabled ? DriveState.DISABLED : DriveState.EMPTY;
            if (d.state == (enabled ? DriveState.EMPTY : DriveState.DISABLED)) return;
            if (d.state != from) throw new IllegalStateException("drive " + drive + " is " + d.state + ", not " + from);
            setState(d, enabled ? DriveState.EMPTY : DriveState.DISABLED, null);
        });
    }

    /**
     * Declares how full a volume is (its end of data), for volumes whose content exists only in the
     * catalogue; writes append there. Volumes start blank, or at the end of what was written to them.
     */
    public void setEndOfData(String volume, long bytes) {
        if (bytes < 0 || bytes > model.capacityBytes())
            throw new IllegalArgumentException("end of data must be within 0.." + model.capacityBytes() + ", was " + bytes);
        locked(() -> volume0(volume).endOfData = bytes);
    }

    /** The volume's end of data (where the next write goes). */
    public long endOfData(String volume) {
        lock.lock();
        try {
            return volume0(volume).endOfData;
        } finally {
            lock.unlock();
        }
    }

    /** What the library has done so far. */
    public LibraryStats stats() {
        lock.lock();
        try {
            double now = seconds();
            Map<String, LibraryStats.DriveStats> per = new LinkedHashMap<>();
            for (Drive d : drives.values())
                per.put(d.name, new LibraryStats.DriveStats(d.mounts,
                        d.busySeconds + (d.busySince >= 0 ? now - d.busySince : 0),
                        d.locateSeconds, d.readSeconds, d.bytesRead));
            return new LibraryStats(mounts, dismounts, segmentsRead, bytesRead, segmentsFailed, filesWritten,
                    bytesWritten, locateSeconds, readSeconds, writeSeconds, accessorBusySeconds, accessorWaitSeconds,
                    per);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void close() {
        if (io != null) io.shutdownNow();
    }

    // ---------------------------------------------------------------- locking and time

    /** Runs {@code body} under the lock, then (lock released) the completions and events it queued. */
    private void locked(Runnable body) {
        List<Runnable> todo = List.of();
        lock.lock();
        try {
            body.run();
        } finally {
            // Nested (a future completed synchronously inside a locked body): the outermost call runs what
            // was queued once the lock is really free; running it here, still holding the lock, would call
            // back into the scheduler under the library's lock (a lock-order deadlock with mount/read).
            // Only a non-empty list is taken: an empty one stays the shared list, and another thread may
            // queue into it and drain it as soon as the lock is free; taken too, it was drained twice here
            // (a read told twice: the fault suite counted a file read twice by one process).
            if (lock.getHoldCount() == 1 && !after.isEmpty()) {
                todo = after;
                after = new ArrayList<>();
            }
            lock.unlock();
        }
        if (todo.isEmpty()) return;
        // A completion may call back into the library; what that queues runs after what is already
        // queued, so listeners see transitions in the order they happened.
        ArrayDeque<Runnable> queue = draining.get();
        if (queue != null) {
            queue.addAll(todo);
            return;
        }
        queue = new ArrayDeque<>(todo);
        draining.set(queue);
        try {
            Runnable r;
            while ((r = queue.poll()) != null) {
                try {
                    r.run();
                } catch (RuntimeException e) { // a listener's bug must not stop the library
                    log.warn("library {}: listener failed", layout.name(), e);
                }
            }
        } finally {
            draining.remove();
        }
    }

    /** Queues {@code r} to run once the lock is released (under the lock). */
    private void later(Runnable r) {
        after.add(r);
    }

    private EventClock.Scheduled schedule(double seconds, Runnable task) {
        return schedule(TapeModel.nanos(seconds), task);
    }

    private EventClock.Scheduled schedule(long nanos, Runnable task) {
        Runnable body = () -> locked(task);
        if (clock instanceof VirtualClock v) return v.scheduleNanos(nanos, body);
        return clock.schedule(Duration.ofNanos(nanos), body);
    }

    private double seconds() {
        if (clock instanceof VirtualClock v) return v.elapsedSeconds() - t0Seconds;
        return Duration.between(t0, clock.now()).toNanos() / 1e9;
    }

    private void complete(CompletableFuture<Void> f) {
        later(() -> f.complete(null));
    }

    private void fail(CompletableFuture<?> f, Throwable t) {
        later(() -> f.completeExceptionally(t));
    }

    // ---------------------------------------------------------------- drives and accessors

    private Drive drive0(String name) {
        Drive d = drives.get(name);
        if (d == null) throw new IllegalArgumentException("no drive '" + name + "' in library " + layout.name()
                + " (drives: " + layout.drives() + ")");
        return d;
    }

    private void setState(Drive d, DriveState state, String volume) {
        if (state == DriveState.EMPTY && d.down) state = DriveState.DISABLED; // taken down while it held a volume
        if (state == DriveState.DISABLED || state == DriveState.EMPTY) d.down = false;
        if (d.state == state && Objects.equals(d.volume, volume)) return;
        boolean wasBusy = busy(d.state), isBusy = busy(state);
        if (wasBusy != isBusy) {
            double now = seconds();
            if (isBusy) d.busySince = now;
            else {
                d.busySeconds += now - d.busySince;
                d.busySince = -1;
            }
        }
        d.state = state;
        d.volume = volume;
        DriveStatus s = d.status();
        Instant now = clock.now();
        later(() -> events.driveChanged(layout.name(), s, now));
    }

    private static boolean busy(DriveState s) {
        return switch (s) {
            case MOUNTING, LOCATING, READING, WRITING, UNLOADING -> true;
            default -> false;
        };
    }

    private void restore(DriveStatus s) {
        Drive d = drives.get(s.drive());
        if (d == null) return; // a drive no longer configured
        // The cartridge is where the last run left it; what was under way did not survive the restart.
        DriveState state = switch (s.state()) {
            case FAILED, DISABLED -> s.state();
            // a cartridge move cut off: the simulated robot puts it back in its slot (it was taken for mounted)
            case MOUNTING, UNLOADING -> DriveState.EMPTY;
            default -> s.volume() == null ? DriveState.EMPTY : DriveState.MOUNTED_IDLE;
        };
        if (s.downRequested() && state == DriveState.EMPTY) state = DriveState.DISABLED; // taken down, and now empty
        // a FAILED drive keeps the request: recovered, it is DISABLED, as without the restart
        d.down = s.downRequested() && state != DriveState.DISABLED;
        d.state = state;
        d.volume = state == DriveState.EMPTY || state == DriveState.DISABLED ? null : s.volume();
        d.bytesMoved = d.volume == null ? 0 : s.bytesMoved();
        d.head = 0; // position unknown after a restart: the next locate is costed from BOT
    }

    /** Runs {@code onGranted} (under the lock) once an accessor is free, in FIFO order. */
    private AccessorRequest acquireAccessor(Runnable onGranted) {
        AccessorRequest r = new AccessorRequest(onGranted, seconds());
        if (freeAccessors > 0 && accessorQueue.isEmpty()) {
            freeAccessors--;
            grant(r);
        } else {
            accessorQueue.add(r);
        }
        return r;
    }

    private void grant(AccessorRequest r) {
        r.granted = true;
        accessorWaitSeconds += seconds() - r.requestedAt;
        accessorBusySeconds += model.accessorMoveSeconds();
        r.onGranted.run();
    }

    private void releaseAccessor() {
        AccessorRequest next;
        while ((next = accessorQueue.poll()) != null) {
            if (next.withdrawn) continue;
            grant(next); // the accessor goes straight to the next move
            return;
        }
        freeAccessors++;
    }

    // ---------------------------------------------------------------- mount

    private void mountFailed(Drive d, String volume, CompletableFuture<Void> f, TapeFailure failure) {
        Instant now = clock.now();
        later(() -> events.mountFinished(d.name, volume, now, failure));
        fail(f, failure);
    }

    private void mountLoaded(Mount m) {
        Drive d = m.drive;
        if (d.mount != m) return;
        m.phase = Mount.DONE;
        m.timeout.cancel();
        d.mount = null;
        d.head = 0;
        d.bytesMoved = 0;
        d.mounts++;
        mounts++;
        setState(d, DriveState.MOUNTED_IDLE, m.volume);
        Instant now = clock.now();
        later(() -> events.mountFinished(d.name, m.volume, now, null));
        if (m.abandoned) unload(d, null); // the caller gave up on this mount; put the tape back
        else complete(m.future);
    }

    private void mountTimedOut(Mount m) {
        Drive d = m.drive;
        if (d.mount != m || m.phase == Mount.DONE) return;
        TapeFailure failure = new TapeFailure(TapeFailure.Kind.TIMEOUT, d.name, m.volume,
                "mount did not complete within " + mountTimeout);
        switch (m.phase) {
            case Mount.WAITING -> { // never got an accessor: withdraw, nothing moved
                m.accessor.withdrawn = true;
                d.mount = null;
                setState(d, DriveState.EMPTY, null);
            }
            case Mount.MOVING -> { // the move finishes, the load goes on; the tape is put back when it is loaded
                m.abandoned = true;
                m.timedOut = true;
            }
            default -> stuck(m); // the drive did not load the cartridge in time
        }
        mountFailed(d, m.volume, m.future, failure);
    }

    /** A load that never finished: the cartridge is stuck in a failed drive until {@link #recover}. */
    private void stuck(Mount m) {
        if (m.load != null) m.load.cancel();
        m.phase = Mount.DONE;
        m.drive.mount = null;
        setState(m.drive, DriveState.FAILED, m.volume);
    }

    private void mountCancelled(CompletableFuture<Void> f) {
        for (Drive d : drives.values()) {
            Mount m = d.mount;
            if (m == null || m.future != f) continue;
            if (m.phase == Mount.WAITING) {
                m.accessor.withdrawn = true;
                m.timeout.cancel();
                d.mount = null;
                setState(d, DriveState.EMPTY, null);
            } else {
                m.abandoned = true; // loads, then goes straight back to its slot
            }
        }
    }

    // ---------------------------------------------------------------- dismount

    /** Rewind and unthread, then an accessor moves the cartridge out; completes {@code f} (may be null). */
    private void unload(Drive d, CompletableFuture<Void> f) {
        String volume = d.volume;
        setState(d, DriveState.UNLOADING, volume);
        schedule(model.unloadSeconds(d.bytesMoved), () -> acquireAccessor(() ->
                schedule(model.accessorMoveSeconds(), () -> {
                    releaseAccessor();
                    d.head = 0;
                    d.bytesMoved = 0;
                    dismounts++;
                    setState(d, DriveState.EMPTY, null);
                    Instant now = clock.now();
                    later(() -> events.dismounted(d.name, volume, now));
                    if (f != null) complete(f);
                })));
    }

    // ---------------------------------------------------------------- jobs (read and write lists)

    private void enqueue(Drive d, Job job) {
        switch (d.state) {
            case FAILED, DISABLED -> {
                job.failAll(new TapeFailure(TapeFailure.Kind.DRIVE_FAILURE, d.name, d.volume, "drive is " + d.state));
                return;
            }
            case EMPTY, MOUNTING, UNLOADING -> throw new IllegalStateException(
                    "drive " + d.name + " is " + d.state + "; mount a volume first");
            default -> {
                if (d.pendingDismount != null) throw new IllegalStateException("drive " + d.name + " is dismounting");
            }
        }
        d.jobs.add(job);
        if (d.current == null) nextJob(d);
    }

    private void nextJob(Drive d) {
        d.current = d.jobs.poll();
        while (d.current != null && d.down) { // taken down: a list not yet started is refused, the drive is unloaded
            d.current.failAll(new TapeFailure(TapeFailure.Kind.DRIVE_DOWN, d.name, d.volume,
                    "an operator is taking the drive down; list not started"));
            d.current = d.jobs.poll();
        }
        if (d.current == null) {
            if (d.state == DriveState.FAILED) return;
            if (d.pendingDismount != null) {
                CompletableFuture<Void> f = d.pendingDismount;
                d.pendingDismount = null;
                unload(d, f);
            } else {
                setState(d, DriveState.MOUNTED_IDLE, d.volume);
            }
            return;
        }
        d.current.step();
    }

    /** The drive breaks: the item under way and everything queued on it fail; the tape stays stuck in it. */
    private void driveFailed(Drive d) {
        if (d.timer != null) d.timer.cancel();
        d.timer = null;
        setState(d, DriveState.FAILED, d.volume);
        TapeFailure failure = new TapeFailure(TapeFailure.Kind.DRIVE_FAILURE, d.name, d.volume,
                "drive failed during a transfer; volume is stuck in it until recovered");
        Job cur = d.current;
        d.current = null;
        if (cur != null) cur.failAll(failure);
        for (Job j : d.jobs) j.failAll(failure);
        d.jobs.clear();
        if (d.pendingDismount != null) fail(d.pendingDismount, failure);
        d.pendingDismount = null;
    }

    /** A read or write list on one drive. */
    private abstract sealed class Job permits SimReadBatch, SimWriteBatch {
        Drive drive;

        /** Starts the next item, or hands the drive to the next job. */
        abstract void step();

        abstract void failAll(TapeFailure failure);

        abstract void cancelAllLocked();
    }

    private final class SimReadBatch extends Job implements ReadBatch {
        final List<SegmentRead> segments;
        final Map<SegmentRead, CompletableFuture<ReadResult>> futures = new IdentityHashMap<>();
        // Outcome decided under the lock; its future is told once the lock is free, so isDone() may still be
        // false: a drive failure or cancel arriving meanwhile must not overturn it (a read reported done and
        // then failed would have its verified copy thrown away and the file read again).
        final Map<SegmentRead, Boolean> decided = new IdentityHashMap<>();
        final CompletableFuture<Void> done;
        int next; // index of the next segment to start
        SegmentRead current;
        double currentStartSeconds; // when the current segment's transfer began
        boolean currentTransfer; // locating (false) or reading (true)
        double currentLocate;
        Instant currentStartedAt;

        SimReadBatch(List<SegmentRead> segments) {
            this.segments = segments;
            CompletableFuture<?>[] all = new CompletableFuture<?>[segments.size()];
            for (int i = 0; i < segments.size(); i++) {
                CompletableFuture<ReadResult> f = new CompletableFuture<>();
                if (futures.putIfAbsent(segments.get(i), f) != null)
                    throw new IllegalArgumentException("segment listed twice: " + segments.get(i));
                all[i] = f;
            }
            this.done = CompletableFuture.allOf(all).handle((v, e) -> null);
        }

        @Override
        public CompletableFuture<ReadResult> result(SegmentRead segment) {
            CompletableFuture<ReadResult> f = futures.get(segment);
            if (f == null) throw new IllegalArgumentException("segment not in this batch: " + segment);
            return f;
        }

        @Override
        public void cancel(SegmentRead segment) {
            CompletableFuture<ReadResult> f = result(segment);
            locked(() -> {
                if (f.isDone() || decided.containsKey(segment)) return;
                decided.put(segment, true); // dropped: its future is told once the lock is free
                later(() -> f.cancel(false));
                if (segment == current) abandonCurrent();
            });
        }

        @Override
        public void cancelAll() {
            locked(this::cancelAllLocked);
        }

        @Override
        void cancelAllLocked() {
            for (SegmentRead s : segments) {
                CompletableFuture<ReadResult> f = futures.get(s);
                if (!f.isDone() && decided.put(s, true) == null) later(() -> f.cancel(false));
            }
            next = segments.size();
            if (current != null) abandonCurrent();
            else if (drive != null && drive.current != this) drive.jobs.remove(this);
        }

        @Override
        public CompletableFuture<Void> done() {
            return done;
        }

        /** Stops the segment under way; the head stays where it got to. */
        private void abandonCurrent() {
            Drive d = drive;
            if (d.timer != null) d.timer.cancel();
            d.timer = null;
            if (currentTransfer) {
                double secs = seconds() - currentStartSeconds;
                long moved = Math.min(current.sizeBytes(), (long) (secs * model.bytesPerSecond()));
                d.head = current.offsetBytes() + moved;
                d.bytesMoved += moved;
            } else {
                d.head = current.offsetBytes(); // treat a broken-off locate as arrived
            }
            current = null;
            step();
        }

        @Override
        void step() {
            Drive d = drive;
            if (d.current != this) return;
            SegmentRead s = null;
            while (next < segments.size()) {
                SegmentRead c = segments.get(next++);
                if (!futures.get(c).isDone() && !decided.containsKey(c)) {
                    s = c;
                    break;
                }
            }
            if (s == null) {
                current = null;
                nextJob(d);
                return;
            }
            current = s;
            currentTransfer = false;
            currentStartedAt = clock.now();
            double locate = model.locateSeconds(d.head, s.offsetBytes());
            currentLocate = locate;
            if (locate > 0) {
                setState(d, DriveState.LOCATING, d.volume);
                d.locateSeconds += locate;
                locateSeconds += locate;
                SegmentRead seg = s;
                d.timer = schedule(locate, () -> transfer(seg));
            } else {
                transfer(s);
            }
        }

        private void transfer(SegmentRead s) {
            Drive d = drive;
            if (current != s) return;
            currentTransfer = true;
            currentStartSeconds = seconds();
            setState(d, DriveState.READING, d.volume);
            double secs = model.transferSeconds(s.sizeBytes());
            if (faults.takeDriveFailure(d.name)) {
                d.timer = schedule(secs / 2, () -> {
                    if (current == s) driveFailed(d);
                });
                return;
            }
            boolean bad = faults.isBad(s.volume(), s.fileName());
            boolean copies = s.target() != null && !bad;
            String volume = d.volume;
            CompletableFuture<Long> copy = !copies || copyOnClockThread ? null
                    : CompletableFuture.supplyAsync(() -> copyOut(volume, s), io);
            d.timer = schedule(secs, () -> {
                if (current != s) return;
                d.timer = null;
                if (copy != null) {
                    copy.whenComplete((adler, err) -> locked(() -> {
                        if (current == s) finish(s, bad, adler == null ? -1 : adler, err);
                    }));
                    return;
                }
                long adler = -1;
                Throwable err = null;
                if (copies) {
                    try {
                        adler = copyOut(volume, s);
                    } catch (RuntimeException e) {
                        err = e;
                    }
                }
                finish(s, bad, adler, err);
            });
        }

        private void finish(SegmentRead s, boolean bad, long adler, Throwable copyError) {
            Drive d = drive;
            decided.put(s, true);
            double secs = model.transferSeconds(s.sizeBytes());
            d.head = s.offsetBytes() + s.sizeBytes();
            d.bytesMoved += s.sizeBytes();
            d.readSeconds += secs;
            readSeconds += secs;
            CompletableFuture<ReadResult> f = futures.get(s);
            Instant now = clock.now();
            if (bad) {
                segmentsFailed++;
                TapeFailure failure = new TapeFailure(TapeFailure.Kind.MEDIA_ERROR, d.name, s.volume(),
                        "unrecoverable read error in file " + s.fileName() + " at offset " + s.offsetBytes());
                later(() -> events.segmentFailed(d.name, s, failure, now));
                fail(f, failure);
            } else if (copyError != null) {
                segmentsFailed++;
                Throwable e = copyError instanceof java.util.concurrent.CompletionException c && c.getCause() != null
                        ? c.getCause() : copyError;
                fail(f, e);
            } else {
                segmentsRead++;
                bytesRead += s.sizeBytes();
                d.bytesRead += s.sizeBytes();
                ReadResult r = new ReadResult(s, adler, currentLocate, currentStartedAt, now);
                later(() -> events.segmentRead(d.name, r));
                later(() -> f.complete(r));
            }
            current = null;
            step();
        }

        @Override
        void failAll(TapeFailure failure) {
            Instant now = clock.now();
            for (SegmentRead s : segments) {
                CompletableFuture<ReadResult> f = futures.get(s);
                if (f.isDone() || decided.put(s, true) != null) continue;
                segmentsFailed++;
                later(() -> events.segmentFailed(failure.drive(), s, failure, now));
                fail(f, failure);
            }
            next = segments.size();
            current = null;
        }
    }

    private final class SimWriteBatch extends Job implements WriteBatch {
        final List<FileWrite> files;
        final Map<FileWrite, CompletableFuture<WrittenSegment>> futures = new IdentityHashMap<>();
        final CompletableFuture<Void> done;
        int next;
        FileWrite current;

        SimWriteBatch(List<FileWrite> files) {
            this.files = files;
            CompletableFuture<?>[] all = new CompletableFuture<?>[files.size()];
            for (int i = 0; i < files.size(); i++) {
                CompletableFuture<WrittenSegment> f = new CompletableFuture<>();
                if (futures.putIfAbsent(files.get(i), f) != null)
                    throw new IllegalArgumentException("file listed twice: " + files.get(i));
                all[i] = f;
            }
            this.done = CompletableFuture.allOf(all).handle((v, e) -> null);
        }

        @Override
        public CompletableFuture<WrittenSegment> result(FileWrite file) {
            CompletableFuture<WrittenSegment> f = futures.get(file);
            if (f == null) throw new IllegalArgumentException("file not in this batch: " + file);
            return f;
        }

        @Override
        public void cancelAll() {
            locked(this::cancelAllLocked);
        }

        @Override
        void cancelAllLocked() {
            // the file under way finishes (a half-written file would leave a hole); the rest are dropped
            for (int i = next; i < files.size(); i++) {
                CompletableFuture<WrittenSegment> f = futures.get(files.get(i));
                if (!f.isDone()) later(() -> f.cancel(false));
            }
            next = files.size();
            if (current == null && drive != null && drive.current != this) drive.jobs.remove(this);
        }

        @Override
        public CompletableFuture<Void> done() {
            return done;
        }

        @Override
        void step() {
            Drive d = drive;
            if (d.current != this) return;
            FileWrite w = null;
            while (next < files.size()) {
                FileWrite c = files.get(next++);
                if (!futures.get(c).isDone()) {
                    w = c;
                    break;
                }
            }
            if (w == null) {
                current = null;
                nextJob(d);
                return;
            }
            current = w;
            SimVolume v = volume0(d.volume);
            CompletableFuture<WrittenSegment> f = futures.get(w);
            if (v.endOfData + w.sizeBytes() > model.capacityBytes()) {
                segmentsFailed++;
                fail(f, new TapeFailure(TapeFailure.Kind.VOLUME_UNAVAILABLE, d.name, d.volume,
                        "volume full: " + w.sizeBytes() + " bytes do not fit after " + v.endOfData));
                current = null;
                step();
                return;
            }
            long offset = v.endOfData;
            double locate = model.locateSeconds(d.head, offset);
            FileWrite file = w;
            if (locate > 0) {
                setState(d, DriveState.LOCATING, d.volume);
                d.locateSeconds += locate;
                locateSeconds += locate;
                d.timer = schedule(locate, () -> transfer(file, offset));
            } else {
                transfer(file, offset);
            }
        }

        private void transfer(FileWrite w, long offset) {
            Drive d = drive;
            setState(d, DriveState.WRITING, d.volume);
            double secs = model.transferSeconds(w.sizeBytes());
            if (faults.takeDriveFailure(d.name)) {
                d.timer = schedule(secs / 2, () -> driveFailed(d));
                return;
            }
            String volume = d.volume;
            CompletableFuture<Long> copy = copyOnClockThread ? null
                    : CompletableFuture.supplyAsync(() -> copyIn(volume, offset, w), io);
            d.timer = schedule(secs, () -> {
                d.timer = null;
                if (copy == null) {
                    try {
                        finish(w, offset, copyIn(volume, offset, w), null);
                    } catch (RuntimeException e) {
                        finish(w, offset, -1, e);
                    }
                } else {
                    copy.whenComplete((adler, err) -> locked(() -> finish(w, offset, adler == null ? -1 : adler, err)));
                }
            });
        }

        private void finish(FileWrite w, long offset, long adler, Throwable err) {
            Drive d = drive;
            if (d.state == DriveState.FAILED) return;
            CompletableFuture<WrittenSegment> f = futures.get(w);
            double secs = model.transferSeconds(w.sizeBytes());
            d.head = offset + w.sizeBytes();
            d.bytesMoved += w.sizeBytes();
            writeSeconds += secs;
            if (err != null) {
                segmentsFailed++;
                fail(f, err instanceof java.util.concurrent.CompletionException c && c.getCause() != null ? c.getCause() : err);
            } else {
                SimVolume v = volume0(d.volume);
                v.endOfData = offset + w.sizeBytes();
                filesWritten++;
                bytesWritten += w.sizeBytes();
                WrittenSegment ws = new WrittenSegment(w, d.volume, offset, adler, true); // summed as it was copied in
                Instant now = clock.now();
                later(() -> events.fileWritten(d.name, ws, now));
                later(() -> f.complete(ws));
            }
            current = null;
            step();
        }

        @Override
        void failAll(TapeFailure failure) {
            for (FileWrite w : files) {
                CompletableFuture<WrittenSegment> f = futures.get(w);
                if (f.isDone()) continue;
                segmentsFailed++;
                fail(f, failure);
            }
            next = files.size();
            current = null;
        }
    }

    // ---------------------------------------------------------------- bytes

    /** Volume state: end of data and the files written through this library (offset -> file). */
    private static final class SimVolume {
        long endOfData;
        final TreeMap<Long, Path> written = new TreeMap<>();
    }

    private SimVolume volume0(String label) {
        return volumes.computeIfAbsent(label, l -> {
            SimVolume v = new SimVolume();
            Path dir = root.resolve(l);
            if (Files.isDirectory(dir)) {
                try (Stream<Path> files = Files.list(dir)) {
                    for (Path p : (Iterable<Path>) files::iterator) {
                        String n = p.getFileName().toString();
                        int dash = n.indexOf('-');
                        if (dash <= 0 || n.endsWith(".part")) continue;
                        long off = Long.parseLong(n.substring(0, dash));
                        v.written.put(off, p);
                        v.endOfData = Math.max(v.endOfData, off + Files.size(p));
                    }
                } catch (IOException | NumberFormatException e) {
                    throw new IllegalStateException("cannot read simulated volume directory " + dir + ": " + e, e);
                }
            }
            return v;
        });
    }

    /** The file's bytes with the middle one flipped, as a drive returning silently bad data would; their Adler32. */
    private static long writeCorrupted(SegmentRead s) throws IOException {
        long at = s.sizeBytes() / 2;
        Adler32 sum = new Adler32();
        OutputStream flip = new OutputStream() {
            long pos;
            final OutputStream out = Files.newOutputStream(s.target());

            @Override
            public void write(int b) throws IOException {
                write(new byte[] {(byte) b}, 0, 1);
            }

            @Override
            public void write(byte[] b, int off, int len) throws IOException {
                byte[] copy = java.util.Arrays.copyOfRange(b, off, off + len);
                if (at >= pos && at < pos + len) copy[(int) (at - pos)] ^= 0x5a;
                pos += len;
                sum.update(copy, 0, len);
                out.write(copy, 0, len);
            }

            @Override
            public void close() throws IOException {
                out.close();
            }
        };
        try (flip) {
            SimulatedContent.write(s.fileName(), s.sizeBytes(), flip);
        }
        return sum.getValue();
    }

    /** Copies the segment's bytes to its target; returns their Adler32 (computed while streaming). */
    private long copyOut(String volume, SegmentRead s) {
        Path written;
        lock.lock();
        try {
            written = volume0(volume).written.get(s.offsetBytes());
        } finally {
            lock.unlock();
        }
        try {
            Files.createDirectories(s.target().toAbsolutePath().getParent());
            long adler;
            if (written != null && Files.size(written) == s.sizeBytes()) {
                Adler32 sum = new Adler32();
                byte[] buf = new byte[1 << 16];
                try (InputStream in = Files.newInputStream(written); OutputStream out = Files.newOutputStream(s.target())) {
                    int n;
                    while ((n = in.read(buf)) > 0) {
                        out.write(buf, 0, n);
                        sum.update(buf, 0, n);
                    }
                }
                adler = sum.getValue();
            } else if (faults.isCorrupt(volume, s.fileName())) {
                adler = writeCorrupted(s);
            } else {
                adler = SimulatedContent.writeTo(s.fileName(), s.sizeBytes(), s.target());
            }
            // on disk before the segment is reported (the cache then commits it as there), in this writing thread
            try {
                durable.force(s.target());
            } catch (IOException e) {
                throw new Durable.NotForced(s.target(), e); // the cache disk's fault: counted against its directory
            }
            return adler;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write segment of " + s.fileName() + " to " + s.target(), e);
        }
    }

    /** Stores a written file's bytes under root/volume/offset-fileId; returns their Adler32. */
    private long copyIn(String volume, long offset, FileWrite w) {
        Path dir = root.resolve(volume);
        Path dest = dir.resolve(offset + "-" + w.fileId());
        Path part = dir.resolve(offset + "-" + w.fileId() + ".part");
        try {
            Files.createDirectories(dir);
            if (Files.size(w.source()) != w.sizeBytes())
                throw new IllegalArgumentException("file " + w.fileName() + " has " + Files.size(w.source())
                        + " bytes in " + w.source() + ", expected " + w.sizeBytes());
            Adler32 sum = new Adler32();
            byte[] buf = new byte[1 << 16];
            boolean corrupt = faults.isCorruptWrite(w.fileName());
            try (InputStream in = Files.newInputStream(w.source()); OutputStream out = Files.newOutputStream(part)) {
                int n;
                while ((n = in.read(buf)) > 0) {
                    // one bad byte, as a drive writing silently bad data: the copy's Adler32 always differs. (One flip
                    // per block did not: with java.util.Random content the flips cancelled out in ~40% of files.)
                    if (corrupt) {
                        buf[0] ^= 0x5a;
                        corrupt = false;
                    }
                    out.write(buf, 0, n);
                    sum.update(buf, 0, n);
                }
            }
            Files.move(part, dest, java.nio.file.StandardCopyOption.REPLACE_EXISTING,
                    java.nio.file.StandardCopyOption.ATOMIC_MOVE);
            lock.lock();
            try {
                volume0(volume).written.put(offset, dest);
            } finally {
                lock.unlock();
            }
            return sum.getValue();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot store " + w.fileName() + " on simulated volume " + volume, e);
        }
    }

    // ---------------------------------------------------------------- records of state

    private static final class Drive {
        final String name;
        DriveState state = DriveState.EMPTY;
        String volume;
        /** An operator disabled it while it held a volume: DISABLED instead of EMPTY once unloaded. */
        boolean down;
        long head;
        long bytesMoved;
        Mount mount;
        Job current;
        CompletableFuture<Void> pendingDismount;
        final ArrayDeque<Job> jobs = new ArrayDeque<>();
        EventClock.Scheduled timer;
        long mounts;
        long bytesRead;
        double busySince = -1, busySeconds, locateSeconds, readSeconds;

        Drive(String name) {
            this.name = name;
        }

        DriveStatus status() {
            return new DriveStatus(name, state, volume, bytesMoved, down);
        }
    }

    private static final class Mount {
        static final int WAITING = 0, MOVING = 1, LOADING = 2, DONE = 3;
        final Drive drive;
        final String volume;
        final CompletableFuture<Void> future;
        int phase = WAITING;
        boolean abandoned;
        boolean timedOut;
        AccessorRequest accessor;
        EventClock.Scheduled timeout;
        EventClock.Scheduled load;

        Mount(Drive drive, String volume, CompletableFuture<Void> future) {
            this.drive = drive;
            this.volume = volume;
            this.future = future;
        }
    }

    private static final class AccessorRequest {
        final Runnable onGranted;
        final double requestedAt;
        boolean granted;
        boolean withdrawn;

        AccessorRequest(Runnable onGranted, double requestedAt) {
            this.onGranted = onGranted;
            this.requestedAt = requestedAt;
        }
    }
}
