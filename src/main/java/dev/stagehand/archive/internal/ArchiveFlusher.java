package dev.stagehand.archive.internal;

import dev.stagehand.archive.ArchiveProperties;
import dev.stagehand.archive.FileArchived;
import dev.stagehand.archive.internal.FlushPlanner.FamilyQueue;
import dev.stagehand.tape.DriveState;
import dev.stagehand.tape.DriveStatus;
import dev.stagehand.tape.FileWrite;
import dev.stagehand.tape.ReadBatch;
import dev.stagehand.tape.ReadResult;
import dev.stagehand.tape.SegmentRead;
import dev.stagehand.tape.TapeFailure;
import dev.stagehand.tape.TapeLibrary;
import dev.stagehand.tape.WriteBatch;
import dev.stagehand.tape.WriteBatch.WrittenSegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Flushes queued tape copies to the drives reserved for writing, one file family (and copy number) per
 * write list: a family appends to its open volume in registration order, a full volume is closed and a
 * blank one taken from the pool. Claims are rows ({@code archive_copy}, {@code archive_volume}) taken
 * with {@code FOR UPDATE SKIP LOCKED} and leased, so several instances share the queue and a volume has
 * one writer. A copy counts as written only when the library confirms it and its segment is committed to
 * the catalog; a failure puts it back in the queue (with a backoff), never forward.
 *
 * <p>Drives: the flusher mounts only the drives it is given (the library's write drives, see
 * {@code DriveRoles}); the recall scheduler gets the others. A volume stays mounted while its family has
 * more to write and is dismounted as soon as it has not, so a recall of freshly archived files finds it
 * in its slot.
 */
public final class ArchiveFlusher {

    private static final Logger log = LoggerFactory.getLogger(ArchiveFlusher.class);
    /** Tape copies of one file that may fail their checksum (each closes its volume) before the file fails for good. */
    static final int MAX_MISMATCHES = 3;

    private final JdbcTemplate jdbc;
    private final TransactionTemplate tx;
    private final TapeLibrary library;
    private final ArchiveProperties props;
    private final long volumeCapacity;
    private final Consumer<Object> events;
    private final String instance;
    private final Map<String, DriveJob> jobs = new LinkedHashMap<>();
    /** The configured pool's labels: the only blank volumes this flusher opens. */
    private final String[] poolLabels;
    /** Volumes this instance's drives are writing now. */
    private final Set<Long> inUse = new HashSet<>();
    /**
     * Copies whose write this instance is waiting for: only their leases are renewed. A claim left 'writing'
     * by a failure (its record or requeue did not reach the database) then lapses and is queued again,
     * instead of being renewed for as long as this instance runs.
     */
    private final Set<CopyKey> inFlight = new HashSet<>();
    /**
     * Bad copies whose good copy this instance is reading back (their 'done' rows' claims): renewed as the writes' are, so
     * a read (with its mount) longer than the lease is not claimed and read again by another drive or instance.
     */
    private final Set<CopyKey> reading = new HashSet<>();
    private boolean noBlankWarned;
    /**
     * A round is running (on this thread: the methods share this monitor). A list that ends inside it (a mount
     * failing at once) leaves its drive to the next round instead of starting one within it: with no backoff the
     * failure and the round called each other until the stack overflowed.
     */
    private boolean polling;
    private final java.time.Clock clock;

    /** One write drive as this flusher sees it. */
    private static final class DriveJob {
        final String drive;
        boolean busy;
        String volume; // mounted label, as last seen
        Instant idleSince;

        DriveJob(String drive) {
            this.drive = drive;
        }
    }

    /** A claimed write list. */
    private record Claim(long volumeId, String label, String family, int copy, List<Item> files) {}

    private record Item(long fileId, String name, String path, long size, String adler32) {}

    private record CopyKey(long fileId, int copy) {}

    /**
     * @param library the library; only {@code drives} are used
     * @param events  where {@link FileArchived} events go (after their commit)
     */
    public ArchiveFlusher(JdbcTemplate jdbc, TransactionTemplate tx, TapeLibrary library, List<String> drives,
                          ArchiveProperties props, long volumeCapacity, Consumer<Object> events, String instance) {
        this(jdbc, tx, library, drives, props, volumeCapacity, events, instance, java.time.Clock.systemUTC());
    }

    /** @param clock the clock registrations are stamped with: a family's age is measured on it */
    public ArchiveFlusher(JdbcTemplate jdbc, TransactionTemplate tx, TapeLibrary library, List<String> drives,
                          ArchiveProperties props, long volumeCapacity, Consumer<Object> events, String instance,
                          java.time.Clock clock) {
        this.clock = clock;
        this.jdbc = jdbc;
        this.tx = tx;
        this.library = library;
        this.props = props;
        this.volumeCapacity = volumeCapacity;
        this.events = events;
        this.instance = instance;
        this.poolLabels = props.pool().labels().toArray(String[]::new);
        for (String d : drives) jobs.put(d, new DriveJob(d));
    }

    public String instanceId() {
        return instance;
    }

    /** Adds the configured pool volumes, takes back this instance's claims left by a crash. */
    public synchronized void start() {
        ensurePool();
        tx.executeWithoutResult(s -> {
            List<Long> files = jdbc.queryForList("""
                    UPDATE archive_copy SET state = 'queued', claimed_by = NULL, lease_until = NULL
                     WHERE state = 'writing' AND claimed_by = ? RETURNING file_id""", Long.class, instance);
            recomputeStates(files);
            jdbc.update("UPDATE archive_volume SET claimed_by = NULL, lease_until = NULL WHERE claimed_by = ?", instance);
        });
        log.info("archive flusher {} started with drives {}", instance, jobs.keySet());
    }

    /**
     * Adds blank volumes to the pool: new labels, or catalog volumes of this library holding no segment yet.
     * A label the catalog knows in another library is left out (it is not in this library's slots).
     */
    private void ensurePool() {
        String mine = library.layout().name();
        for (String label : poolLabels) {
            jdbc.update("INSERT INTO volume (label, library) VALUES (?, ?) ON CONFLICT (label) DO NOTHING", label, mine);
            String theirs = jdbc.queryForObject("SELECT library FROM volume WHERE label = ?", String.class, label);
            if (!mine.equals(theirs)) {
                log.warn("archive: pool volume {} belongs to library {}, not {}: left out of the pool", label, theirs, mine);
                continue;
            }
            jdbc.update("""
                    INSERT INTO archive_volume (volume_id) SELECT v.id FROM volume v
                     WHERE v.label = ? AND NOT EXISTS (SELECT 1 FROM segment s WHERE s.volume_id = v.id)
                    ON CONFLICT (volume_id) DO NOTHING""", label);
        }
    }

    /** One round: leases, then every idle write drive takes the best family worth flushing. */
    public synchronized void poll() {
        polling = true;
        try {
            poll0();
        } finally {
            polling = false;
        }
    }

    private void poll0() {
        JdbcArchiveBuffer.foldTotals(jdbc);
        expireLeases();
        renewLeases();
        Map<String, DriveStatus> status = new HashMap<>();
        // volumes stuck in a failed or disabled drive (any drive of the library) until it is repaired: their families
        // go on on another volume meanwhile, and back to them once they are out
        Set<String> stuck = new HashSet<>();
        for (DriveStatus s : library.drives()) {
            status.put(s.drive(), s);
            if ((s.state() == DriveState.FAILED || s.state() == DriveState.DISABLED) && s.volume() != null) stuck.add(s.volume());
        }
        for (DriveJob job : jobs.values()) {
            if (job.busy) continue;
            DriveStatus st = status.get(job.drive);
            if (st == null || (st.state() != DriveState.EMPTY && st.state() != DriveState.MOUNTED_IDLE)) continue;
            job.volume = st.volume();
            if (st.downRequested()) { // an operator took it down: its write list has ended, it is unloaded (then DISABLED)
                if (st.state() == DriveState.MOUNTED_IDLE) dismount(job);
                continue;
            }
            Claim c;
            try {
                c = claim(job, stuck);
            } catch (RuntimeException e) {
                log.warn("archive: claiming work for drive {} failed; retrying", job.drive, e);
                continue;
            }
            if (c == null) {
                Restore r = null;
                try {
                    r = claimRestore(job, stuck);
                } catch (RuntimeException e) {
                    log.warn("archive: looking for a copy to read back on drive {} failed; retrying", job.drive, e);
                }
                if (r != null) {
                    job.idleSince = null;
                    restore(job, r);
                    continue;
                }
                // nothing for it: an idle drive keeps its volume a while (its family may go on) and then lets
                // it go, so recalls of fresh files find the volume in its slot
                if (job.volume != null) {
                    if (job.idleSince == null) job.idleSince = clock.instant();
                    if (!job.idleSince.plus(props.flush().idleDismount()).isAfter(clock.instant())) dismount(job);
                }
                continue;
            }
            job.idleSince = null;
            run(job, c);
        }
    }

    /** Whether any drive is writing, mounting or dismounting for this flusher. */
    public synchronized boolean busy() {
        return jobs.values().stream().anyMatch(j -> j.busy);
    }

    // ------------------------------------------------------------------ claims

    private void expireLeases() {
        tx.executeWithoutResult(s -> {
            List<Long> files = jdbc.queryForList("""
                    UPDATE archive_copy SET state = 'queued', claimed_by = NULL, lease_until = NULL
                     WHERE state = 'writing' AND lease_until < now() RETURNING file_id""", Long.class);
            recomputeStates(files);
            jdbc.update("UPDATE archive_volume SET claimed_by = NULL, lease_until = NULL WHERE lease_until < now()");
        });
    }

    private void renewLeases() {
        Timestamp until = leaseUntil();
        renew("writing", inFlight, until); // copies being written
        renew("done", reading, until); // bad copies whose good copy is being read back
        jdbc.update("UPDATE archive_volume SET lease_until = ? WHERE claimed_by = ?", until, instance);
    }

    /** Renews this instance's claims of {@code copies} in {@code state}: only those with less than half their time left. */
    private void renew(String state, java.util.Collection<CopyKey> copies, Timestamp until) {
        if (copies.isEmpty()) return;
        // not every copy in flight at every poll
        jdbc.update("""
                UPDATE archive_copy SET lease_until = ? WHERE state = ? AND claimed_by = ?
                   AND (file_id, copy_no) IN (SELECT * FROM unnest(?::bigint[], ?::smallint[]))
                   AND (lease_until IS NULL OR lease_until < ?)""", until, state, instance,
                copies.stream().map(CopyKey::fileId).toArray(Long[]::new),
                copies.stream().map(CopyKey::copy).toArray(Integer[]::new),
                Timestamp.from(Instant.now().plus(props.flush().lease().dividedBy(2))));
    }

    private Timestamp leaseUntil() {
        return Timestamp.from(Instant.now().plus(props.flush().lease()));
    }

    private Claim claim(DriveJob job, Set<String> stuck) {
        String mounted = job.volume;
        // volumes in (or leaving) our other drives cannot be mounted here until they are back in their slot
        Set<String> elsewhere = new HashSet<>();
        for (DriveJob o : jobs.values()) if (o != job && o.volume != null) elsewhere.add(o.volume);
        return tx.execute(s -> {
            Map<String, long[]> open = new HashMap<>(); // family/copy -> volume id
            Map<String, String> openLabel = new HashMap<>();
            Set<String> busyKeys = new HashSet<>();
            jdbc.query("""
                    SELECT av.volume_id, v.label, av.family, av.copy_no, av.claimed_by, av.lease_until > now() AS leased
                      FROM archive_volume av JOIN volume v ON v.id = av.volume_id
                     WHERE av.state = 'open' AND v.state = 'available' ORDER BY av.opened_at DESC""", rs -> {
                if (stuck.contains(rs.getString(2))) return;
                String key = rs.getString(3) + '\0' + rs.getInt(4);
                long id = rs.getLong(1);
                open.put(key, new long[] {id});
                openLabel.put(key, rs.getString(2));
                String by = rs.getString(5);
                boolean otherInstance = by != null && !by.equals(instance) && rs.getBoolean(6);
                boolean otherDrive = inUse.contains(id) || elsewhere.contains(rs.getString(2));
                if (otherInstance || otherDrive) busyKeys.add(key);
            });
            List<FamilyQueue> queues = queued(clock.instant(), openLabel, busyKeys);
            if (queues.isEmpty()) return null;
            boolean pressure = usedBytes() > props.lowWaterBytes();
            FamilyQueue here = null;
            if (mounted != null)
                for (FamilyQueue x : queues) if (mounted.equals(x.openVolume())) here = x;
            long minBytes = props.flush().minBytes().toBytes();
            List<FamilyQueue> worth = FlushPlanner.worthFlushing(queues, clock.instant(), minBytes, props.flush().maxAge(), pressure);
            FamilyQueue q = FlushPlanner.choose(worth, here, minBytes);
            if (q == null) return null;
            for (int attempt = 0; attempt < 3; attempt++) {
                Claim c = claimOn(q, stuck);
                if (c != CLOSED) return c;
            }
            return null;
        });
    }

    /**
     * What each family's copy has queued and ready at {@code ?}: its running totals less its copies not ready
     * yet (put back with a backoff not over, or registered on a clock ahead of this one), and its oldest ready
     * copy. It reads one row per family with a queue and the few copies not ready, not every queued copy (1.6 s
     * at 10^6 of them). A function (V39) so that its planner settings, index scans only, go wherever it is run.
     */
    static final String QUEUED_SQL = "SELECT family, copy_no, bytes, files, oldest FROM archive_ready_queues(?)";

    /** The queues ready at {@code now}, with the volume each appends to and whether another writer has it. */
    List<FamilyQueue> queued(Instant now, Map<String, String> openLabel, Set<String> busyKeys) {
        Timestamp at = Timestamp.from(now);
        return jdbc.query(QUEUED_SQL, (rs, i) -> {
            String key = rs.getString(1) + '\0' + rs.getInt(2);
            return new FamilyQueue(rs.getString(1), rs.getInt(2), rs.getLong(3), rs.getLong(4),
                    rs.getTimestamp(5).toInstant(), openLabel.get(key), busyKeys.contains(key));
        }, at);
    }

    private static final Claim CLOSED = new Claim(-1, "", "", 0, List.of());

    /**
     * Claims the head of the family's queue for its open volume (opening a blank one if needed). CLOSED: it was full.
     * An open volume an operator disabled, or one stuck in a failed drive, is not written (nor closed): the family
     * opens another meanwhile, and goes back to the older one, still open, once it is available or out again.
     */
    private Claim claimOn(FamilyQueue q, Set<String> stuck) {
        record Vol(long id, String label, long eod, String claimedBy, boolean leased) {}
        // one claim of a family's copy at a time (the row the claim's trigger locks anyway, V28, taken first): two
        // instances taking up a new family at once each opened a blank, unseen by the other before its commit
        jdbc.query("SELECT 1 FROM archive_family_queue WHERE family = ? AND copy_no = ? FOR UPDATE", rs -> {}, q.family(), q.copy());
        List<Vol> vols = jdbc.query("""
                SELECT av.volume_id, v.label, av.end_of_data, av.claimed_by, av.lease_until > now()
                  FROM archive_volume av JOIN volume v ON v.id = av.volume_id
                 WHERE av.family = ? AND av.copy_no = ? AND av.state = 'open' AND v.library = ? AND v.state = 'available'
                   AND v.label <> ALL(?)
                 ORDER BY av.opened_at LIMIT 1 FOR UPDATE OF av""",
                (rs, i) -> new Vol(rs.getLong(1), rs.getString(2), rs.getLong(3), rs.getString(4), rs.getBoolean(5)),
                q.family(), q.copy(), library.layout().name(), stuck.toArray(String[]::new));
        Vol vol;
        if (!vols.isEmpty()) {
            vol = vols.get(0);
            if (vol.claimedBy != null && !vol.claimedBy.equals(instance) && vol.leased) return null;
        } else {
            // only the configured pool of this library: blanks left by an earlier configuration (another
            // prefix, another library) stay blank
            List<Vol> blank = jdbc.query("""
                    SELECT av.volume_id, v.label, av.end_of_data, av.claimed_by, false FROM archive_volume av
                      JOIN volume v ON v.id = av.volume_id
                     WHERE av.state = 'blank' AND v.state = 'available' AND v.library = ? AND v.label = ANY(?)
                     ORDER BY v.label LIMIT 1 FOR UPDATE OF av SKIP LOCKED""",
                    (rs, i) -> new Vol(rs.getLong(1), rs.getString(2), rs.getLong(3), rs.getString(4), false),
                    library.layout().name(), poolLabels);
            if (blank.isEmpty()) {
                if (!noBlankWarned) log.warn("archive: no blank volume left in the pool for family {}; its files wait in the buffer "
                        + "(add volumes: stagehand.archive.pool)", q.family());
                noBlankWarned = true;
                return null;
            }
            noBlankWarned = false;
            vol = blank.get(0);
            jdbc.update("""
                    UPDATE archive_volume SET family = ?, copy_no = ?, state = 'open', opened_at = clock_timestamp()
                     WHERE volume_id = ?""", q.family(), q.copy(), vol.id);
            log.info("archive: family {} copy {} opens volume {}", q.family(), q.copy(), vol.label);
        }
        List<Item> head = jdbc.query("""
                SELECT c.file_id, f.name, a.path, a.size_bytes, a.adler32 FROM archive_copy c
                  JOIN archive_file a ON a.file_id = c.file_id JOIN file f ON f.id = c.file_id
                 WHERE c.family = ? AND c.copy_no = ? AND c.state = 'queued' AND c.not_before <= ?
                 ORDER BY c.seq LIMIT ? FOR UPDATE OF c SKIP LOCKED""",
                (rs, i) -> new Item(rs.getLong(1), rs.getString(2), rs.getString(3), rs.getLong(4), rs.getString(5).trim()),
                q.family(), q.copy(), Timestamp.from(clock.instant()), props.flush().maxBatchFiles());
        if (head.isEmpty()) return null;
        long[] sizes = head.stream().mapToLong(Item::size).toArray();
        // a list still being written to this volume has not moved its end of data yet: its bytes are taken
        long promised = jdbc.queryForObject("""
                SELECT coalesce(sum(a.size_bytes), 0) FROM archive_copy c JOIN archive_file a ON a.file_id = c.file_id
                 WHERE c.volume_id = ? AND c.state = 'writing'""", Long.class, vol.id);
        int n = FlushPlanner.take(sizes, volumeCapacity - vol.eod - promised, props.flush().maxBatchBytes().toBytes(),
                props.flush().maxBatchFiles());
        if (n == 0 && promised > 0) return null; // judge the volume full once its writes in flight have landed
        if (n == 0) {
            jdbc.update("""
                    UPDATE archive_volume SET state = 'full', closed_at = now(), claimed_by = NULL, lease_until = NULL
                     WHERE volume_id = ?""", vol.id);
            log.info("archive: volume {} of family {} is full ({} bytes)", vol.label, q.family(), vol.eod);
            return CLOSED;
        }
        List<Item> files = List.copyOf(head.subList(0, n));
        Long[] ids = files.stream().map(Item::fileId).toArray(Long[]::new);
        Timestamp until = leaseUntil();
        jdbc.update("""
                UPDATE archive_copy SET state = 'writing', claimed_by = ?, lease_until = ?, volume_id = ?
                 WHERE copy_no = ? AND file_id = ANY(?)""", instance, until, vol.id, q.copy(), ids);
        jdbc.update("UPDATE archive_file SET state = 'writing', updated_at = now() WHERE file_id = ANY(?) AND state = 'queued'", (Object) ids);
        jdbc.update("UPDATE archive_volume SET claimed_by = ?, lease_until = ? WHERE volume_id = ?", instance, until, vol.id);
        return new Claim(vol.id, vol.label, q.family(), q.copy(), files);
    }

    private long usedBytes() {
        return JdbcArchiveBuffer.usedBytes(jdbc);
    }

    // ------------------------------------------------------------------ copies made again from another copy

    /**
     * A tape copy a read found bad (segment suspect or lost) after its file left the buffer, and the file's good copy
     * its bytes are read back from into {@code target}, in the landing area.
     */
    private record Restore(long fileId, int copy, String name, long size, String adler32, String badVolume, String badState,
                           long goodVolumeId, String goodLabel, long offset, Path target) {}

    /**
     * The oldest evicted file with a copy a read found bad and another copy still good on an available volume of this
     * library, while the buffer has room for it: its bad copy is claimed (the claim of a 'done' copy, leased, means its
     * bytes are being read back) and so is the good volume when it is an archive volume, as for a write. Such a copy
     * was never made again: the file was left with one copy for ever.
     */
    private Restore claimRestore(DriveJob job, Set<String> stuck) {
        long room = props.highWaterBytes() - usedBytes();
        if (room <= 0) return null;
        Set<String> elsewhere = new HashSet<>(stuck);
        for (DriveJob o : jobs.values()) if (o != job && o.volume != null) elsewhere.add(o.volume);
        Path dir = props.landing().toAbsolutePath().normalize().resolve(RESTORED);
        return tx.execute(s -> {
            // from the segments that are not ok (V50's index), not through every copy
            List<Restore> found = jdbc.query("""
                    SELECT c.file_id, c.copy_no, f.name, a.size_bytes, a.adler32, bv.label, bs.state, gv.id, gv.label, gs.offset_bytes
                      FROM segment bs JOIN volume bv ON bv.id = bs.volume_id
                      JOIN archive_copy c ON c.file_id = bs.file_id AND c.volume_id = bs.volume_id AND c.state = 'done'
                      JOIN archive_file a ON a.file_id = c.file_id AND a.state = 'evicted' AND a.size_bytes <= ?
                      JOIN file f ON f.id = c.file_id
                      JOIN archive_copy g ON g.file_id = c.file_id AND g.copy_no <> c.copy_no AND g.state = 'done'
                      JOIN segment gs ON gs.file_id = g.file_id AND gs.volume_id = g.volume_id AND gs.state = 'ok'
                      JOIN volume gv ON gv.id = gs.volume_id AND gv.state = 'available' AND gv.library = ?
                      LEFT JOIN archive_volume gav ON gav.volume_id = gv.id
                     WHERE bs.state <> 'ok' AND (c.lease_until IS NULL OR c.lease_until < now()) AND gv.label <> ALL(?)
                       AND (gav.claimed_by IS NULL OR gav.claimed_by = ? OR gav.lease_until < now())
                     ORDER BY (gv.label = ?) DESC, a.evicted_at, c.file_id LIMIT 1 FOR UPDATE OF c SKIP LOCKED""",
                    (rs, i) -> new Restore(rs.getLong(1), rs.getInt(2), rs.getString(3), rs.getLong(4), rs.getString(5).trim(),
                            rs.getString(6), rs.getString(7), rs.getLong(8), rs.getString(9), rs.getLong(10),
                            dir.resolve(Long.toString(rs.getLong(1)))),
                    room, library.layout().name(), elsewhere.toArray(String[]::new), instance, String.valueOf(job.volume));
            if (found.isEmpty()) return null;
            Restore r = found.get(0);
            Timestamp until = leaseUntil();
            jdbc.update("UPDATE archive_copy SET claimed_by = ?, lease_until = ? WHERE file_id = ? AND copy_no = ?",
                    instance, until, r.fileId, r.copy);
            jdbc.update("UPDATE archive_volume SET claimed_by = ?, lease_until = ? WHERE volume_id = ?", instance, until, r.goodVolumeId);
            return r;
        });
    }

    /** Under the landing area: where evicted files' bytes are read back to (the watcher only takes marked files). */
    static final String RESTORED = ".restored";

    private void restore(DriveJob job, Restore r) {
        job.busy = true;
        reading.add(new CopyKey(r.fileId, r.copy));
        log.warn("archive: copy {} of {} on {} was found bad by a read (segment {}) after the file left the buffer: reading it "
                + "back from {} to write it again", r.copy, r.name, r.badVolume, r.badState, r.goodLabel);
        CompletableFuture<Void> ready;
        try {
            Files.createDirectories(r.target.getParent());
            Files.deleteIfExists(r.target);
            if (r.goodLabel.equals(job.volume)) ready = CompletableFuture.completedFuture(null);
            else if (job.volume != null) {
                String out = job.volume;
                ready = library.dismount(job.drive).thenRun(() -> unclaim(out)).thenCompose(v -> library.mount(job.drive, r.goodLabel));
            } else ready = library.mount(job.drive, r.goodLabel);
        } catch (java.io.IOException | RuntimeException e) {
            ready = CompletableFuture.failedFuture(e);
        }
        ready.whenComplete((v, e) -> {
            if (e != null) restored(job, r, e);
            else readBack(job, r);
        });
    }

    private synchronized void readBack(DriveJob job, Restore r) {
        job.volume = r.goodLabel;
        SegmentRead seg = new SegmentRead(r.fileId, r.name, r.goodLabel, r.offset, r.size, r.target);
        ReadBatch batch;
        try {
            batch = library.read(job.drive, List.of(seg));
        } catch (RuntimeException e) {
            restored(job, r, e);
            return;
        }
        CompletableFuture<ReadResult> result = batch.result(seg);
        batch.done().whenComplete((v, e) -> result.whenComplete((x, err) -> restored(job, r, err)));
    }

    /**
     * The bytes read back: when they have the registered checksum, the file is in the buffer again at its new path (its
     * bad copy queued, written to a volume of its copy number, and the file evicted again once archived), in one commit
     * and only while the claim is still this instance's. Otherwise the claim is kept for the retry backoff.
     */
    private synchronized void restored(DriveJob job, Restore r, Throwable failure) {
        // the read is over: its claim is no longer renewed (a failed one keeps it, not renewed, for the retry backoff)
        reading.remove(new CopyKey(r.fileId, r.copy));
        try {
            String why = failure == null ? null : cause(failure).toString();
            if (why == null) {
                String sum = dev.stagehand.cache.Checksums.adler32Of(r.target);
                if (!sum.equals(r.adler32)) why = "read back with Adler32 " + sum + ", registered " + r.adler32;
            }
            if (why != null) {
                Files.deleteIfExists(r.target);
                log.warn("archive: reading back {} from {} failed ({}); tried again after the retry backoff", r.name, r.goodLabel, why);
                jdbc.update("UPDATE archive_copy SET lease_until = ? WHERE file_id = ? AND copy_no = ? AND state = 'done' AND claimed_by = ?",
                        Timestamp.from(Instant.now().plus(props.flush().retryBackoff())), r.fileId, r.copy, instance);
                return;
            }
            Instant modified = JdbcArchiveBuffer.modified(r.target);
            boolean back = Boolean.TRUE.equals(tx.execute(s -> {
                int copy = jdbc.update("""
                        UPDATE archive_copy SET state = 'queued', volume_id = NULL, claimed_by = NULL, lease_until = NULL, not_before = now(),
                               error = ? WHERE file_id = ? AND copy_no = ? AND state = 'done' AND claimed_by = ?""",
                        "its copy on " + r.badVolume + " was found bad by a read (segment " + r.badState + ") after the file left the "
                                + "buffer: read back from " + r.goodLabel + " and written again", r.fileId, r.copy, instance);
                int file = jdbc.update("""
                        UPDATE archive_file SET state = 'queued', path = ?, modified_at = ?, evicted_at = NULL, updated_at = now()
                         WHERE file_id = ? AND state = 'evicted'""", r.target.toString(), Timestamp.from(modified), r.fileId);
                if (copy == 1 && file == 1) return true;
                s.setRollbackOnly();
                return false;
            }));
            if (!back) {
                Files.deleteIfExists(r.target);
                log.warn("archive: {} read back from {} is discarded: its claim lapsed or the file changed meanwhile", r.name, r.goodLabel);
            }
        } catch (java.io.IOException | RuntimeException e) {
            log.error("archive: recording {} read back from {} failed; its claim lapses and it is read again", r.name, r.goodLabel, e);
        } finally {
            job.busy = false;
            DriveStatus st = library.drives().stream().filter(x -> x.drive().equals(job.drive)).findFirst().orElse(null);
            job.volume = st == null ? null : st.volume();
            if (st != null && (st.state() == DriveState.FAILED || st.state() == DriveState.DISABLED)) releaseVolume(r.goodVolumeId);
            if (!polling) {
                try {
                    poll();
                } catch (RuntimeException e) {
                    log.warn("archive: flush round failed; retrying at the next poll", e);
                }
            }
        }
    }

    // ------------------------------------------------------------------ drive work

    private void run(DriveJob job, Claim c) {
        job.busy = true;
        inUse.add(c.volumeId);
        for (Item f : c.files) inFlight.add(new CopyKey(f.fileId, c.copy));
        CompletableFuture<Void> ready;
        try {
            if (c.label.equals(job.volume)) ready = CompletableFuture.completedFuture(null);
            else if (job.volume != null) {
                // the volume going back to its slot is let go, as after an idle dismount (its claim was renewed at every poll)
                String out = job.volume;
                ready = library.dismount(job.drive).thenRun(() -> unclaim(out)).thenCompose(v -> library.mount(job.drive, c.label));
            }
            else ready = library.mount(job.drive, c.label);
        } catch (RuntimeException e) {
            ready = CompletableFuture.failedFuture(e);
        }
        ready.whenComplete((v, e) -> {
            if (e != null) mountFailed(job, c, e);
            else write(job, c);
        });
    }

    private synchronized void mountFailed(DriveJob job, Claim c, Throwable e) {
        Throwable cause = cause(e);
        log.warn("archive: mounting {} on {} for family {} failed: {}", c.label, job.drive, c.family, cause.toString());
        // not in the library (or disabled there): the family's open volume would be mounted again every backoff for
        // ever. A volume merely in another drive (a recall reading it) is busy, not unavailable.
        boolean unavailable = cause instanceof TapeFailure tf && tf.kind() == TapeFailure.Kind.VOLUME_UNAVAILABLE
                && !inADrive(c.label);
        try {
            // a missing volume is not the files' fault: they are not charged and go to another volume at once
            for (Item f : c.files) requeue(c, f, "mount of " + c.label + " failed: " + cause.getMessage(), !unavailable);
            if (cause instanceof TapeFailure tf && tf.kind() == TapeFailure.Kind.MEDIA_ERROR) closeVolume(c, "media error");
            if (unavailable) volumeUnavailable(c, cause.getMessage());
            releaseVolume(c.volumeId);
        } catch (RuntimeException ex) {
            log.error("archive: putting back the write list for {} failed; its claims lapse after the lease", c.label, ex);
        } finally {
            // whatever failed above, nothing is being written: the claims stop being renewed and the drive is free
            for (Item f : c.files) inFlight.remove(new CopyKey(f.fileId, c.copy));
            inUse.remove(c.volumeId);
            finished(job, c);
        }
    }

    private synchronized void write(DriveJob job, Claim c) {
        job.volume = c.label;
        List<FileWrite> writes = new ArrayList<>();
        Map<FileWrite, Item> items = new HashMap<>();
        for (Item f : c.files) {
            FileWrite w = new FileWrite(f.fileId, f.name, Path.of(f.path), f.size);
            writes.add(w);
            items.put(w, f);
        }
        WriteBatch batch;
        try {
            batch = library.write(job.drive, writes);
        } catch (RuntimeException e) {
            mountFailed(job, c, e);
            return;
        }
        for (FileWrite w : writes) batch.result(w).whenComplete((seg, e) -> fileDone(c, items.get(w), seg, e));
        batch.done().whenComplete((v, e) -> batchDone(job, c));
    }

    private synchronized void fileDone(Claim c, Item f, WrittenSegment seg, Throwable e) {
        try {
            if (e != null) {
                Throwable cause = cause(e);
                boolean cancelled = cause instanceof CancellationException;
                // refused, not started, because an operator is taking the drive down: not the file's fault, not charged
                boolean refused = cause instanceof TapeFailure down && down.kind() == TapeFailure.Kind.DRIVE_DOWN;
                log.warn("archive: writing {} (copy {}) to {} failed: {}", f.name, c.copy, c.label, cause.toString());
                String gone = cancelled || refused ? null : bufferFileGone(f);
                if (gone != null) { // writing it again cannot help: it was retried every backoff for ever
                    failForGood(c, f, gone);
                    return;
                }
                requeue(c, f, cancelled ? "write cancelled" : cause.getMessage(), !cancelled && !refused);
                if (cause instanceof TapeFailure tf && (tf.kind() == TapeFailure.Kind.MEDIA_ERROR
                        || tf.kind() == TapeFailure.Kind.VOLUME_UNAVAILABLE))
                    closeVolume(c, tf.kind().name()); // no appending after a bad or full spot: the family moves on
                return;
            }
            String sum = dev.stagehand.cache.Checksums.hex(seg.adler32());
            if (!sum.equals(f.adler32) || !seg.volume().equals(c.label)) {
                mismatch(c, f, seg, "the tape copy does not match: Adler32 " + sum + " on " + seg.volume() + ", expected "
                        + f.adler32 + " on " + c.label);
                return;
            }
            FileArchived archived = tx.execute(s -> recordWritten(c, f, seg));
            if (archived != null) events.accept(archived);
        } catch (RuntimeException ex) {
            // the copy stays 'writing' under a lease no longer renewed: it lapses and the copy is written again
            log.error("archive: recording the write of {} failed; it is written again once its claim lapses", f.name, ex);
        } finally {
            inFlight.remove(new CopyKey(f.fileId, c.copy));
        }
    }

    /**
     * The segment, the copy, the volume's end of data and (when every copy is written) the file, in one commit; only
     * while the copy's claim is still this instance's. One that lapsed (this instance stalled past its lease) and was
     * taken over is the new holder's: recording this write beside it gave the copy a second segment, and the file could
     * count as archived while the holder's write was still under way (or failing). The late write is discarded: its
     * bytes stay on the volume as dead space, and the file is archived by the holder's write (or queued again).
     */
    private FileArchived recordWritten(Claim c, Item f, WrittenSegment seg) {
        // the copy first, as every claim, requeue and delete locks it: the claim cannot lapse or move under this record
        boolean held = holds(c, f);
        Long fseq = volumeEnd(c, f, seg);
        if (!held) {
            log.warn("archive: the write of {} (copy {}) to {} at offset {} is discarded: its claim lapsed and was taken over "
                    + "(or the file was queued again, failed or deleted) meanwhile; its bytes stay there as dead space",
                    f.name, c.copy, c.label, seg.offsetBytes());
            return null;
        }
        jdbc.update("""
                INSERT INTO segment (file_id, volume_id, offset_bytes, fseq, verified)
                VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (file_id, volume_id) DO UPDATE SET offset_bytes = excluded.offset_bytes, fseq = excluded.fseq,
                       state = 'ok', verified = excluded.verified""",
                f.fileId, c.volumeId, seg.offsetBytes(), fseq == null ? null : fseq.intValue(), seg.verified());
        jdbc.update("UPDATE archive_volume SET files = files + 1 WHERE volume_id = ?", c.volumeId);
        jdbc.update("""
                UPDATE archive_copy SET state = 'done', volume_id = ?, claimed_by = NULL, lease_until = NULL
                 WHERE file_id = ? AND copy_no = ?""", c.volumeId, f.fileId, c.copy);
        List<FileArchived> done = jdbc.query("""
                UPDATE archive_file a SET state = 'archived', archived_at = now(), updated_at = now()
                  FROM file f
                 WHERE a.file_id = ? AND f.id = a.file_id AND a.state IN ('queued', 'writing')
                   AND (SELECT count(*) FROM archive_copy c WHERE c.file_id = a.file_id AND c.state = 'done') >= a.copies
                RETURNING a.file_id, f.dataset_id, f.name, a.path, a.size_bytes, a.adler32, a.archived_at""",
                (rs, i) -> JdbcArchiveBuffer.archived(rs), f.fileId);
        if (!done.isEmpty()) return done.get(0);
        recomputeStates(List.of(f.fileId)); // another copy still to write: 'writing' only while one is
        return null;
    }

    /**
     * Moves the volume's end of data past a file the library wrote there (recorded or not: its bytes are on the volume) and
     * returns the file's tape file number (null: unknown). The library appends at the volume's end, so a file beyond the
     * catalog's end of data means the volume holds a write the catalog has no record of (a crash, or a failed record,
     * between a write and its record): the numbers from there on are unknown. The volume's counter becomes NULL, so each
     * later segment there has none, rather than one off by the files not recorded (recalls go by offset). A file before
     * the catalog's end of data (the volume written over, or a script whose HSM reports no byte positions) leaves the
     * numbers unknown too. Both are logged once per volume; neither closes it (numbers are informative only).
     */
    private Long volumeEnd(Claim c, Item f, WrittenSegment seg) {
        Map<String, Object> v = jdbc.queryForMap("SELECT end_of_data, next_fseq FROM archive_volume WHERE volume_id = ? FOR UPDATE", c.volumeId);
        long eod = ((Number) v.get("end_of_data")).longValue();
        Long fseq = v.get("next_fseq") == null ? null : ((Number) v.get("next_fseq")).longValue();
        if (seg.offsetBytes() > eod) {
            if (fseq != null)
                log.error("archive: {} was written to {} at offset {}, past the catalog's end of data there ({}): the volume holds "
                        + "a write the catalog has no record of (a crash or a failed record between the write and its record). "
                        + "(Or the script reports positions with gaps between files.) Its file sequence numbers from here on are "
                        + "unknown and not recorded", f.name, c.label, seg.offsetBytes(), eod);
            fseq = null;
            jdbc.update("UPDATE archive_volume SET next_fseq = NULL WHERE volume_id = ?", c.volumeId);
        } else if (seg.offsetBytes() < eod) {
            // Not closed for writing: a site script whose HSM has no byte positions (TSM behind ENDIT reports none, a
            // script may answer 0 for every file) would otherwise close each volume after its first file
            if (fseq != null)
                log.error("archive: {} was written to {} at offset {}, before the catalog's end of data there ({}): the library's "
                        + "offsets do not follow the catalog's (its volume written over, or a script that reports no byte "
                        + "positions). Its file sequence numbers from here on are unknown and not recorded",
                        f.name, c.label, seg.offsetBytes(), eod);
            fseq = null;
            jdbc.update("UPDATE archive_volume SET next_fseq = NULL WHERE volume_id = ?", c.volumeId);
            if (seg.offsetBytes() > 0 || positionsReported(c.volumeId)) beyondEndOfData(c, seg.offsetBytes());
        }
        jdbc.update("UPDATE archive_volume SET end_of_data = greatest(end_of_data, ?), next_fseq = next_fseq + 1 WHERE volume_id = ?",
                seg.offsetBytes() + f.size, c.volumeId);
        return fseq;
    }

    /**
     * Whether the library gave this volume byte positions: a segment past offset 0 there. Then a write at 0 before the
     * catalog's end of data is the volume written again from its start (relabelled, reclaimed), not a script that
     * answers 0 for every file.
     */
    private boolean positionsReported(long volumeId) {
        return Boolean.TRUE.equals(jdbc.queryForObject("SELECT EXISTS (SELECT 1 FROM segment WHERE volume_id = ? AND offset_bytes > 0)",
                Boolean.class, volumeId));
    }

    /**
     * The library appended at {@code endOfData}, before segments the catalog has on the volume from there on: writes
     * recorded that the tape does not have (a failed flush, a driver crash), or bytes since written over. Those
     * segments point at nothing: marked suspect, as a bad checksum does, so recalls read another copy and the archive
     * writes the copy again while the file is in its buffer. At offset 0 only on a volume with positions (a script whose
     * HSM reports none gives 0 for every file); never this list's own files, recorded in whatever order they landed.
     */
    private void beyondEndOfData(Claim c, long endOfData) {
        List<String> gone = jdbc.queryForList("""
                UPDATE segment s SET state = 'suspect' FROM file f
                 WHERE s.volume_id = ? AND s.offset_bytes >= ? AND s.state = 'ok' AND f.id = s.file_id
                   AND NOT (s.file_id = ANY(?))
                RETURNING f.name""", String.class, c.volumeId, endOfData,
                c.files.stream().map(i -> i.fileId).toArray(Long[]::new));
        if (!gone.isEmpty())
            log.error("archive: the library's end of data on {} is at {}, before {} segment(s) the catalog has there (writes "
                    + "recorded that the tape does not have): marked suspect, read from other copies and written again "
                    + "while in the buffer: {}", c.label, endOfData, gone.size(), gone.size() <= 10 ? gone : gone.subList(0, 10));
    }

    /**
     * A tape copy that does not match the registered checksum. When the buffer file itself no longer has the
     * registered bytes, writing it again cannot help: the file fails for good and the volume, which wrote what
     * it was given, stays open. Otherwise the spot on tape is suspect: the volume is closed and the copy
     * retried, up to {@link #MAX_MISMATCHES} times.
     */
    private void mismatch(Claim c, Item f, WrittenSegment seg, String error) {
        String now;
        try {
            now = dev.stagehand.cache.Checksums.adler32Of(Path.of(f.path));
        } catch (java.io.IOException e) {
            now = "unreadable (" + e.getMessage() + ")";
        }
        // its bytes are on the volume all the same: the next file goes after them (its end of data, its tape file number).
        // A copy whose bytes on tape do not match was not counted, and the files its list still wrote there were numbered
        // one short
        if (seg.volume().equals(c.label)) tx.executeWithoutResult(s -> volumeEnd(c, f, seg));
        if (!now.equals(f.adler32)) {
            failForGood(c, f, "the buffer file changed after registration (Adler32 now " + now + ", registered " + f.adler32
                    + "): not written to tape");
            return;
        }
        // mismatches only (V34): the copy's attempts also count failed mounts and drives, each charged to a whole list.
        // Counted (and the file failed) only while the claim is still ours, in one commit: a copy taken over meanwhile is
        // its new holder's, whose own write decides it
        Boolean held = tx.execute(s -> {
            if (!holds(c, f)) return false;
            int mismatches = jdbc.queryForObject("""
                    UPDATE archive_copy SET mismatches = mismatches + 1 WHERE file_id = ? AND copy_no = ? RETURNING mismatches""",
                    Integer.class, f.fileId, c.copy);
            if (mismatches >= MAX_MISMATCHES) failed(c, f, error + " (" + MAX_MISMATCHES + " copies that do not match; the buffer file is intact)");
            else requeue(c, f, error, true);
            return true;
        });
        if (!Boolean.TRUE.equals(held)) discarded(c, f, "its checksum mismatch is not counted");
        // the spot on tape is suspect whoever holds the copy now: this drive wrote bad bytes there
        closeVolume(c, "checksum mismatch");
    }

    /**
     * Whether the copy's claim is still this instance's (for this list's volume), locking the copy: the row every claim,
     * requeue, record and delete locks first, so the claim cannot lapse or move before the caller's commit.
     */
    private boolean holds(Claim c, Item f) {
        return !jdbc.queryForList("""
                SELECT 1 FROM archive_copy WHERE file_id = ? AND copy_no = ? AND state = 'writing' AND claimed_by = ? AND volume_id = ?
                   FOR UPDATE""", Integer.class, f.fileId, c.copy, instance, c.volumeId).isEmpty();
    }

    private void discarded(Claim c, Item f, String what) {
        log.warn("archive: the result of writing {} (copy {}) to {} is discarded ({}): its claim lapsed and was taken over (or the "
                + "file was queued again, failed or deleted) meanwhile", f.name, c.copy, c.label, what);
    }

    /** Why the buffer file can no longer be written as registered (deleted, or another size), or null. */
    private static String bufferFileGone(Item f) {
        Path p = Path.of(f.path);
        try {
            long size = Files.size(p);
            return size == f.size ? null : "the buffer file changed after registration (" + size + " bytes now, registered "
                    + f.size + "): not written to tape";
        } catch (java.nio.file.NoSuchFileException e) {
            return "buffer file gone: " + f.path + " was deleted before it was written to tape (register it anew)";
        } catch (java.io.IOException e) {
            return null; // unreadable for now (a file system hiccup): retried
        }
    }

    /**
     * The file cannot be archived: its copies not yet written fail with {@code error}, the file stays in the buffer. Only
     * while the copy's claim is still this instance's: one that lapsed (this instance stalled past its lease) and was taken
     * over is the new holder's, and failing the file under it failed a file the holder was writing (or had written: it
     * then stayed failed with a segment). The late result is discarded, logged.
     */
    private void failForGood(Claim c, Item f, String error) {
        boolean held = Boolean.TRUE.equals(tx.execute(s -> {
            if (!holds(c, f)) return false;
            failed(c, f, error);
            return true;
        }));
        if (!held) discarded(c, f, "not failed for good: " + error);
    }

    /** {@link #failForGood}'s changes, in the caller's transaction, the copy's claim checked. */
    private void failed(Claim c, Item f, String error) {
        log.error("archive: {} (copy {}) failed for good: {}", f.name, c.copy, error);
        jdbc.update("""
                UPDATE archive_copy SET state = 'failed', claimed_by = NULL, lease_until = NULL, volume_id = NULL,
                       attempts = attempts + CASE WHEN copy_no = ? THEN 1 ELSE 0 END, error = ?
                 WHERE file_id = ? AND (state = 'queued' OR (copy_no = ? AND state = 'writing'))""",
                c.copy, error, f.fileId, c.copy);
        jdbc.update("UPDATE archive_file SET state = 'failed', updated_at = now() WHERE file_id = ? AND state IN ('queued', 'writing')",
                f.fileId);
    }

    /**
     * The copy goes back to the queue (after the backoff when it is a real failure), if the claim is still this
     * instance's: one that lapsed while this instance stalled (a long pause, the database away) and was taken
     * over is the new holder's, and putting it back let a third instance write it again beside that holder.
     */
    private void requeue(Claim c, Item f, String error, boolean counts) {
        tx.executeWithoutResult(s -> {
            jdbc.update("""
                    UPDATE archive_copy SET state = 'queued', claimed_by = NULL, lease_until = NULL, volume_id = NULL,
                           attempts = attempts + ?, error = ?, not_before = ?
                     WHERE file_id = ? AND copy_no = ? AND state = 'writing' AND claimed_by = ?""",
                    counts ? 1 : 0, error, Timestamp.from(clock.instant().plus(counts ? props.flush().retryBackoff() : Duration.ZERO)),
                    f.fileId, c.copy, instance);
            recomputeStates(List.of(f.fileId));
        });
    }

    private void recomputeStates(List<Long> files) {
        if (files.isEmpty()) return;
        jdbc.update("""
                UPDATE archive_file a SET state = CASE WHEN x.writing > 0 THEN 'writing' ELSE 'queued' END, updated_at = now()
                  FROM (SELECT file_id, count(*) FILTER (WHERE state = 'writing') AS writing FROM archive_copy
                         WHERE file_id = ANY(?) GROUP BY file_id) x
                 WHERE a.file_id = x.file_id AND a.state IN ('queued', 'writing')""", (Object) files.toArray(Long[]::new));
    }

    private void closeVolume(Claim c, String why) {
        int n = jdbc.update("UPDATE archive_volume SET state = 'full', closed_at = now() WHERE volume_id = ? AND state = 'open'", c.volumeId);
        if (n > 0) log.warn("archive: volume {} closed for writing ({}); family {} continues on another", c.label, why, c.family);
    }

    private boolean inADrive(String label) {
        try {
            return library.drives().stream().anyMatch(d -> label.equals(d.volume()));
        } catch (RuntimeException e) {
            return false;
        }
    }

    /**
     * The library cannot mount the volume: it is disabled in the catalog with the library's reason, as the recall
     * side does, so neither side uses it until an operator makes it available. One holding no file yet goes back
     * to the pool (a blank taken again, by any family, once available); one holding files is closed. Either way
     * the family's next list opens another volume.
     */
    private void volumeUnavailable(Claim c, String reason) {
        boolean blank = Boolean.TRUE.equals(tx.execute(s -> {
            jdbc.update("UPDATE volume SET state = 'disabled', state_reason = ?, updated_at = now() WHERE id = ? AND state = 'available'",
                    "archive: " + reason, c.volumeId);
            return jdbc.update("""
                    UPDATE archive_volume SET state = 'blank', family = NULL, copy_no = NULL, opened_at = NULL
                     WHERE volume_id = ? AND state = 'open' AND files = 0 AND end_of_data = 0
                       AND NOT EXISTS (SELECT 1 FROM segment s WHERE s.volume_id = ?)
                       AND NOT EXISTS (SELECT 1 FROM archive_copy x WHERE x.volume_id = ? AND x.state = 'writing')""",
                    c.volumeId, c.volumeId, c.volumeId) > 0;
        }));
        if (blank) log.warn("archive: volume {} is unavailable ({}): disabled, back to the pool empty; family {} continues on another",
                c.label, reason, c.family);
        else closeVolume(c, "unavailable: " + reason + "; disabled");
    }

    private void releaseVolume(long volumeId) {
        inUse.remove(volumeId);
        jdbc.update("UPDATE archive_volume SET claimed_by = NULL, lease_until = NULL WHERE volume_id = ? AND claimed_by = ?", volumeId, instance);
    }

    private synchronized void batchDone(DriveJob job, Claim c) {
        inUse.remove(c.volumeId);
        // the volume stays claimed while it is in our drive: the next round appends without an exchange
        finished(job, c);
    }

    private void finished(DriveJob job, Claim c) {
        job.busy = false;
        DriveStatus st = library.drives().stream().filter(s -> s.drive().equals(job.drive)).findFirst().orElse(null);
        job.volume = st == null ? null : st.volume();
        if (st != null && (st.state() == DriveState.FAILED || st.state() == DriveState.DISABLED)) {
            releaseVolume(c.volumeId);
            log.warn("archive: write drive {} is {}; it is skipped until recovered", job.drive, st.state());
            return;
        }
        if (polling) return; // ended within a round: the poller's next round takes the drive
        try {
            poll();
        } catch (RuntimeException e) {
            log.warn("archive: flush round failed; retrying at the next poll", e);
        }
    }

    private void dismount(DriveJob job) {
        job.busy = true;
        String label = job.volume;
        CompletableFuture<Void> f;
        try {
            f = library.dismount(job.drive);
        } catch (RuntimeException e) {
            f = CompletableFuture.failedFuture(e);
        }
        f.whenComplete((v, e) -> dismounted(job, label, e));
    }

    private synchronized void dismounted(DriveJob job, String label, Throwable e) {
        job.busy = false;
        job.idleSince = null;
        job.volume = null;
        if (e != null) log.warn("archive: dismounting {} from {} failed: {}", label, job.drive, cause(e).toString());
        unclaim(label);
    }

    /** Lets go of a volume no longer in any of this instance's drives (another instance may append to it). */
    private void unclaim(String label) {
        try {
            jdbc.update("""
                    UPDATE archive_volume SET claimed_by = NULL, lease_until = NULL
                     WHERE claimed_by = ? AND volume_id = (SELECT id FROM volume WHERE label = ?)""", instance, label);
        } catch (RuntimeException e) {
            log.warn("archive: letting go of volume {} failed; it stays claimed by this instance", label, e);
        }
    }

    private static Throwable cause(Throwable e) {
        while ((e instanceof CompletionException || e instanceof java.util.concurrent.ExecutionException) && e.getCause() != null)
            e = e.getCause();
        return e;
    }
}
