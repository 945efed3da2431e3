package dev.stagehand.tape;

import dev.stagehand.catalog.Adler32Text;
import dev.stagehand.platform.Durable;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.Adler32;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The driver for real HSMs: every operation calls a site-provided executable (HPSS, TSM/ENDIT, CTA or a
 * robot's own tools behind it). A read-list call gets one file listing the ordered segments of one volume,
 * so the HSM can stream them in one go; it reports each file on its standard output as it lands, so each
 * segment completes on its own. Protocol (config/examples/script-driver/README.md):
 *
 * <pre>
 * mount     DRIVE VOLUME             exit 0 when the volume is loaded
 * read-list DRIVE VOLUME LIST        LIST lines: fileId TAB offset TAB size TAB target TAB name
 *                                    stdout: OK fileId [adler32hex] | ERR fileId KIND message
 *                                    (the target is summed here; a reported adler32 must match it)
 * write     DRIVE VOLUME LIST        LIST lines: fileId TAB size TAB source TAB name
 *                                    stdout: OK fileId offset [adler32hex] | ERR fileId KIND message
 *                                    (no adler32: the source's sum, unverified; or refused, see write-checksum)
 *                                    env STAGEHAND_READ_METADATA (only when a file has any): a file of
 *                                    lines fileId TAB json, the client's targetedMetadata for this site
 * dismount  DRIVE VOLUME             exit 0 when the volume is back in its slot
 * exit codes: 0 ok, 2 MEDIA_ERROR, 3 DRIVE_FAILURE, 4 VOLUME_UNAVAILABLE, 5 TIMEOUT, other DRIVE_FAILURE
 * </pre>
 *
 * A call that runs past its time limit, or whose list is cancelled, is killed with its children. Files the
 * script did not report fail with the kind of its exit code. Times are real time.
 *
 * <p>One drive runs one call at a time. Files complete as the script reports them, but the drive is busy
 * until the script has exited: a read, write or dismount asked meanwhile (the caller saw the last file land
 * while the script still tidies up) waits for it and then starts; a list's {@link ReadBatch#done()} completes
 * only once the drive has been handed back.
 */
public final class ScriptLibrary implements TapeLibrary {

    private static final Logger log = LoggerFactory.getLogger(ScriptLibrary.class);

    /** Environment variable naming the read-list's metadata side file. */
    public static final String METADATA_ENV = "STAGEHAND_READ_METADATA";

    private final LibraryLayout layout;
    private final TapeProperties.Script cfg;
    private final LibraryEvents events;
    /** Forces each file read to disk before it is reported: the cache's commit then records it as there. */
    private final Durable durable;
    private final Map<String, DriveStatus> drives = new LinkedHashMap<>();
    /** Drives an operator disabled while they held a volume: DISABLED instead of EMPTY once unloaded. */
    private final java.util.Set<String> down = new java.util.HashSet<>();
    /** Per drive, the end of the last list call or dismount asked of it: the next one starts after it. */
    private final Map<String, CompletableFuture<?>> lastAsked = new HashMap<>();
    private final AtomicLong calls = new AtomicLong();
    /** Calls that timed out in a row this many times say the HSM does not answer; one may just be a slow list. */
    static final int TIMEOUTS_UNREACHABLE = 3;
    private CallResult lastCall;
    private int timeoutsInRow;

    /**
     * How the most recent site-script call ended, for the health check: a script that cannot be started, or
     * calls that time out {@link #TIMEOUTS_UNREACHABLE} times in a row, mean the library is not reachable.
     *
     * @param command mount, read-list, write or dismount
     * @param outcome ok, failed (a non-zero exit: the script answered), timed-out, cancelled or not-run
     * @param exit    the exit code (-1 when there was none)
     * @param failure the failure message, or null
     * @param at      when the call ended
     */
    public record CallResult(String command, String drive, String volume, String outcome, int exit, String failure,
                             Instant at) {
        /** Whether the site's library answered: it ran and finished within its limit. */
        public boolean reachable() {
            return !outcome.equals("not-run") && !outcome.equals("timed-out");
        }
    }

    /** The most recent call's result, or null when no script has run yet. */
    public synchronized CallResult lastCall() {
        return lastCall;
    }

    /** Calls that timed out since the last one the HSM answered (a cancelled call says nothing either way). */
    public synchronized int timeoutsInRow() {
        return timeoutsInRow;
    }

    /**
     * Whether the library can be reached, as far as the calls tell: the last script could be started, and not
     * {@link #TIMEOUTS_UNREACHABLE} calls in a row have timed out. A single read list over its 12 h limit (a slow
     * list, a tape read at a crawl) used to mark the library down until the next call answered.
     */
    public synchronized boolean reachable() {
        return lastCall == null || !lastCall.outcome().equals("not-run") && timeoutsInRow < TIMEOUTS_UNREACHABLE;
    }

    private synchronized void noteCall(CallResult r) {
        lastCall = r;
        switch (r.outcome()) {
            case "timed-out" -> timeoutsInRow++;
            case "ok", "failed" -> timeoutsInRow = 0;
            default -> { } // not-run is down by itself; cancelled tells nothing
        }
    }

    public ScriptLibrary(LibraryLayout layout, TapeProperties.Script cfg, LibraryEvents events,
            Collection<DriveStatus> persisted) {
        this(layout, cfg, events, persisted, Durable.FSYNC);
    }

    /** With another way to force files read to disk (tests). */
    ScriptLibrary(LibraryLayout layout, TapeProperties.Script cfg, LibraryEvents events,
            Collection<DriveStatus> persisted, Durable durable) {
        this.layout = layout;
        this.cfg = cfg;
        this.events = events;
        this.durable = durable;
        for (String name : List.of("mount", "read-list", "write", "dismount")) {
            List<String> cmd = command(name);
            if (cmd.isEmpty())
                throw new IllegalArgumentException("stagehand.tape.script." + name + " is not set: the script driver needs"
                        + " a command for each of mount, read-list, write and dismount");
        }
        for (String d : layout.drives()) drives.put(d, new DriveStatus(d, DriveState.EMPTY, null, 0));
        for (DriveStatus s : persisted)
            if (drives.containsKey(s.drive())) keep(restored(s));
    }

    /** A drive as persisted by an instance that has stopped (this one before a restart, or another sharing the library). */
    private DriveStatus restored(DriveStatus s) {
        DriveStatus r = restored0(s);
        if (!s.downRequested()) return r;
        // taken down while it held a volume: still going down, or down once empty. A drive FAILED (its mount or
        // dismount cut off by the stop, too) keeps the request: recovered, it is DISABLED, as without the restart
        if (r.state() == DriveState.EMPTY) return new DriveStatus(r.drive(), DriveState.DISABLED, null, 0);
        if (r.state() == DriveState.DISABLED) return r;
        return new DriveStatus(r.drive(), r.state(), r.volume(), r.bytesMoved(), true);
    }

    private DriveStatus restored0(DriveStatus s) {
        return switch (s.state()) {
            case FAILED, DISABLED -> s;
            // a mount or dismount cut off by the restart: the cartridge may be in the drive, on its way or in
            // its slot. As after a mount that timed out, the drive holds the volume FAILED until an operator
            // has looked; taken for mounted, its next read went to a drive that may not hold the tape.
            case MOUNTING, UNLOADING -> {
                log.warn("library {}: drive {} was {} {} when the service stopped; where the cartridge is now is"
                        + " not known: the drive is FAILED until it is checked in the HSM and recovered (console, Volumes page)",
                        layout.name(), s.drive(), s.state(), s.volume());
                yield new DriveStatus(s.drive(), DriveState.FAILED, s.volume(), s.bytesMoved());
            }
            case EMPTY, ELSEWHERE -> new DriveStatus(s.drive(), DriveState.EMPTY, null, 0);
            default -> new DriveStatus(s.drive(), s.volume() == null ? DriveState.EMPTY : DriveState.MOUNTED_IDLE,
                    s.volume(), s.bytesMoved());
        };
    }

    /**
     * The drive becomes this instance's as another instance sharing the library left it ({@code persisted}, its
     * row; {@link SharedDrives}): what this instance remembered of it is stale. A state that had to change (a
     * mount cut off) is written back.
     */
    void adopt(DriveStatus persisted) {
        DriveStatus s = restored(persisted);
        synchronized (this) {
            if (!drives.containsKey(s.drive())) return;
            keep(s);
        }
        if (!s.equals(persisted)) events.driveChanged(layout.name(), s, Instant.now());
    }

    /** Holds {@code s} (its down request apart, kept in {@link #down}). */
    private synchronized void keep(DriveStatus s) {
        drives.put(s.drive(), new DriveStatus(s.drive(), s.state(), s.volume(), s.bytesMoved()));
        if (s.downRequested()) down.add(s.drive());
        else down.remove(s.drive());
    }

    /** {@code s} with the operator's down request, as callers and the database see it. */
    private synchronized DriveStatus flagged(DriveStatus s) {
        return down.contains(s.drive()) ? new DriveStatus(s.drive(), s.state(), s.volume(), s.bytesMoved(), true) : s;
    }

    /** The drive is empty again: DISABLED when an operator took it down meanwhile, else EMPTY. Atomic with the request. */
    private void emptied(String drive) {
        DriveStatus s;
        synchronized (this) {
            s = new DriveStatus(drive, down.remove(drive) ? DriveState.DISABLED : DriveState.EMPTY, null, 0);
            drives.put(drive, s);
        }
        events.driveChanged(layout.name(), s, Instant.now());
    }

    private List<String> command(String name) {
        return switch (name) {
            case "mount" -> cfg.mount();
            case "read-list" -> cfg.readList();
            case "write" -> cfg.write();
            default -> cfg.dismount();
        };
    }

    @Override
    public LibraryLayout layout() {
        return layout;
    }

    @Override
    public synchronized List<DriveStatus> drives() {
        List<DriveStatus> out = new ArrayList<>(drives.size());
        for (DriveStatus s : drives.values()) out.add(flagged(s));
        return List.copyOf(out);
    }

    private synchronized DriveStatus drive(String name) {
        DriveStatus s = drives.get(name);
        if (s == null) throw new IllegalArgumentException("no drive '" + name + "' in library " + layout.name());
        return s;
    }

    private void set(String drive, DriveState state, String volume, long bytesMoved) {
        DriveStatus s = new DriveStatus(drive, state, volume, bytesMoved);
        synchronized (this) {
            drives.put(drive, s);
        }
        events.driveChanged(layout.name(), flagged(s), Instant.now());
    }

    /** Moves the drive from one of {@code from} to {@code to}, atomically; false if it was in none of them. */
    private synchronized DriveStatus claim(String drive, DriveState to, DriveState... from) {
        DriveStatus s = drive(drive);
        for (DriveState f : from)
            if (s.state() == f) {
                DriveStatus n = new DriveStatus(drive, to, s.volume(), s.bytesMoved());
                drives.put(drive, n);
                return s;
            }
        return null;
    }

    /** Claims the drive if it is idle with {@code volume} in it (any volume when null); null otherwise. */
    private synchronized DriveStatus claimIdle(String drive, DriveState to, String volume) {
        DriveStatus s = drive(drive);
        if (s.state() != DriveState.MOUNTED_IDLE || (volume != null && !volume.equals(s.volume()))) return null;
        drives.put(drive, new DriveStatus(drive, to, s.volume(), s.bytesMoved()));
        return s;
    }

    /**
     * Claims the drive for a list, as {@link #claimIdle}, unless an operator is taking it down: a list asked before
     * the scheduler saw that (its next round) is refused ({@link #listNotStarted}, DRIVE_DOWN) rather than started.
     */
    private synchronized DriveStatus claimForList(String drive, DriveState to, String volume) {
        return down.contains(drive) ? null : claimIdle(drive, to, volume);
    }

    /** A list or dismount is taken while a volume is mounted, the drive idle or still busy with a list. */
    private static void checkMounted(String drive, DriveStatus s, String what) {
        switch (s.state()) {
            case MOUNTED_IDLE, READING, WRITING -> { }
            default -> throw new IllegalStateException("drive " + drive + " is " + s.state() + ", not mounted; cannot " + what);
        }
    }

    /**
     * Runs {@code start} once whatever was asked of the drive before has ended (at once when nothing is under
     * way): the caller may see a list's last file land while its script is still running.
     */
    private void afterPrevious(String drive, CompletableFuture<?> end, Runnable start) {
        CompletableFuture<?> previous;
        synchronized (this) {
            previous = lastAsked.getOrDefault(drive, CompletableFuture.completedFuture(null));
            lastAsked.put(drive, end);
        }
        previous.whenComplete((v, e) -> start.run()).exceptionally(e -> {
            log.error("{}: starting a call failed", drive, e); // a listener threw: say so, it would vanish here
            return null;
        });
    }

    /** Why a list or dismount that waited its turn cannot run: the drive failed or was dismounted meanwhile. */
    private RuntimeException notIdle(String drive, String volume) {
        DriveStatus s = drive(drive);
        if (unusable(s)) return driveUnusable(drive, s);
        return new IllegalStateException("drive " + drive + " is " + s.state() + " with " + s.volume() + ", not idle with "
                + (volume == null ? "a volume" : volume));
    }

    /** Why a list that waited its turn cannot run: as {@link #notIdle}, or the drive is going down. */
    private RuntimeException listNotStarted(String drive, String volume) {
        DriveStatus s = flagged(drive(drive));
        if (!unusable(s) && s.downRequested())
            return new TapeFailure(TapeFailure.Kind.DRIVE_DOWN, drive, s.volume(), "an operator is taking the drive down; list not started");
        return notIdle(drive, volume);
    }

    /** The list file could not be written: the call is not run and the drive is left as it was. */
    private TapeFailure listNotWritten(String command, String drive, String volume, UncheckedIOException e) {
        String why = e.getMessage() + ": " + e.getCause();
        // as when the script cannot be started: the health check reports the library unreachable
        noteCall(new CallResult(command, drive, volume, "not-run", -1, why, Instant.now()));
        return new TapeFailure(TapeFailure.Kind.DRIVE_FAILURE, drive, volume, why + "; " + command + " not run");
    }

    /**
     * Mounts under way on drives not in {@code drives}: on a library of its own (no {@link SharedDrives}), those of
     * this instance's other user of it, the archive on its write drives ({@link DriveRoles}); they take the accessors
     * the recall scheduler budgets. Dismounts are not counted, as the scheduler does not count its own (one holds an
     * accessor only for its last move). Without this the scheduler started its whole budget beside the archive's
     * mounts.
     */
    @Override
    public synchronized int exchangesUnderWayBesides(Collection<String> besides) {
        return mountsBesides(besides, null);
    }

    /** True when fewer than {@code budget} mounts are under way besides {@code drive} and {@code besides}. */
    @Override
    public synchronized boolean reserveMount(String drive, Collection<String> besides, int budget) {
        return mountsBesides(besides, drive) < budget;
    }

    private int mountsBesides(Collection<String> besides, String also) {
        int n = 0;
        for (DriveStatus d : drives.values())
            if (d.state() == DriveState.MOUNTING && !d.drive().equals(also) && !besides.contains(d.drive())) n++;
        return n;
    }

    @Override
    public CompletableFuture<Void> mount(String drive, String volume) {
        Objects.requireNonNull(volume, "volume");
        DriveStatus before;
        synchronized (this) {
            before = drive(drive);
            if (unusable(before))
                return CompletableFuture.failedFuture(new TapeFailure(TapeFailure.Kind.DRIVE_FAILURE, drive, volume,
                        "drive is " + before.state()));
            if (before.state() != DriveState.EMPTY)
                throw new IllegalStateException("drive " + drive + " is " + before.state() + ", not empty");
            drives.put(drive, new DriveStatus(drive, DriveState.MOUNTING, volume, 0));
        }
        events.driveChanged(layout.name(), flagged(drive(drive)), Instant.now());
        events.mountStarted(drive, volume, Instant.now());
        CompletableFuture<Void> f = new CompletableFuture<>();
        Call call = new Call("mount", List.of(drive, volume), cfg.mountTimeout(), drive, volume);
        f.whenComplete((v, e) -> {
            if (f.isCancelled()) call.kill();
        });
        Thread.ofVirtual().name("tape-mount-" + drive).start(() -> {
            Outcome o = call.run(line -> {});
            if (o.failure == null) {
                set(drive, DriveState.MOUNTED_IDLE, volume, 0);
                events.mountFinished(drive, volume, Instant.now(), null);
                f.complete(null);
            } else {
                // a drive failure keeps the cartridge in the failed drive; otherwise nothing was loaded
                if (o.failure.kind() == TapeFailure.Kind.DRIVE_FAILURE) set(drive, DriveState.FAILED, volume, 0);
                else if (o.failure.kind() == TapeFailure.Kind.TIMEOUT) set(drive, DriveState.FAILED, volume, 0);
                else emptied(drive);
                events.mountFinished(drive, volume, Instant.now(), o.failure);
                f.completeExceptionally(o.failure);
            }
        });
        return f;
    }

    @Override
    public ReadBatch read(String drive, List<SegmentRead> segments) {
        List<SegmentRead> segs = List.copyOf(segments);
        DriveStatus before = drive(drive);
        for (SegmentRead s : segs) {
            if (!Objects.equals(s.volume(), before.volume()))
                throw new IllegalArgumentException("segment of " + s.fileName() + " is on " + s.volume() + ", drive "
                        + drive + " holds " + before.volume());
            if (s.target() == null) throw new IllegalArgumentException("the script driver needs a target for " + s.fileName());
        }
        ScriptBatch<SegmentRead, ReadResult> batch = new ScriptBatch<>(segs);
        if (unusable(before)) {
            batch.end(driveUnusable(drive, before));
            return batch.asRead();
        }
        Map<Long, SegmentRead> byId = new HashMap<>();
        StringBuilder list = new StringBuilder();
        StringBuilder metadata = new StringBuilder();
        for (SegmentRead s : segs) {
            if (byId.putIfAbsent(s.fileId(), s) != null) throw new IllegalArgumentException("file id listed twice: " + s.fileId());
            list.append(s.fileId()).append('\t').append(s.offsetBytes()).append('\t').append(s.sizeBytes()).append('\t')
                    .append(s.target().toAbsolutePath()).append('\t').append(s.fileName()).append('\n');
            // compact JSON has no raw tab or newline: one line per file
            if (s.targetedMetadata() != null) metadata.append(s.fileId()).append('\t').append(s.targetedMetadata()).append('\n');
        }
        checkMounted(drive, before, "read");
        String volume = before.volume();
        // the lists are written before the drive is claimed: when they cannot be, the drive stays as it was
        Path listFile = null, metadataFile = null;
        try {
            listFile = writeList("read", list);
            // a side file, so that scripts written for the five-column list keep working
            if (!metadata.isEmpty()) metadataFile = writeList("read-metadata", metadata);
        } catch (UncheckedIOException e) {
            if (listFile != null) deleteQuietly(listFile);
            batch.end(listNotWritten("read-list", drive, volume, e));
            return batch.asRead();
        }
        Path lf = listFile, mf = metadataFile;
        Call call = new Call("read-list", List.of(drive, volume, lf.toString()), cfg.readTimeout(), drive, volume,
                mf == null ? Map.of() : Map.of(METADATA_ENV, mf.toString()));
        batch.call = call;
        afterPrevious(drive, batch.done, () -> {
            DriveStatus idle = claimForList(drive, DriveState.READING, volume);
            if (idle == null) {
                deleteQuietly(lf);
                if (mf != null) deleteQuietly(mf);
                batch.end(listNotStarted(drive, volume));
                return;
            }
            events.driveChanged(layout.name(), flagged(drive(drive)), Instant.now());
            runRead(drive, volume, idle.bytesMoved(), call, byId, batch, lf, mf);
        });
        return batch.asRead();
    }

    private void runRead(String drive, String volume, long movedBefore, Call call, Map<Long, SegmentRead> byId,
            ScriptBatch<SegmentRead, ReadResult> batch, Path listFile, Path metadataFile) {
        Instant started = Instant.now();
        Thread.ofVirtual().name("tape-read-" + drive).start(() -> {
            long[] moved = {movedBefore};
            Outcome o = call.run(line -> {
                Reply r = Reply.parse(line, drive, volume);
                if (r == null) return;
                SegmentRead s = byId.get(r.fileId);
                if (s == null) {
                    log.warn("{}: read-list reported unknown file id {}", drive, r.fileId);
                    return;
                }
                if (r.failure != null) {
                    events.segmentFailed(drive, s, r.failure, Instant.now());
                    batch.fail(s, r.failure);
                    return;
                }
                try {
                    // the bytes on disk are what the cache verifies against the catalog, not the script's word for
                    // them: taken on trust, a file corrupted on its way to disk (or a script reporting the HSM's
                    // stored sum) was committed as good. dCache sums a restored file itself, too
                    long adler = adler32(s.target());
                    if (r.adler32 >= 0 && r.adler32 != adler) {
                        TapeFailure f = new TapeFailure(TapeFailure.Kind.MEDIA_ERROR, drive, volume, "script reported "
                                + s.fileName() + " read with Adler32 " + hex(r.adler32) + " but " + s.target()
                                + " sums to " + hex(adler) + " (corrupted on its way to disk, or the script's sum is not"
                                + " of the file it wrote)");
                        events.segmentFailed(drive, s, f, Instant.now());
                        batch.fail(s, f);
                        return;
                    }
                    if (!forced(drive, s, batch)) return;
                    moved[0] += s.sizeBytes();
                    ReadResult res = new ReadResult(s, adler, 0, started, Instant.now());
                    events.segmentRead(drive, res);
                    batch.complete(s, res);
                } catch (IOException e) {
                    // typed, as the SPI promises: an untyped failure is taken for a hiccup and the file read again,
                    // for ever when the script keeps reporting OK without delivering it; MEDIA_ERROR sends it to
                    // another copy (or fails it), as a short or missing copy refused by the cache does
                    TapeFailure f = new TapeFailure(TapeFailure.Kind.MEDIA_ERROR, drive, volume, "script reported "
                            + s.fileName() + " read but " + s.target() + " is not readable: " + e);
                    events.segmentFailed(drive, s, f, Instant.now());
                    batch.fail(s, f);
                }
            });
            deleteQuietly(listFile);
            if (metadataFile != null) deleteQuietly(metadataFile);
            finishCall(drive, volume, moved[0], o, batch);
        });
    }

    /**
     * Forces a file the script wrote to disk, in this call's reading thread, before it is reported: once reported,
     * the cache commits it and it is pinned, handed to transfers and answered ONLINE, so a power cut must not find
     * it empty or short. The script's process may have closed it with its bytes still in the page cache; fsync by
     * any descriptor forces them. A file that is not there is left to the cache's commit to refuse. When it cannot
     * be forced the segment fails untyped ({@link Durable.NotForced}: the cache disk, not the tape, is at fault): its
     * space is given back, the cache counts the failure against its directory, and the file is read again.
     * @return whether the file may be reported
     */
    private boolean forced(String drive, SegmentRead s, ScriptBatch<SegmentRead, ReadResult> batch) {
        try {
            durable.force(s.target());
            return true;
        } catch (java.nio.file.NoSuchFileException e) {
            return true;
        } catch (IOException e) {
            log.warn("{}: {} read to {} but it cannot be forced to disk: {}", drive, s.fileName(), s.target(), e.toString());
            batch.failWith(s, new Durable.NotForced(s.target(), e));
            return false;
        }
    }

    /** A failed or disabled drive takes no mount, list or dismount: each fails with DRIVE_FAILURE. */
    private static boolean unusable(DriveStatus s) {
        return s.state() == DriveState.FAILED || s.state() == DriveState.DISABLED;
    }

    private static TapeFailure driveUnusable(String drive, DriveStatus s) {
        return new TapeFailure(TapeFailure.Kind.DRIVE_FAILURE, drive, s.volume(), "drive is " + s.state());
    }

    @Override
    public WriteBatch write(String drive, List<FileWrite> files) {
        List<FileWrite> fs = List.copyOf(files);
        DriveStatus before = drive(drive);
        ScriptBatch<FileWrite, WriteBatch.WrittenSegment> batch = new ScriptBatch<>(fs);
        if (unusable(before)) {
            batch.end(driveUnusable(drive, before));
            return batch.asWrite();
        }
        Map<Long, FileWrite> byId = new HashMap<>();
        StringBuilder list = new StringBuilder();
        for (FileWrite w : fs) {
            if (byId.putIfAbsent(w.fileId(), w) != null) throw new IllegalArgumentException("file id listed twice: " + w.fileId());
            list.append(w.fileId()).append('\t').append(w.sizeBytes()).append('\t').append(w.source().toAbsolutePath())
                    .append('\t').append(w.fileName()).append('\n');
        }
        checkMounted(drive, before, "write");
        String volume = before.volume();
        Path listFile;
        try { // before the drive is claimed: when it cannot be written, the drive stays as it was
            listFile = writeList("write", list);
        } catch (UncheckedIOException e) {
            batch.end(listNotWritten("write", drive, volume, e));
            return batch.asWrite();
        }
        Call call = new Call("write", List.of(drive, volume, listFile.toString()), cfg.writeTimeout(), drive, volume);
        batch.call = call;
        afterPrevious(drive, batch.done, () -> {
            DriveStatus idle = claimForList(drive, DriveState.WRITING, volume);
            if (idle == null) {
                deleteQuietly(listFile);
                batch.end(listNotStarted(drive, volume));
                return;
            }
            events.driveChanged(layout.name(), flagged(drive(drive)), Instant.now());
            runWrite(drive, volume, idle.bytesMoved(), call, byId, batch, listFile);
        });
        return batch.asWrite();
    }

    private void runWrite(String drive, String volume, long movedBefore, Call call, Map<Long, FileWrite> byId,
            ScriptBatch<FileWrite, WriteBatch.WrittenSegment> batch, Path listFile) {
        Thread.ofVirtual().name("tape-write-" + drive).start(() -> {
            long[] moved = {movedBefore};
            List<String> unverified = java.util.Collections.synchronizedList(new ArrayList<>());
            Outcome o = call.run(line -> {
                String[] p = line.trim().split("\\s+", 4);
                if (p.length >= 3 && p[0].equals("OK")) {
                    FileWrite w = byId.get(parseLong(p[1]));
                    if (w == null) return;
                    try {
                        long offset = Long.parseLong(p[2]);
                        boolean reported = p.length > 3;
                        if (!reported && cfg.writeChecksum() == TapeProperties.WriteChecksum.REQUIRED)
                            throw new IllegalArgumentException("no Adler32 of what reached the volume, and"
                                    + " stagehand.tape.script.write-checksum is required");
                        // without a report nothing here can read the copy back: the source's sum stands in, unverified
                        long adler = reported ? reportedAdler32(p[3]) : adler32(w.source());
                        if (!reported) unverified.add(w.fileName());
                        moved[0] += w.sizeBytes();
                        WriteBatch.WrittenSegment ws = new WriteBatch.WrittenSegment(w, volume, offset, adler, reported);
                        events.fileWritten(drive, ws, Instant.now());
                        batch.complete(w, ws);
                    } catch (IllegalArgumentException | IOException e) {
                        batch.failWith(w, new IllegalStateException("bad write report '" + line + "': " + e.getMessage()));
                    }
                    return;
                }
                Reply r = Reply.parse(line, drive, volume);
                if (r != null && r.failure != null && byId.get(r.fileId) != null) batch.fail(byId.get(r.fileId), r.failure);
            });
            if (!unverified.isEmpty())
                log.warn("write on {} to {}: {} file(s) reported without an Adler32 (first: {}); their tape copies carry the"
                        + " buffer file's sum, not confirmed from the volume (stagehand.tape.script.write-checksum: trust-source)",
                        drive, volume, unverified.size(), unverified.getFirst());
            deleteQuietly(listFile);
            finishCall(drive, volume, moved[0], o, batch);
        });
    }

    /**
     * After a list call: the drive is idle again (or failed), then what the script did not report fails and
     * the list is done; in this order, so that whoever waits for done() finds the drive free.
     */
    private void finishCall(String drive, String volume, long moved, Outcome o, ScriptBatch<?, ?> batch) {
        TapeFailure rest = o.failure != null ? o.failure
                : new TapeFailure(TapeFailure.Kind.DRIVE_FAILURE, drive, volume, "script ended without reporting the file");
        boolean failed = o.failure != null && o.failure.kind() == TapeFailure.Kind.DRIVE_FAILURE;
        set(drive, failed ? DriveState.FAILED : DriveState.MOUNTED_IDLE, volume, moved);
        batch.end(rest);
    }

    @Override
    public CompletableFuture<Void> dismount(String drive) {
        DriveStatus s = drive(drive);
        if (unusable(s)) return CompletableFuture.failedFuture(driveUnusable(drive, s));
        checkMounted(drive, s, "dismount");
        CompletableFuture<Void> f = new CompletableFuture<>();
        afterPrevious(drive, f, () -> {
            DriveStatus before = claimIdle(drive, DriveState.UNLOADING, null);
            if (before == null) f.completeExceptionally(notIdle(drive, null));
            else runDismount(drive, before, f);
        });
        return f;
    }

    private void runDismount(String drive, DriveStatus before, CompletableFuture<Void> f) {
        events.driveChanged(layout.name(), flagged(drive(drive)), Instant.now());
        String volume = before.volume();
        Thread.ofVirtual().name("tape-dismount-" + drive).start(() -> {
            Outcome o = new Call("dismount", List.of(drive, volume), cfg.dismountTimeout(), drive, volume).run(l -> {});
            if (o.failure == null) {
                emptied(drive);
                events.dismounted(drive, volume, Instant.now());
                f.complete(null);
            } else {
                set(drive, DriveState.FAILED, volume, before.bytesMoved()); // the cartridge is stuck: operator
                f.completeExceptionally(o.failure);
            }
        });
    }

    /** Operator action after a repair: the drive is EMPTY again (the operator has had the HSM take the cartridge out). */
    @Override
    public CompletableFuture<Void> recover(String drive) {
        DriveStatus before = claim(drive, DriveState.EMPTY, DriveState.FAILED);
        if (before == null) throw new IllegalStateException("drive " + drive + " is " + drive(drive).state() + ", not FAILED");
        emptied(drive); // DISABLED when it was being taken down when it failed
        return CompletableFuture.completedFuture(null);
    }

    /**
     * Takes an empty drive out of service (DISABLED) or back (EMPTY); the HSM is not asked. A drive holding a
     * volume (mounting, mounted, reading, writing, unloading) is marked down instead: the schedulers give it no
     * new work and unload it once its current list ends, and it is DISABLED once empty. Enabling it before then
     * cancels that.
     */
    @Override
    public void setEnabled(String drive, boolean enabled) {
        DriveStatus marked = null;
        synchronized (this) {
            DriveStatus s = drive(drive);
            if (enabled && down.remove(drive)) marked = s;
            else if (!enabled && s.state().holdsVolume()) {
                down.add(drive);
                marked = s;
            }
        }
        if (marked != null) {
            events.driveChanged(layout.name(), flagged(marked), Instant.now());
            return;
        }
        DriveState to = enabled ? DriveState.EMPTY : DriveState.DISABLED, from = enabled ? DriveState.DISABLED : DriveState.EMPTY;
        if (drive(drive).state() == to) return;
        if (claim(drive, to, from) == null) throw new IllegalStateException("drive " + drive + " is " + drive(drive).state() + ", not " + from);
        set(drive, to, null, 0);
    }

    // ---------------------------------------------------------------- processes

    private Path writeList(String kind, CharSequence body) {
        try {
            Files.createDirectories(cfg.workDir());
            Path p = cfg.workDir().resolve(kind + "-" + ProcessHandle.current().pid() + "-" + calls.incrementAndGet() + ".list");
            Files.writeString(p, body, StandardCharsets.UTF_8);
            return p;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the " + kind + " list file under " + cfg.workDir(), e);
        }
    }

    private static void deleteQuietly(Path p) {
        try {
            Files.deleteIfExists(p);
        } catch (IOException ignored) {
            // a leftover list file is harmless
        }
    }

    /**
     * An Adler32 as a site script reports it, in any form the catalog takes ({@link Adler32Text#normalise}).
     *
     * @throws IllegalArgumentException for anything else (more than 32 bits included)
     */
    static long reportedAdler32(String field) {
        return Long.parseLong(Adler32Text.normalise(field), 16);
    }

    private static String hex(long adler32) {
        return String.format("%08x", adler32);
    }

    static long adler32(Path file) throws IOException {
        Adler32 a = new Adler32();
        byte[] buf = new byte[1 << 16];
        try (InputStream in = Files.newInputStream(file)) {
            int n;
            while ((n = in.read(buf)) > 0) a.update(buf, 0, n);
        }
        return a.getValue();
    }

    private static long parseLong(String s) {
        try {
            return Long.parseLong(s);
        } catch (NumberFormatException e) {
            return Long.MIN_VALUE;
        }
    }

    /** Maps a script's exit code to the failure kind (null for 0). */
    static TapeFailure.Kind kindOf(int exit) {
        return switch (exit) {
            case 0 -> null;
            case 2 -> TapeFailure.Kind.MEDIA_ERROR;
            case 4 -> TapeFailure.Kind.VOLUME_UNAVAILABLE;
            case 5 -> TapeFailure.Kind.TIMEOUT;
            default -> TapeFailure.Kind.DRIVE_FAILURE;
        };
    }

    private record Outcome(int exit, TapeFailure failure) {}

    /** One run of a site script, killed (with its children) on timeout or cancel. */
    private final class Call {
        final String name;
        final List<String> argv;
        final Duration timeout;
        final String drive, volume;
        private Process process;
        private boolean killed;

        final Map<String, String> env;

        Call(String name, List<String> args, Duration timeout, String drive, String volume) {
            this(name, args, timeout, drive, volume, Map.of());
        }

        Call(String name, List<String> args, Duration timeout, String drive, String volume, Map<String, String> env) {
            List<String> a = new ArrayList<>(command(name));
            a.addAll(args);
            this.name = name;
            this.argv = a;
            this.timeout = timeout;
            this.drive = drive;
            this.volume = volume;
            this.env = env;
        }

        synchronized void kill() {
            killed = true;
            if (process != null) {
                process.descendants().forEach(ProcessHandle::destroyForcibly);
                process.destroyForcibly();
            }
        }

        Outcome run(java.util.function.Consumer<String> onLine) {
            Outcome o = call(onLine);
            String outcome = o.failure == null ? "ok" : o.exit >= 0 ? "failed" : notRun ? "not-run" : timedOut ? "timed-out" : "cancelled";
            noteCall(new CallResult(name, drive, volume, outcome, o.exit, o.failure == null ? null : o.failure.getMessage(),
                    Instant.now()));
            return o;
        }

        private boolean notRun, timedOut;

        private Outcome call(java.util.function.Consumer<String> onLine) {
            Path err = null;
            try {
                Files.createDirectories(cfg.workDir());
                err = cfg.workDir().resolve(name + "-" + ProcessHandle.current().pid() + "-" + calls.incrementAndGet() + ".err");
                ProcessBuilder pb = new ProcessBuilder(argv).redirectError(err.toFile());
                pb.environment().putAll(env);
                synchronized (this) {
                    if (killed) return new Outcome(-1, new TapeFailure(TapeFailure.Kind.TIMEOUT, drive, volume, name + " cancelled"));
                    process = pb.start();
                }
                Process p = process;
                p.getOutputStream().close();
                Thread reader = Thread.ofVirtual().start(() -> {
                    try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                        String line;
                        while ((line = r.readLine()) != null) {
                            try {
                                onLine.accept(line);
                            } catch (RuntimeException e) {
                                log.warn("{} {}: cannot handle output line '{}'", name, drive, line, e);
                            }
                        }
                    } catch (IOException e) {
                        // the process was killed; what it printed before is handled
                    }
                });
                boolean finished = p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
                if (!finished) {
                    timedOut = true;
                    kill();
                }
                p.waitFor();
                reader.join(Duration.ofSeconds(10));
                synchronized (this) {
                    if (killed) {
                        return new Outcome(-1, new TapeFailure(TapeFailure.Kind.TIMEOUT, drive, volume,
                                finished ? name + " cancelled" : name + " did not finish within " + timeout + "; killed"));
                    }
                }
                int exit = p.exitValue();
                TapeFailure.Kind kind = kindOf(exit);
                if (kind == null) return new Outcome(0, null);
                return new Outcome(exit, new TapeFailure(kind, drive, volume, name + " exited " + exit + ": " + tail(err)));
            } catch (IOException e) {
                notRun = true;
                return new Outcome(-1, new TapeFailure(TapeFailure.Kind.DRIVE_FAILURE, drive, volume,
                        "cannot run " + argv.get(0) + ": " + e.getMessage()));
            } catch (InterruptedException e) {
                kill();
                Thread.currentThread().interrupt();
                return new Outcome(-1, new TapeFailure(TapeFailure.Kind.TIMEOUT, drive, volume, name + " interrupted"));
            } finally {
                if (err != null) deleteQuietly(err);
            }
        }

        private String tail(Path err) {
            try {
                String s = Files.readString(err, StandardCharsets.UTF_8).strip();
                return s.isEmpty() ? "(no error output)" : s.length() > 500 ? "..." + s.substring(s.length() - 500) : s;
            } catch (IOException e) {
                return "(no error output)";
            }
        }
    }

    /** One parsed stdout line: {@code OK id [adler]} or {@code ERR id KIND message}; null when not a report. */
    private record Reply(long fileId, long adler32, TapeFailure failure) {
        static Reply parse(String line, String drive, String volume) {
            String[] p = line.trim().split("\\s+", 4);
            if (p.length < 2) return null;
            long id = parseLong(p[1]);
            if (id == Long.MIN_VALUE) return null;
            if (p[0].equals("OK")) {
                long adler = -1;
                try {
                    if (p.length > 2) adler = reportedAdler32(p[2]);
                } catch (IllegalArgumentException e) {
                    // the bytes are summed here anyway (and checked against the catalog by the cache); a bad
                    // field used to throw here, the file then failed as DRIVE_FAILURE and the drive left service
                    log.warn("drive {}: read report '{}' has no Adler32 we can take ({}); the file's own sum is used", drive,
                            line.trim(), e.getMessage());
                }
                return new Reply(id, adler, null);
            }
            if (p[0].equals("ERR") && p.length >= 3) {
                TapeFailure.Kind kind;
                try {
                    kind = TapeFailure.Kind.valueOf(p[2].toUpperCase(Locale.ROOT));
                    // only the library says a drive is going down: from a script it is a file's failure
                    if (kind == TapeFailure.Kind.DRIVE_DOWN) kind = TapeFailure.Kind.MEDIA_ERROR;
                } catch (IllegalArgumentException e) {
                    kind = TapeFailure.Kind.MEDIA_ERROR;
                }
                return new Reply(id, -1, new TapeFailure(kind, drive, volume, p.length > 3 ? p[3] : "reported by script"));
            }
            return null;
        }
    }

    /** The futures of one list call. */
    private static final class ScriptBatch<I, R> {
        final List<I> items;
        final Map<I, CompletableFuture<R>> futures = new IdentityHashMap<>();
        /** Completed by {@link #end}, not when the last file does: the drive may still be busy then. */
        final CompletableFuture<Void> done = new CompletableFuture<>();
        volatile Call call;

        ScriptBatch(List<I> items) {
            this.items = items;
            for (I i : items)
                if (futures.putIfAbsent(i, new CompletableFuture<>()) != null)
                    throw new IllegalArgumentException("listed twice: " + i);
        }

        CompletableFuture<R> result(I item) {
            CompletableFuture<R> f = futures.get(item);
            if (f == null) throw new IllegalArgumentException("not in this batch: " + item);
            return f;
        }

        void complete(I item, R r) {
            futures.get(item).complete(r);
        }

        void fail(I item, TapeFailure f) {
            futures.get(item).completeExceptionally(f);
        }

        void failWith(I item, Throwable t) {
            futures.get(item).completeExceptionally(t);
        }

        /** The call is over (or was never run): files still open fail with {@code rest}, then the list is done. */
        void end(Throwable rest) {
            for (CompletableFuture<R> x : futures.values()) x.completeExceptionally(rest);
            done.complete(null);
        }

        void cancelAll() {
            for (CompletableFuture<R> x : futures.values()) x.cancel(false);
            Call c = call;
            if (c != null) c.kill();
        }

        ReadBatch asRead() {
            @SuppressWarnings("unchecked")
            ScriptBatch<SegmentRead, ReadResult> self = (ScriptBatch<SegmentRead, ReadResult>) this;
            return new ReadBatch() {
                @Override
                public CompletableFuture<ReadResult> result(SegmentRead segment) {
                    return self.result(segment);
                }

                /** The script cannot skip one file of its list: the file's future is cancelled, the script goes on. */
                @Override
                public void cancel(SegmentRead segment) {
                    self.result(segment).cancel(false);
                }

                @Override
                public void cancelAll() {
                    self.cancelAll();
                }

                @Override
                public CompletableFuture<Void> done() {
                    return done;
                }
            };
        }

        WriteBatch asWrite() {
            @SuppressWarnings("unchecked")
            ScriptBatch<FileWrite, WriteBatch.WrittenSegment> self = (ScriptBatch<FileWrite, WriteBatch.WrittenSegment>) this;
            return new WriteBatch() {
                @Override
                public CompletableFuture<WrittenSegment> result(FileWrite file) {
                    return self.result(file);
                }

                @Override
                public void cancelAll() {
                    self.cancelAll();
                }

                @Override
                public CompletableFuture<Void> done() {
                    return done;
                }
            };
        }
    }
}
