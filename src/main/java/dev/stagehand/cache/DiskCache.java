package dev.stagehand.cache;

import dev.stagehand.platform.DatabaseRetry;
import dev.stagehand.platform.Durable;
import dev.stagehand.platform.Throttled;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.core.retry.RetryTemplate;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The disk cache: space reservations, verified copies, pins and least-recently-used eviction over one or
 * more cache directories, with all accounting in PostgreSQL.
 *
 * <h2>Concurrency</h2>
 * Space changes (reserve, commit, abort, evict, recovery) take {@code SELECT ... FOR UPDATE} on the
 * {@code cache_directory} rows involved, always in id order, then the copy rows; so any number of threads
 * and service instances sharing a directory keep its counters exact and never overfill it. Eviction locks
 * candidate copies with {@code SKIP LOCKED} and re-reads their pins after locking; {@link #pin} locks the
 * copy before adding its pin, so a copy being pinned is never evicted under it.
 *
 * <h2>Releases before stages</h2>
 * {@link #release} and {@link #releaseAll} only delete pin rows: they take no directory lock and never wait
 * for space, so no amount of waiting or running stage work can hold them up (dCache's bulk service starves
 * releases behind stages, issue 7632). A reservation that does not fit returns {@code NO_SPACE} at once and
 * holds neither a thread nor a lock; released copies become evictable immediately and the next reservation
 * evicts them. The scheduler should apply releases before it asks for space in each round.
 *
 * <h2>Nothing corrupt is visible</h2>
 * Only copies in state {@code verified} are returned by {@link #lookup}; a copy reaches that state only in
 * {@link #commit} after its size and Adler32 matched the catalog.
 */
public class DiskCache {

    private static final Logger log = LoggerFactory.getLogger(DiskCache.class);
    private static final int EVICTION_BATCH = 500;
    private static final String LIVE = "('reserved', 'writing', 'verified')";
    /** Open reservations with their copies; a caller adds the WHERE clause. Rows read by {@link #reservationRow}. */
    private static final String RESERVATIONS = """
            SELECT r.id, cf.file_id, cf.id AS copy_id, cf.path, r.bytes, r.node, r.created_at
            FROM cache_reservation r JOIN cache_file cf ON cf.id = r.cache_file_id""";

    private final JdbcClient db;
    private final TransactionTemplate tx;
    private final Clock clock;
    /** stagehand.cache.node; empty: the host name, or a numbered one while another instance there holds it. */
    private final String configuredNode;
    private final Duration nodeWait;
    private volatile String node;
    private NodeLease lease; // held from start() to stop()
    private final List<CacheProperties.Directory> configured;
    private final ApplicationEventPublisher events;
    private volatile Map<Integer, Path> directories = Map.of(); // id -> path, set by start()
    /** Directories that must be mount points (require-mount), checked again before a fan-out subdirectory is made. */
    private final Set<Path> mountPoints = new HashSet<>();
    /**
     * Per directory, copies not forced to disk since its last verified one here or its last put-back by any instance
     * ({@link #abortNotForced}). Only in memory,
     * unlike the out-of-service mark it leads to (cache_directory.out_of_service_since): keeping it in the row would
     * cost a write at every verified copy, and losing it at a restart only lets a failing disk take up to
     * {@link #NOT_FORCED_OUT_OF_SERVICE} more copies before it is taken out of service.
     */
    private final Map<Path, NotForced> notForcedInRow = new java.util.concurrent.ConcurrentHashMap<>();

    /**
     * {@code inRow} copies not forced to disk since the directory's put-back {@code generation}
     * (cache_directory.put_back_generation as read at the failures): a put-back by any instance sharing the directory
     * makes the next failure here count from 1 again, not only on the instance that handled it.
     */
    private record NotForced(int generation, int inRow) {}

    /**
     * This node's directories out of service as the rows last read said ({@link #outOfService}, {@link #usage}), for
     * the health check: it must not wait on the database (an outage would hold readiness for the pool's connection
     * timeout, and show as every directory rather than as {@code db}).
     */
    private volatile Map<Path, String> outOfServiceAsRead = Map.of();

    /**
     * Copies in a row a directory could not force to disk before it is taken out of service: one may be a passing
     * fault, a disk whose fsync always fails would otherwise have every file staged into it read from tape again.
     */
    static final int NOT_FORCED_OUT_OF_SERVICE = 3;

    public DiskCache(JdbcClient db, TransactionTemplate tx, CacheProperties props, Clock clock,
                     ApplicationEventPublisher events) {
        this.db = db;
        this.tx = tx;
        this.clock = clock;
        this.configuredNode = props.node();
        this.nodeWait = props.nodeWait();
        this.node = props.node().isEmpty() ? hostName() : props.node();
        this.configured = props.directories();
        for (CacheProperties.Directory d : configured) if (d.requireMount()) mountPoints.add(d.path());
        this.events = events != null ? events : e -> {};
    }

    /** The name this instance's reservations carry (taken at {@link #start()}). */
    public String node() {
        return node;
    }

    /**
     * Takes this instance's node name for its life ({@link NodeLease}): another running instance with the same
     * name would otherwise have its in-flight reservations discarded by this one's start, taken for its own
     * restart. A configured name held by a running instance is waited for ({@code node-wait}) and then refused;
     * the host-name default takes the next free of host, host-2, host-3, ... so several instances on one host
     * each get a name of their own (and a restarted one its old name back while the others run).
     */
    private void takeNode() {
        if (lease != null && lease.alive()) return;
        if (lease != null) lease.close();
        javax.sql.DataSource ds = dataSource();
        if (!configuredNode.isEmpty()) {
            lease = NodeLease.take(ds, configuredNode, nodeWait);
            if (lease == null) {
                throw new IllegalStateException("cache node " + configuredNode + " (stagehand.cache.node) is held by "
                        + NodeLease.holder(ds, configuredNode) + ": two instances with one node name would discard each "
                        + "other's staging reservations. Give each instance its own stagehand.cache.node; if that instance "
                        + "is gone, its session ends within about a minute (or end it with pg_terminate_backend(pid))");
            }
        } else {
            String host = hostName();
            for (int i = 1; i <= MAX_HOST_NODES && lease == null; i++) {
                String name = i == 1 ? host : host + "-" + i;
                lease = NodeLease.tryTake(ds, name);
                if (lease != null && i > 1) {
                    log.warn("cache node {} is held by {}: this instance is cache node {} (set stagehand.cache.node "
                            + "to name each instance on this host)", host, NodeLease.holder(ds, host), name);
                }
            }
            if (lease == null) {
                throw new IllegalStateException("cache nodes " + host + " to " + host + "-" + MAX_HOST_NODES
                        + " are all held by running instances: set stagehand.cache.node");
            }
        }
        node = lease.node;
    }

    /** Instances on one host that the host-name default tells apart. */
    private static final int MAX_HOST_NODES = 64;

    private javax.sql.DataSource dataSource() {
        if (tx.getTransactionManager() instanceof org.springframework.jdbc.datasource.DataSourceTransactionManager m) {
            return m.getDataSource();
        }
        throw new IllegalStateException("the disk cache needs a DataSourceTransactionManager, not " + tx.getTransactionManager());
    }

    /**
     * Called by housekeeping: a database restart ended the node's session and its lock; takes the name again, or
     * says loudly that another instance took it meanwhile (its start discarded this one's reservations: their
     * commits report them lost and the files are read again).
     */
    public synchronized void keepNode() {
        if (lease == null || lease.alive()) return;
        lease.close();
        lease = NodeLease.tryTake(dataSource(), node);
        if (lease == null) {
            log.error("cache node {} lost its database session and is now held by {}; this instance's reservations "
                    + "may have been discarded (set a distinct stagehand.cache.node per instance)", node,
                    NodeLease.holder(dataSource(), node));
        } else {
            log.info("cache node {}: database session lost and name taken again", node);
        }
    }

    /** Gives up the node name (shutdown): a later start of an instance with this name discards its reservations. */
    public synchronized void stop() {
        if (lease != null) lease.close();
        lease = null;
    }

    /**
     * Takes this instance's node name ({@link #takeNode}), registers the configured directories (a missing one is
     * refused unless {@code create-missing} is set; capacities updated), then recovers:
     * reservations this node held before a restart are discarded (their half-written files deleted, their
     * space returned), cached copies whose file is gone from disk are discarded ({@link #dropMissing}), and the
     * directories' counters are recomputed from the copies. Idempotent.
     */
    public synchronized void start() {
        takeNode();
        Map<Integer, Path> ids = new LinkedHashMap<>();
        for (int i = 0; i < configured.size(); i++) {
            CacheProperties.Directory d = configured.get(i);
            if (!Files.isDirectory(d.path())) {
                if (Files.exists(d.path())) throw new IllegalStateException("cache directory " + d.path() + " is not a directory");
                if (!d.createMissing()) {
                    // dCache refuses a pool whose directory is missing, for the same reason
                    throw new IllegalStateException("cache directory " + d.path() + " does not exist: it is not created, since a "
                            + "missing cache directory is most often a disk that is not mounted and staged files would fill the "
                            + "file system under it. Mount its disk or create the directory, or set "
                            + "stagehand.cache.directories[" + i + "].create-missing: true");
                }
                try {
                    Files.createDirectories(d.path());
                    log.info("cache directory {} created (create-missing)", d.path());
                } catch (IOException e) {
                    throw new UncheckedIOException("cannot create cache directory " + d.path(), e);
                }
            }
            if (d.requireMount() && !isMountPoint(d.path())) {
                throw new IllegalStateException("cache directory " + d.path() + " is not a mount point (it is on the same "
                        + "file system as " + d.path().getParent() + "): its disk is not mounted, and staged files would fill "
                        + "the file system under it. Mount its disk, or set stagehand.cache.directories[" + i
                        + "].require-mount: false if it is not meant to be a mount point");
            }
            if (!Files.isWritable(d.path())) throw new IllegalStateException("cache directory not writable: " + d.path());
            try {
                long disk = Files.getFileStore(d.path()).getTotalSpace();
                if (d.capacity().toBytes() > disk) {
                    log.warn("cache directory {}: capacity {} bytes is larger than its file system ({} bytes); reservations "
                            + "are limited to the disk's free space", d.path(), d.capacity().toBytes(), disk);
                }
            } catch (IOException e) {
                log.warn("cache directory {}: cannot read its file system's size: {}", d.path(), e.toString());
            }
            Integer id = db.sql("""
                    INSERT INTO cache_directory (path, capacity_bytes) VALUES (:path, :cap)
                    ON CONFLICT (path) DO UPDATE SET capacity_bytes = EXCLUDED.capacity_bytes, updated_at = now()
                    RETURNING id""")
                    .param("path", d.path().toString()).param("cap", d.capacity().toBytes())
                    .query(Integer.class).single();
            ids.put(id, d.path());
        }
        directories = Map.copyOf(ids);
        outOfService(); // what the health check shows until the rows are read again
        for (CacheDirectory d : directories()) {
            if (d.outOfServiceSince() != null && ids.containsKey(d.id())) {
                log.error("cache directory {} (id {}) is out of service since {}: {}. It gets no new reservations until an "
                        + "operator puts it back in service (POST /api/v1/admin/cache/directories/{}/in-service, or the "
                        + "console's overview) once its disk is repaired", d.path(), d.id(), d.outOfServiceSince(),
                        d.outOfServiceReason(), d.id());
            }
        }
        int discarded = recover();
        dropMissing();
        reconcile();
        removeOrphans();
        log.info("disk cache on {} directories ({}), node {}; {} half-written copies discarded",
                ids.size(), configured, node, discarded);
    }

    // ---------------------------------------------------------------------------------------------------
    // Reservations

    /**
     * Reserves space for files about to be read from tape, atomically against each directory's capacity:
     * a directory is never overfilled. For each file, in order: an already verified copy answers
     * {@code CACHED}; a copy being written answers {@code IN_FLIGHT} (join it); otherwise space is taken in
     * the directory with most free space, evicting unpinned copies least recently used first when none has
     * enough free space. What does not fit answers {@code NO_SPACE}: nothing is held, retry later. A directory
     * taken out of service ({@link #abortNotForced}) gets no new copy.
     *
     * <p>Pin a request's files ({@link #pin}) before reserving them: a pin may precede the file's arrival,
     * and it keeps a {@code CACHED} answer on disk until the request has used it. An {@code IN_FLIGHT} file
     * is joined by waiting for {@link CacheChanged.Kind#CACHED} (or polling {@link #lookup}); if that stage
     * ends {@code CORRUPT} or {@code DISCARDED} instead, reserve the file again.
     *
     * @param purpose who asks and why (kept with the reservation), e.g. "recall L00001 mount 17"
     * @return one result per request, in the same order
     */
    public List<ReserveResult> reserve(List<SpaceRequest> requests, String purpose) {
        if (requests.isEmpty()) return List.of();
        requireStarted();
        String why = purpose == null || purpose.isBlank() ? "unspecified" : purpose;
        List<Path> evicted = new ArrayList<>();
        List<Long> evictedFiles = new ArrayList<>();
        List<ReserveResult> results = inTransaction(() -> {
            evicted.clear();
            evictedFiles.clear();
            Instant now = clock.instant();
            Map<Integer, Dir> dirs = lockDirectories(directories.keySet());
            Long[] fileIds = requests.stream().map(SpaceRequest::fileId).distinct().toArray(Long[]::new);
            Set<Long> known = new HashSet<>(db.sql("SELECT id FROM file WHERE id = ANY(:ids)")
                    .param("ids", fileIds).query(Long.class).list());
            Map<Long, CacheEntry> live = new HashMap<>(lookupIn(fileIds));
            long largest = dirs.values().stream().mapToLong(d -> d.capacity).max().orElse(0);
            // a directory out of service takes no new copy; a file only it could hold waits (NO_SPACE), not TOO_LARGE
            List<Dir> inService = dirs.values().stream().filter(d -> d.outOfService == null).toList();
            Map<Integer, Long> evictable = null; // computed the first time something does not fit
            List<Long> touched = new ArrayList<>();
            List<Long> ids = null;
            int nextId = 0;
            // Bytes still to place, so one eviction pass frees room for the rest of the batch at once.
            long pending = 0;
            boolean[] counted = new boolean[requests.size()];
            Set<Long> seen = new HashSet<>();
            for (int i = 0; i < requests.size(); i++) {
                SpaceRequest r = requests.get(i);
                counted[i] = known.contains(r.fileId()) && !live.containsKey(r.fileId()) && r.sizeBytes() <= largest
                        && seen.add(r.fileId());
                if (counted[i]) pending += r.sizeBytes();
            }
            List<ReserveResult> out = new ArrayList<>(requests.size());
            for (int i = 0; i < requests.size(); i++) {
                SpaceRequest r = requests.get(i);
                if (counted[i]) pending -= r.sizeBytes(); // now: bytes of the requests after this one
                long f = r.fileId();
                CacheEntry existing = live.get(f);
                if (!known.contains(f)) {
                    out.add(new ReserveResult(f, ReserveResult.Outcome.UNKNOWN_FILE, null, null));
                } else if (existing != null && existing.cached()) {
                    touched.add(f);
                    out.add(new ReserveResult(f, ReserveResult.Outcome.CACHED, null, existing));
                } else if (existing != null) {
                    out.add(new ReserveResult(f, ReserveResult.Outcome.IN_FLIGHT, reservation(existing.reservationId()), null));
                } else if (r.sizeBytes() > largest) {
                    out.add(new ReserveResult(f, ReserveResult.Outcome.TOO_LARGE, null, null));
                } else {
                    Dir target = inService.stream().filter(d -> d.free() >= r.sizeBytes())
                            .max(Comparator.comparingLong(Dir::free)).orElse(null);
                    if (target == null) {
                        if (evictable == null) {
                            Map<Integer, Long> want = new HashMap<>();
                            for (Dir d : inService) want.put(d.id, Math.max(1, r.sizeBytes() + pending - d.free()));
                            evictable = evictableUpTo(want, now);
                        }
                        Map<Integer, Long> ev = evictable;
                        target = inService.stream()
                                .filter(d -> d.free() + ev.getOrDefault(d.id, 0L) >= r.sizeBytes())
                                .max(Comparator.comparingLong(d -> d.free() + ev.getOrDefault(d.id, 0L))).orElse(null);
                        if (target != null) {
                            long goal = Math.min(r.sizeBytes() + pending, target.free() + ev.getOrDefault(target.id, 0L));
                            evict(target, goal, now, evicted, evictedFiles, ev);
                            if (target.free() < r.sizeBytes()) target = null;
                        }
                    }
                    if (target == null) {
                        out.add(new ReserveResult(f, ReserveResult.Outcome.NO_SPACE, null, null));
                        continue;
                    }
                    if (ids == null || nextId == ids.size()) {
                        ids = db.sql("SELECT nextval(pg_get_serial_sequence('cache_file', 'id')) FROM generate_series(1, :n)")
                                .param("n", Math.max(1, requests.size() - out.size())).query(Long.class).list();
                        nextId = 0;
                    }
                    long copyId = ids.get(nextId++);
                    Path path = target.path.resolve(String.format("%02x", f & 0xff)).resolve(f + "." + copyId);
                    CacheEntry other = null;
                    for (int tries = 1; other == null; tries++) {
                        int inserted = db.sql("INSERT INTO cache_file (id, file_id, directory_id, path, size_bytes, state, "
                                        + "created_at, last_access) VALUES (:id, :f, :d, :p, :s, 'reserved', :now, :now) "
                                        + "ON CONFLICT (file_id) WHERE state IN " + LIVE + " DO NOTHING")
                                .param("id", copyId).param("f", f).param("d", target.id).param("p", path.toString())
                                .param("s", r.sizeBytes()).param("now", ts(now)).update();
                        if (inserted > 0) break;
                        // Another instance with other directories staged it meanwhile: join that copy. Ended
                        // (aborted, evicted) before it could be read, it is no longer in the way: insert again.
                        other = lookupIn(new Long[] {f}).get(f);
                        if (other == null && tries == 10) {
                            throw new IllegalStateException("file " + f + ": another copy kept coming and going while this one was reserved");
                        }
                    }
                    if (other != null) {
                        live.put(f, other);
                        out.add(other.cached()
                                ? new ReserveResult(f, ReserveResult.Outcome.CACHED, null, other)
                                : new ReserveResult(f, ReserveResult.Outcome.IN_FLIGHT, reservation(other.reservationId()), null));
                        continue;
                    }
                    long resId = db.sql("INSERT INTO cache_reservation (cache_file_id, directory_id, bytes, node, purpose, "
                                    + "created_at) VALUES (:c, :d, :b, :n, :p, :now) RETURNING id")
                            .param("c", copyId).param("d", target.id).param("b", r.sizeBytes()).param("n", node)
                            .param("p", why).param("now", ts(now)).query(Long.class).single();
                    target.reserved += r.sizeBytes();
                    target.changed = true;
                    Reservation res = new Reservation(resId, f, copyId, path, r.sizeBytes(), node, now);
                    live.put(f, new CacheEntry(f, CacheEntry.State.STAGING, path, r.sizeBytes(), null, resId, now));
                    out.add(new ReserveResult(f, ReserveResult.Outcome.RESERVED, res, null));
                }
            }
            saveCounters(dirs.values());
            if (!touched.isEmpty()) touchAt(touched, now);
            return out;
        });
        deleteFiles(evicted);
        if (!evictedFiles.isEmpty()) events.publishEvent(new CacheChanged(CacheChanged.Kind.EVICTED, evictedFiles));
        for (ReserveResult r : results) {
            if (!r.reserved()) continue;
            try {
                createFanOut(r.reservation().path());
            } catch (UncheckedIOException e) {
                // the cache directory went away under the running service (its disk unmounted): nothing is staged
                // onto the file system under it; the batch's reservations are given up
                for (ReserveResult o : results) if (o.reserved()) abort(o.reservation(), e.getMessage());
                throw e;
            }
        }
        return results;
    }

    /** Convenience for one file. */
    public ReserveResult reserve(long fileId, long sizeBytes, String purpose) {
        return reserve(List.of(new SpaceRequest(fileId, sizeBytes)), purpose).getFirst();
    }

    /**
     * Bytes that could be reserved now (free plus evictable over all directories), so the scheduler mounts
     * a volume only when a useful batch of its files fits. A single file also needs
     * {@link #largestReservable()} to be at least its size.
     */
    public long reservableBytes() {
        List<DirectoryUsage> usage = usage();
        List<Dir> dirs = new ArrayList<>();
        Map<Integer, Long> evictable = new HashMap<>();
        for (int i = 0; i < usage.size(); i++) {
            DirectoryUsage u = usage.get(i);
            if (!u.inService()) continue;
            dirs.add(new Dir(i, u.path(), u.capacityBytes(), u.usedBytes(), u.reservedBytes()));
            evictable.put(i, u.evictableBytes());
        }
        return reservable(onDisks(dirs), evictable);
    }

    /**
     * As {@link #reservableBytes()}, but evictable copies are counted (least recently used first) only until
     * {@code wanted} bytes are found: exact below {@code wanted}, else at least {@code wanted}. Free space comes
     * from the directories' counters; counting every copy took 2.4 s at 500,000 cached copies.
     */
    public long reservableBytes(long wanted) {
        requireStarted();
        // free may be negative (a capacity lowered below what is cached, a disk fuller than the accounting): the
        // first bytes evicted there only bring the directory back to its capacity and count for nothing
        List<Dir> dirs = onDisks(db.sql("SELECT id, path, capacity_bytes, used_bytes, reserved_bytes FROM cache_directory "
                        + "WHERE id = ANY(:ids) AND out_of_service_since IS NULL ORDER BY id")
                .param("ids", directories.keySet().toArray(Integer[]::new))
                .query((rs, n) -> new Dir(rs.getInt(1), Path.of(rs.getString(2)), rs.getLong(3), rs.getLong(4), rs.getLong(5)))
                .list());
        long found = reservable(dirs, Map.of());
        if (found >= wanted) return found;
        Map<Integer, Long> want = new LinkedHashMap<>();
        for (Dir d : dirs) {
            long deficit = Math.max(0, -d.free());
            want.put(d.id, wanted - found > Long.MAX_VALUE - deficit ? Long.MAX_VALUE : wanted - found + deficit);
        }
        return reservable(dirs, evictableUpTo(want, clock.instant()));
    }

    /** The largest single file that could be reserved now (files do not span directories). */
    public long largestReservable() {
        return usage().stream().filter(DirectoryUsage::inService).mapToLong(DirectoryUsage::reservableBytes).max().orElse(0);
    }

    /**
     * Marks a reservation's copy as being written (reserved &rarr; writing), for the console.
     *
     * @return false if the reservation no longer exists (aborted or recovered): stop writing
     */
    public boolean startWriting(long reservationId) {
        return db.sql("UPDATE cache_file SET state = 'writing' WHERE state = 'reserved' AND id = "
                        + "(SELECT cache_file_id FROM cache_reservation WHERE id = :r)")
                .param("r", reservationId).update() == 1
                || db.sql("SELECT count(*) FROM cache_reservation WHERE id = :r").param("r", reservationId)
                .query(Long.class).single() == 1;
    }

    /** The open reservation with this id, or null. */
    public Reservation reservation(long reservationId) {
        return db.sql(RESERVATIONS + " WHERE r.id = :r").param("r", reservationId).query(DiskCache::reservationRow)
                .optional().orElse(null);
    }

    private static Reservation reservationRow(ResultSet rs, int row) throws SQLException {
        return new Reservation(rs.getLong("id"), rs.getLong("file_id"), rs.getLong("copy_id"), Path.of(rs.getString("path")),
                rs.getLong("bytes"), rs.getString("node"), rs.getObject("created_at", OffsetDateTime.class).toInstant());
    }

    /** @see #commit(long, String) */
    public CommitResult commit(Reservation reservation, String measuredAdler32) {
        return commit(reservation.id(), measuredAdler32);
    }

    /**
     * Ends a write: the copy becomes cached only if its size on disk is the reserved and the catalog's size and its Adler32
     * matches the catalog's (if the catalog has none, the measured one is recorded there). Otherwise the
     * copy is deleted, its space returned, and {@code CORRUPT} says why; it was never visible as cached.
     *
     * @param measuredAdler32 what the writer computed while writing (hex, see {@link Checksums})
     */
    public CommitResult commit(long reservationId, String measuredAdler32) {
        String measured = Checksums.normalise(measuredAdler32);
        Reservation r = reservation(reservationId);
        if (r == null) {
            return new CommitResult(-1, CommitResult.Outcome.UNKNOWN_RESERVATION, null, null, measured,
                    "reservation " + reservationId + " does not exist (aborted or discarded)");
        }
        long onDisk = sizeOf(r.path());
        Integer[] committedIn = {null};
        CommitResult result = inTransaction(() -> {
            Instant now = clock.instant();
            Integer dirId = lockCopyDirectory(r.copyId());
            if (dirId == null) return unknown(r, measured);
            committedIn[0] = dirId;
            boolean open = db.sql("SELECT 1 FROM cache_file WHERE id = :c AND state IN ('reserved', 'writing') FOR UPDATE")
                    .param("c", r.copyId()).query(Integer.class).optional().isPresent();
            if (!open) return unknown(r, measured);
            record Catalogued(String adler32, long size) {}
            Catalogued cat = db.sql("SELECT adler32, size_bytes FROM file WHERE id = :f FOR NO KEY UPDATE").param("f", r.fileId())
                    .query((rs, n) -> new Catalogued(rs.getString(1), rs.getLong(2))).optional().orElse(null);
            String expected = cat == null ? null : cat.adler32();
            String reason = null;
            CommitResult.Outcome outcome;
            if (onDisk != r.sizeBytes()) {
                reason = onDisk < 0 ? "copy missing on disk at " + r.path()
                        : "size on disk " + onDisk + " bytes, expected " + r.sizeBytes();
                outcome = CommitResult.Outcome.CORRUPT;
            } else if (cat != null && onDisk != cat.size()) {
                // the reservation's size is the caller's: a wrong one must not verify a short copy (nor record its sum)
                reason = "size on disk " + onDisk + " bytes, catalog " + cat.size();
                outcome = CommitResult.Outcome.CORRUPT;
            } else if (expected == null) {
                db.sql("UPDATE file SET adler32 = :a WHERE id = :f").param("a", measured).param("f", r.fileId()).update();
                outcome = CommitResult.Outcome.VERIFIED_RECORDED;
            } else if (expected.equals(measured)) {
                outcome = CommitResult.Outcome.VERIFIED;
            } else {
                reason = "Adler32 mismatch: measured " + measured + ", catalog " + expected;
                outcome = CommitResult.Outcome.CORRUPT;
            }
            if (outcome == CommitResult.Outcome.CORRUPT) {
                db.sql("UPDATE cache_file SET state = 'corrupt', adler32 = :a, reason = :why, ended_at = :now WHERE id = :c")
                        .param("a", measured).param("why", reason).param("now", ts(now)).param("c", r.copyId()).update();
                db.sql("UPDATE cache_directory SET reserved_bytes = reserved_bytes - :b, updated_at = now() WHERE id = :d")
                        .param("b", r.sizeBytes()).param("d", dirId).update();
            } else {
                db.sql("UPDATE cache_file SET state = 'verified', adler32 = :a, verified_at = :now, last_access = :now "
                                + "WHERE id = :c")
                        .param("a", measured).param("now", ts(now)).param("c", r.copyId()).update();
                db.sql("UPDATE cache_directory SET reserved_bytes = reserved_bytes - :b, used_bytes = used_bytes + :b, "
                                + "updated_at = now() WHERE id = :d")
                        .param("b", r.sizeBytes()).param("d", dirId).update();
            }
            db.sql("DELETE FROM cache_reservation WHERE id = :r").param("r", r.id()).update();
            return new CommitResult(r.fileId(), outcome, r.path(), expected, measured, reason);
        });
        switch (result.outcome()) {
            case CORRUPT -> {
                log.warn("file {}: staged copy refused: {}", r.fileId(), result.reason());
                deleteFiles(List.of(r.path()));
                events.publishEvent(new CacheChanged(CacheChanged.Kind.CORRUPT, List.of(r.fileId())));
            }
            case VERIFIED, VERIFIED_RECORDED -> {
                // forced to disk by its writer (the tape driver) before this commit: the directory's fsync works
                Path dir = directories.get(committedIn[0]);
                if (dir != null) notForcedInRow.remove(dir);
                events.publishEvent(new CacheChanged(CacheChanged.Kind.CACHED, List.of(r.fileId())));
            }
            case UNKNOWN_RESERVATION -> { }
        }
        return result;
    }

    /**
     * Gives up a reservation (tape read failed or cancelled): the partial file is deleted and the space
     * returned. Joined stages see {@link CacheChanged.Kind#DISCARDED} and the file no longer in flight.
     *
     * @return false if the reservation did not exist (already committed, aborted or recovered)
     */
    public boolean abort(long reservationId, String reason) {
        Reservation r = reservation(reservationId);
        if (r == null) return false;
        boolean done = Boolean.TRUE.equals(inTransaction(() -> discardOpen(r.copyId(), "aborted: " + reason)));
        if (done) {
            deleteFiles(List.of(r.path()));
            events.publishEvent(new CacheChanged(CacheChanged.Kind.DISCARDED, List.of(r.fileId())));
        }
        return done;
    }

    /** @see #abort(long, String) */
    public boolean abort(Reservation reservation, String reason) {
        return abort(reservation.id(), reason);
    }

    /**
     * As {@link #abort(long, String)}, for a copy written but not forced to disk (its fsync failed): the directory's
     * disk is at fault, and the file is read from tape again. After {@link #NOT_FORCED_OUT_OF_SERVICE} such copies in
     * a row (no verified copy between them) the directory is taken out of service: it gets no new reservations, so
     * the files go to the other directories, and when none is left in service reservations answer NO_SPACE (staging
     * waits, the health check is DOWN) instead of every file being read from tape again and again. Its copies stay
     * readable. The mark is in its cache_directory row, for every instance sharing it and across restarts: it is back
     * in service when an operator says so ({@link #putInService}, once its disk is repaired). The count is each
     * instance's own; a put-back, by whichever instance, restarts it on all of them (its put_back_generation).
     */
    public boolean abortNotForced(long reservationId, String reason) {
        Reservation r = reservation(reservationId);
        if (r == null) return false;
        record Dir(Path path, int generation) {}
        // the put-back generation comes with the path this reads anyway: copies that are forced cost no query for it
        Dir dir = db.sql("SELECT d.path, d.put_back_generation FROM cache_directory d JOIN cache_file cf "
                        + "ON cf.directory_id = d.id WHERE cf.id = :c")
                .param("c", r.copyId()).query((rs, n) -> new Dir(Path.of(rs.getString(1)), rs.getInt(2))).optional()
                .orElse(null);
        boolean done = abort(r, "not forced to disk: " + reason);
        if (dir != null) notForced(dir.path(), dir.generation(), reason);
        return done;
    }

    /** @param generation the directory's put_back_generation, read before the copy was given up */
    private void notForced(Path dir, int generation, String reason) {
        NotForced count = notForcedInRow.merge(dir, new NotForced(generation, 1), (before, one) ->
                before.generation() == generation ? new NotForced(generation, before.inRow() + 1)
                        // put back since the failures counted (by whichever instance): they were before the repair
                        : before.generation() < generation ? one
                        // read before a put-back another failure here has seen already: this one was before it too
                        : before);
        int inRow = count.inRow();
        String why = "taken out of service: " + inRow + " staged copies in a row could not be forced to disk (fsync); last: "
                + reason;
        // only the first instance to mark it says so: the others (and later failures) find it marked. Not when it was
        // put back after the generation read: the failures counted were before the repair
        boolean marked = count.generation() == generation && inRow >= NOT_FORCED_OUT_OF_SERVICE && db.sql("""
                        UPDATE cache_directory SET out_of_service_since = :now, out_of_service_reason = :why, updated_at = now()
                        WHERE path = :p AND out_of_service_since IS NULL AND put_back_generation = :g""")
                .param("now", ts(clock.instant())).param("why", why).param("p", dir.toString()).param("g", generation)
                .update() == 1;
        if (!marked) {
            log.warn("cache directory {}: a staged copy could not be forced to disk ({} in a row): {}", dir, inRow, reason);
            return;
        }
        recentUsage.forget();
        log.error("cache directory {} {}. It gets no new reservations until an operator puts it back in service (repair or "
                + "replace its disk first); files are staged into the other directories", dir, why);
        if (outOfService().keySet().containsAll(directories.values())) {
            log.error("no cache directory is in service (every one failed to force staged copies to disk): recalls wait "
                    + "for cache space and no tape is read until an operator puts a repaired one back in service");
        }
    }

    /** This instance's directories that are out of service (their fsync kept failing), with why; empty normally. */
    public Map<Path, String> outOfService() {
        Map<Path, String> out = new LinkedHashMap<>();
        db.sql("SELECT path, out_of_service_reason FROM cache_directory WHERE id = ANY(:ids) AND out_of_service_since IS NOT NULL "
                        + "ORDER BY id")
                .param("ids", directories.keySet().toArray(Integer[]::new))
                .query(rs -> {
                    out.put(Path.of(rs.getString(1)), rs.getString(2));
                });
        outOfServiceAsRead = Map.copyOf(out);
        return out;
    }

    /**
     * {@link #outOfService} as last read (at start, at each {@link #usage}, at a mark or a put-back, and every
     * {@code stagehand.cache.health.refresh-interval} by the cache's lifecycle): no database.
     */
    public Map<Path, String> outOfServiceAsLastRead() {
        return outOfServiceAsRead;
    }

    /**
     * A cache directory as registered in the database, by any instance.
     *
     * @param outOfServiceSince  when it was taken out of service ({@link #abortNotForced}); null: in service
     * @param outOfServiceReason why; null when in service
     */
    public record CacheDirectory(int id, Path path, long capacityBytes, long usedBytes, long reservedBytes,
                                 Instant outOfServiceSince, String outOfServiceReason) {
        public boolean inService() {
            return outOfServiceSince == null;
        }
    }

    /** Every cache directory in the database (those of every instance), by id; the rows only, cheap. */
    public List<CacheDirectory> directories() {
        return db.sql("SELECT id, path, capacity_bytes, used_bytes, reserved_bytes, out_of_service_since, out_of_service_reason "
                        + "FROM cache_directory ORDER BY id")
                .query((rs, n) -> cacheDirectory(rs)).list();
    }

    private static CacheDirectory cacheDirectory(ResultSet rs) throws SQLException {
        OffsetDateTime since = rs.getObject("out_of_service_since", OffsetDateTime.class);
        return new CacheDirectory(rs.getInt("id"), Path.of(rs.getString("path")), rs.getLong("capacity_bytes"),
                rs.getLong("used_bytes"), rs.getLong("reserved_bytes"), since == null ? null : since.toInstant(),
                rs.getString("out_of_service_reason"));
    }

    /**
     * An operator's action once a directory's disk is repaired: it is in service again (new reservations go there),
     * for every instance sharing it, and each of them counts copies not forced to disk from none again. Logged at WARN
     * with who did it.
     *
     * @param who the operator, for the log
     * @return the directory as it was before (out of service or not); empty: no directory with this id
     */
    public java.util.Optional<CacheDirectory> putInService(int id, String who) {
        java.util.Optional<CacheDirectory> before = inTransaction(() -> {
            var row = db.sql("SELECT id, path, capacity_bytes, used_bytes, reserved_bytes, out_of_service_since, "
                            + "out_of_service_reason FROM cache_directory WHERE id = :id FOR UPDATE")
                    .param("id", id).query((rs, n) -> cacheDirectory(rs)).optional();
            // a new generation even when it was in service: the operator says its disk is sound, so the copies not
            // forced before do not count towards taking it out, on any instance (each compares it at its next failure)
            if (row.isPresent()) {
                db.sql("UPDATE cache_directory SET out_of_service_since = NULL, out_of_service_reason = NULL, "
                        + "put_back_generation = put_back_generation + 1, updated_at = now() WHERE id = :id")
                        .param("id", id).update();
            }
            return row;
        });
        before.ifPresent(d -> {
            recentUsage.forget(); // the console shows it in service at once
            outOfService(); // and the health check
            if (d.inService()) log.info("cache directory {} (id {}): {} asked to put it in service; it was", d.path(), id, who);
            else log.warn("cache directory {} (id {}) put back in service by {} (out of service since {}: {})", d.path(), id,
                    who, d.outOfServiceSince(), d.outOfServiceReason());
        });
        return before;
    }

    /**
     * Removes a verified copy found bad after the fact (e.g. a mover's read failed its checksum), so it is
     * never handed out again. Pins stay: the file may be staged again.
     *
     * @return false if the file had no verified copy
     */
    public boolean discardCopy(long fileId, String reason) {
        // the copy is found and ended in one transaction, by its id: found outside it, a copy evicted and
        // staged again in between had the new copy marked corrupt and the old copy's path deleted
        String dropped = inTransaction(() -> {
            Long copyId = db.sql("SELECT id FROM cache_file WHERE file_id = :f AND state = 'verified'")
                    .param("f", fileId).query(Long.class).optional().orElse(null);
            Integer dirId = lockCopyDirectory(copyId);
            return dirId == null ? null : dropVerified(dirId, List.of(copyId), "corrupt", reason).get(copyId);
        });
        if (dropped == null) return false;
        deleteFiles(List.of(Path.of(dropped)));
        events.publishEvent(new CacheChanged(CacheChanged.Kind.CORRUPT, List.of(fileId)));
        return true;
    }

    /**
     * Why the file's verified copy cannot be read as recorded (there is none, its file is gone from disk or has
     * another size, or with {@code readBytes} its bytes no longer give the Adler32 verified when it was
     * written), or null when it can: asked when a reader of the copy (a mover) refused it or found its sum
     * wrong. Looks at the disk only; {@link #discardCopy} ends a broken copy.
     */
    public String brokenCopy(long fileId, boolean readBytes) {
        CacheEntry copy = lookup(List.of(fileId)).get(fileId);
        if (copy == null || !copy.cached()) return "no verified copy in the cache any more";
        try {
            if (Files.notExists(copy.path())) return "its copy " + copy.path() + " is gone from disk";
            long onDisk = Files.size(copy.path());
            if (onDisk != copy.sizeBytes()) return "its copy " + copy.path() + " is " + onDisk + " bytes, not " + copy.sizeBytes();
            // a copy rotted on disk keeps its size: only its bytes tell (read once, and only after a failure)
            String now = readBytes && copy.adler32() != null ? Checksums.adler32Of(copy.path()) : null;
            if (now != null && !now.equals(copy.adler32())) {
                return "its copy " + copy.path() + " reads as ADLER32 " + now + ", verified as " + copy.adler32();
            }
        } catch (IOException e) {
            return "its copy " + copy.path() + " cannot be read: " + e.getMessage();
        }
        return null;
    }

    /**
     * Ends these verified copies of directory {@code dirId} (locked by the caller) in {@code state} and frees
     * their space; copies no longer verified are left alone. @return id &rarr; path of the copies ended
     */
    private Map<Long, String> dropVerified(int dirId, List<Long> copyIds, String state, String reason) {
        Map<Long, String> out = new HashMap<>();
        long[] bytes = {0};
        db.sql("UPDATE cache_file SET state = :state, reason = :why, ended_at = :now "
                        + "WHERE id = ANY(:ids) AND directory_id = :d AND state = 'verified' RETURNING id, path, size_bytes")
                .param("state", state).param("why", reason).param("now", ts(clock.instant()))
                .param("ids", copyIds.toArray(Long[]::new)).param("d", dirId)
                .query(rs -> {
                    out.put(rs.getLong(1), rs.getString(2));
                    bytes[0] += rs.getLong(3);
                });
        if (!out.isEmpty()) {
            db.sql("UPDATE cache_directory SET used_bytes = used_bytes - :b, updated_at = now() WHERE id = :d")
                    .param("b", bytes[0]).param("d", dirId).update();
        }
        return out;
    }

    /** Copies looked at per slice by {@link #dropMissing()}, each slice's drop a transaction of its own. */
    static final int INVENTORY_SLICE = 1000;

    /**
     * The inventory check, at start-up: verified copies in this instance's directories whose file is gone
     * (a disk wiped or replaced, files deleted by hand) or not the size it was verified at (cut short by a power
     * cut after its commit) are discarded and their space freed, so the file is
     * read from tape again instead of being answered "cached" and failing at every transfer. The copies are
     * walked along the LRU index a slice at a time, never in one statement over the whole table.
     *
     * <p>A directory with no fan-out subdirectory at all while copies are recorded in it is taken for a disk
     * that is not mounted: nothing is dropped there and it is logged as an error (mounting the disk and
     * restarting is the cure; once files are staged there again, the next start drops the copies gone).
     *
     * @return copies discarded
     */
    public int dropMissing() {
        int total = 0;
        for (var d : directories.entrySet()) {
            int dirId = d.getKey();
            Path dir = d.getValue();
            boolean recorded = db.sql("SELECT EXISTS (SELECT 1 FROM cache_file WHERE directory_id = :d AND state = 'verified')")
                    .param("d", dirId).query(Boolean.class).single();
            if (!recorded) continue;
            if (!hasFanOut(dir)) {
                log.error("cache directory {} holds no cached files, yet the database records copies there: is its disk not "
                        + "mounted? Its copies are kept (they are answered from disk and fail at transfer until it is)", dir);
                continue;
            }
            List<Long> missingFiles = new ArrayList<>();
            OffsetDateTime afterAccess = ts(Instant.EPOCH);
            long afterId = 0;
            while (true) {
                record Copy(OffsetDateTime lastAccess, long id, long fileId, String path, long size) {}
                List<Copy> slice = db.sql("""
                        SELECT last_access, id, file_id, path, size_bytes FROM cache_file
                         WHERE directory_id = :d AND state = 'verified' AND (last_access, id) > (:after, :afterId)
                         ORDER BY last_access, id LIMIT :lim""")
                        .param("d", dirId).param("after", afterAccess).param("afterId", afterId).param("lim", INVENTORY_SLICE)
                        .query((rs, n) -> new Copy(rs.getObject(1, OffsetDateTime.class), rs.getLong(2), rs.getLong(3), rs.getString(4),
                                rs.getLong(5)))
                        .list();
                List<Long> gone = new ArrayList<>();
                List<Long> cut = new ArrayList<>();
                Map<Long, Long> fileOf = new HashMap<>();
                for (Copy c : slice) {
                    long onDisk = sizeOrKeep(Path.of(c.path()));
                    if (onDisk == -1) gone.add(c.id());
                    // the tape drivers force a copy to disk before its commit, but a disk that lies, or a copy altered by hand, may leave it short
                    else if (onDisk >= 0 && onDisk != c.size()) cut.add(c.id());
                    else continue;
                    fileOf.put(c.id(), c.fileId());
                }
                if (!gone.isEmpty() || !cut.isEmpty()) {
                    Map<Long, String> dropped = inTransaction(() -> {
                        lockDirectories(List.of(dirId));
                        Map<Long, String> out = new HashMap<>();
                        if (!gone.isEmpty()) out.putAll(dropVerified(dirId, gone, "discarded", "file missing on disk (inventory check at start-up)"));
                        if (!cut.isEmpty()) {
                            out.putAll(dropVerified(dirId, cut, "discarded", "file on disk is not the size it was verified at "
                                    + "(inventory check at start-up)"));
                        }
                        return out;
                    });
                    // the files of copies cut short are orphans now: removeOrphans (after this, at start) deletes them
                    for (long c : dropped.keySet()) missingFiles.add(fileOf.get(c));
                }
                if (slice.size() < INVENTORY_SLICE) break;
                afterAccess = slice.getLast().lastAccess();
                afterId = slice.getLast().id();
            }
            if (!missingFiles.isEmpty()) {
                log.warn("{} cached copies in {} had no file on disk, or one of another size: discarded, they are read from tape again when asked for",
                        missingFiles.size(), dir);
                events.publishEvent(new CacheChanged(CacheChanged.Kind.MISSING, missingFiles));
            }
            total += missingFiles.size();
        }
        return total;
    }

    /** This cache's time, the clock of its copies' timestamps (for {@link #filesLostSince}). */
    public Instant now() {
        return clock.instant();
    }

    /**
     * Files whose verified copy was lost at or after {@code since} (this cache's clock): its file found gone
     * ({@link #dropMissing}) or found bad ({@link #discardCopy}). Requests still waiting on them need them read again.
     */
    public List<Long> filesLostSince(Instant since) {
        return db.sql("SELECT DISTINCT file_id FROM cache_file WHERE state IN ('discarded', 'corrupt') AND verified_at IS NOT NULL "
                        + "AND ended_at >= :since")
                .param("since", ts(since)).query(Long.class).list();
    }

    /**
     * The file's size; -1 when it is not there; -2 when that cannot be told (an I/O error: the copy is kept).
     */
    private static long sizeOrKeep(Path p) {
        try {
            return Files.readAttributes(p, java.nio.file.attribute.BasicFileAttributes.class).size();
        } catch (NoSuchFileException e) {
            return -1;
        } catch (IOException | SecurityException e) {
            return -2;
        }
    }

    /** Whether the directory has any of the copies' fan-out subdirectories (00..ff). */
    private static boolean hasFanOut(Path dir) {
        try (DirectoryStream<Path> fans = Files.newDirectoryStream(dir, p -> p.getFileName().toString().matches("[0-9a-f]{2}")
                && Files.isDirectory(p))) {
            return fans.iterator().hasNext();
        } catch (IOException e) {
            return false;
        }
    }

    // ---------------------------------------------------------------------------------------------------
    // Lookups and access

    /**
     * Live copies of these files: {@code CACHED} ones may be handed to movers at once; {@code STAGING} ones
     * are being written (join them). Files with neither are absent from the map.
     */
    public Map<Long, CacheEntry> lookup(Collection<Long> fileIds) {
        if (fileIds.isEmpty()) return Map.of();
        return lookupIn(fileIds.stream().distinct().toArray(Long[]::new));
    }

    /** Records an access (a request answered from the cache, movers reading a copy): recently used copies are evicted last. */
    public void touch(Collection<Long> fileIds) {
        if (fileIds.isEmpty()) return;
        // its row locks are taken in no set order: a pin of the same copies may deadlock with it and win
        inTransaction(() -> {
            touchAt(fileIds, clock.instant());
            return null;
        });
    }

    // ---------------------------------------------------------------------------------------------------
    // Pins

    /**
     * Pins files for an owner (usually the stage request id) until {@code lifetime} from now; pinning again
     * sets the owner's new expiry. A pinned file is never evicted; a pin may precede the file's arrival.
     *
     * @return the files among these that have a verified copy on disk now
     * @throws IllegalArgumentException for unknown files or a bad lifetime (nothing is pinned then)
     */
    public Set<Long> pin(Collection<Long> fileIds, String owner, Duration lifetime) {
        if (owner == null || owner.isBlank()) throw new IllegalArgumentException("pin owner missing");
        if (lifetime == null || lifetime.isNegative() || lifetime.isZero()) {
            throw new IllegalArgumentException("pin lifetime must be positive, got " + lifetime);
        }
        if (fileIds.isEmpty()) return Set.of();
        Long[] ids = new TreeSet<>(fileIds).toArray(Long[]::new);
        return inTransaction(() -> {
            Instant now = clock.instant();
            List<Long> known = db.sql("SELECT id FROM file WHERE id = ANY(:ids)").param("ids", ids).query(Long.class).list();
            if (known.size() != ids.length) {
                Set<Long> unknown = new TreeSet<>(List.of(ids));
                known.forEach(unknown::remove);
                throw new IllegalArgumentException("cannot pin unknown files " + unknown);
            }
            // Lock the live copies first: eviction skips locked copies and re-reads pins after locking.
            List<Long> onDisk = db.sql("SELECT file_id, state FROM cache_file WHERE file_id = ANY(:ids) AND state IN "
                            + LIVE + " ORDER BY id FOR UPDATE")
                    .param("ids", ids)
                    .query((rs, n) -> "verified".equals(rs.getString("state")) ? rs.getLong("file_id") : null)
                    .list();
            db.sql("""
                    INSERT INTO cache_pin (file_id, owner, expires_at, created_at)
                    SELECT f, :owner, :exp, :now FROM unnest(:ids::bigint[]) AS f
                    ON CONFLICT (file_id, owner) DO UPDATE SET expires_at = EXCLUDED.expires_at""")
                    .param("owner", owner).param("exp", ts(now.plus(lifetime))).param("now", ts(now)).param("ids", ids)
                    .update();
            Set<Long> result = new LinkedHashSet<>();
            for (Long f : onDisk) if (f != null) result.add(f);
            return result;
        });
    }

    /**
     * Releases the owner's pins on these files. Cheap and never blocked by stage work (no directory lock).
     *
     * @return pins removed
     */
    public int release(Collection<Long> fileIds, String owner) {
        if (fileIds.isEmpty()) return 0;
        Long[] ids = fileIds.stream().distinct().toArray(Long[]::new);
        int n = db.sql("DELETE FROM cache_pin WHERE owner = :owner AND file_id = ANY(:ids)")
                .param("owner", owner).param("ids", ids).update();
        if (n > 0) events.publishEvent(new CacheChanged(CacheChanged.Kind.RELEASED, List.of(ids)));
        return n;
    }

    /** Releases every pin of an owner (its request was cancelled or deleted). @return pins removed */
    public int releaseAll(String owner) {
        List<Long> files = db.sql("DELETE FROM cache_pin WHERE owner = :owner RETURNING file_id")
                .param("owner", owner).query(Long.class).list();
        if (!files.isEmpty()) events.publishEvent(new CacheChanged(CacheChanged.Kind.RELEASED, files));
        return files.size();
    }

    /** A pin an owner still needs: file, owner, and the lifetime it is renewed for. */
    public record PinNeed(long fileId, String owner, Duration lifetime) {}

    /**
     * Keeps pins alive while their owners still need the copies (a file waiting for its transfer to a
     * destination that is down): each pin that expires within half its lifetime, or has expired or gone, is set
     * to its lifetime from now. Returns how many pins were renewed or put back. Only those are proposed: ON
     * CONFLICT DO UPDATE locks every conflicting row even where its WHERE leaves it, so proposing every need locked
     * all the pins of files waiting for their transfers at every sweep (10^6 pins, none due: 4.4 s holding them
     * from releases and purges, now 2.1 s locking none; psql, the arrays' unnest alone 1.1 s).
     */
    public int keepPinned(Collection<PinNeed> needs) {
        if (needs.isEmpty()) return 0;
        Instant now = clock.instant();
        return db.sql("""
                INSERT INTO cache_pin (file_id, owner, expires_at, created_at)
                SELECT t.f, t.o, :now + t.s * interval '1 second', :now
                  FROM unnest(:files::bigint[], :owners::text[], :secs::bigint[]) AS t(f, o, s)
                 WHERE NOT EXISTS (SELECT 1 FROM cache_pin p WHERE p.file_id = t.f AND p.owner = t.o
                                      AND p.expires_at >= :now + t.s * interval '1 second' / 2)
                ON CONFLICT (file_id, owner) DO UPDATE SET expires_at = EXCLUDED.expires_at
                 WHERE cache_pin.expires_at < :now + (EXCLUDED.expires_at - :now) / 2""")
                .param("now", ts(now))
                .param("files", needs.stream().map(PinNeed::fileId).toArray(Long[]::new))
                .param("owners", needs.stream().map(PinNeed::owner).toArray(String[]::new))
                .param("secs", needs.stream().map(n -> Math.max(1, n.lifetime().toSeconds())).toArray(Long[]::new))
                .update();
    }

    /**
     * Deletes expired pins. Not needed for correctness (expired pins never protect a copy); it keeps the
     * pin table small. @return pins removed
     */
    public int purgeExpiredPins() {
        List<Long> files = db.sql("DELETE FROM cache_pin WHERE expires_at <= :now RETURNING file_id")
                .param("now", ts(clock.instant())).query(Long.class).list();
        if (!files.isEmpty()) events.publishEvent(new CacheChanged(CacheChanged.Kind.RELEASED, files));
        return files.size();
    }

    /** Unexpired pins on a file: owner &rarr; expiry. */
    public Map<String, Instant> pins(long fileId) {
        Map<String, Instant> out = new LinkedHashMap<>();
        db.sql("SELECT owner, expires_at FROM cache_pin WHERE file_id = :f AND expires_at > :now ORDER BY owner")
                .param("f", fileId).param("now", ts(clock.instant()))
                .query(rs -> {
                    out.put(rs.getString("owner"), rs.getObject("expires_at", OffsetDateTime.class).toInstant());
                });
        return out;
    }

    // ---------------------------------------------------------------------------------------------------
    // Usage

    /** Accounting per configured directory, for the console and metrics. */
    public List<DirectoryUsage> usage() {
        requireStarted();
        Integer[] ids = directories.keySet().toArray(Integer[]::new);
        record Row(Dir dir, long pinnedBytes, long evictableBytes, long cached, long staging, long pinned, Instant outSince) {}
        List<Row> rows = db.sql("""
                SELECT d.id, d.path, d.capacity_bytes, d.used_bytes, d.reserved_bytes,
                       d.out_of_service_since, d.out_of_service_reason,
                       coalesce(s.pinned_bytes, 0) AS pinned_bytes, coalesce(s.evictable_bytes, 0) AS evictable_bytes,
                       coalesce(s.cached, 0) AS cached, coalesce(s.staging, 0) AS staging, coalesce(s.pinned, 0) AS pinned
                FROM cache_directory d LEFT JOIN (
                    SELECT cf.directory_id,
                           sum(cf.size_bytes) FILTER (WHERE p.pinned) AS pinned_bytes,
                           sum(cf.size_bytes) FILTER (WHERE cf.state = 'verified' AND NOT p.pinned) AS evictable_bytes,
                           count(*) FILTER (WHERE cf.state = 'verified') AS cached,
                           count(*) FILTER (WHERE cf.state <> 'verified') AS staging,
                           count(*) FILTER (WHERE p.pinned) AS pinned
                    FROM cache_file cf
                    CROSS JOIN LATERAL (SELECT EXISTS (SELECT 1 FROM cache_pin pp WHERE pp.file_id = cf.file_id
                                                       AND pp.expires_at > :now) AS pinned) p
                    WHERE cf.directory_id = ANY(:ids) AND cf.state IN ('reserved', 'writing', 'verified')
                    GROUP BY cf.directory_id) s ON s.directory_id = d.id
                WHERE d.id = ANY(:ids) ORDER BY d.id""")
                .param("ids", ids).param("now", ts(clock.instant()))
                .query((rs, n) -> {
                    Dir d = new Dir(rs.getInt("id"), Path.of(rs.getString("path")), rs.getLong("capacity_bytes"),
                            rs.getLong("used_bytes"), rs.getLong("reserved_bytes"));
                    d.outOfService = rs.getString("out_of_service_reason");
                    OffsetDateTime since = rs.getObject("out_of_service_since", OffsetDateTime.class);
                    return new Row(d, rs.getLong("pinned_bytes"), rs.getLong("evictable_bytes"), rs.getLong("cached"),
                            rs.getLong("staging"), rs.getLong("pinned"), since == null ? null : since.toInstant());
                })
                .list();
        onDisks(rows.stream().map(Row::dir).toList());
        Map<Path, String> outOfService = new LinkedHashMap<>();
        for (Row r : rows) if (r.dir().outOfService != null) outOfService.put(r.dir().path, r.dir().outOfService);
        outOfServiceAsRead = Map.copyOf(outOfService);
        List<DirectoryUsage> out = new ArrayList<>(rows.size());
        for (Row r : rows) {
            Dir d = r.dir();
            long beyond = Math.max(0, d.capacity - d.used - d.reserved - d.free());
            out.add(new DirectoryUsage(d.path, d.capacity, d.used, d.reserved, r.pinnedBytes(), r.evictableBytes(),
                    Math.max(0, d.free()), r.cached(), r.staging(), r.pinned(), beyond, d.id, r.outSince(), d.outOfService));
        }
        return out;
    }

    private final Throttled<List<DirectoryUsage>> recentUsage = new Throttled<>(Duration.ofSeconds(5), this::usage);

    /**
     * {@link #usage()} for displays and gauges: one snapshot shared by all, reused for 5 s or ten times what its
     * query took ({@link Throttled}). The query sums every cached copy (2.1 s at 500,000 copies), and an
     * operator's open overview asks every 2 s.
     */
    public List<DirectoryUsage> recentUsage() {
        return recentUsage.get();
    }

    // ---------------------------------------------------------------------------------------------------
    // Recovery

    /**
     * Discards every reservation this node holds: after a restart those copies are half-written and their
     * writers gone. Their space is returned and their files deleted. Called by {@link #start()}.
     *
     * @return copies discarded
     */
    public int recover() {
        return recoverNode(node);
    }

    /**
     * Discards every reservation held by the named node, e.g. an instance that was removed for good and will
     * not restart to recover its own. Never call it for an instance that is still running.
     *
     * @return copies discarded
     */
    public int recoverNode(String node) {
        List<Reservation> mine = db.sql(RESERVATIONS + " WHERE r.node = :n").param("n", node).query(DiskCache::reservationRow).list();
        List<Long> files = new ArrayList<>();
        for (Reservation r : mine) {
            if (Boolean.TRUE.equals(inTransaction(() -> discardOpen(r.copyId(), "discarded on restart of node " + node)))) {
                deleteFiles(List.of(r.path()));
                files.add(r.fileId());
            }
        }
        if (!files.isEmpty()) {
            log.warn("discarded {} half-written cache copies left by an earlier run of node {}", files.size(), node);
            events.publishEvent(new CacheChanged(CacheChanged.Kind.DISCARDED, files));
        }
        return files.size();
    }

    /** Recomputes the directories' used and reserved bytes from the copies and reservations. */
    void reconcile() {
        inTransaction(() -> {
            lockDirectories(directories.keySet());
            return db.sql("""
                    UPDATE cache_directory d SET
                        used_bytes = (SELECT coalesce(sum(size_bytes), 0) FROM cache_file
                                      WHERE directory_id = d.id AND state = 'verified'),
                        reserved_bytes = (SELECT coalesce(sum(bytes), 0) FROM cache_reservation WHERE directory_id = d.id)
                    WHERE d.id = ANY(:ids)""")
                    .param("ids", directories.keySet().toArray(Integer[]::new)).update();
        });
    }

    /** Deletes files in the cache directories that belong to no live copy (e.g. a crash right after eviction). */
    void removeOrphans() {
        for (Path dir : directories.values()) {
            List<Path> found = new ArrayList<>();
            try (DirectoryStream<Path> fans = Files.newDirectoryStream(dir, p -> p.getFileName().toString().matches("[0-9a-f]{2}"))) {
                for (Path fan : fans) {
                    try (DirectoryStream<Path> copies = Files.newDirectoryStream(fan, p -> p.getFileName().toString().matches("\\d+\\.\\d+"))) {
                        copies.forEach(found::add);
                    }
                }
            } catch (IOException e) {
                log.warn("cannot scan cache directory {} for orphans: {}", dir, e.toString());
                continue;
            }
            if (found.isEmpty()) continue;
            // Listed before querying: a copy created after the listing is not in the list, one created
            // before it has its row committed already (rows are made before files). Looked up by the copy id in
            // the file's name ("<file>.<copy>"), not by path: the directory may be spelled another way in the rows
            // (a symbolic link, another mount point of a shared file system, a configuration changed), and by
            // path every live copy recorded under the other spelling was deleted as an orphan.
            Map<Path, Long> copyOf = new HashMap<>();
            for (Path p : found) {
                String name = p.getFileName().toString();
                try {
                    copyOf.put(p, Long.parseLong(name.substring(name.indexOf('.') + 1)));
                } catch (NumberFormatException e) {
                    // not a name this cache gives: left alone
                }
            }
            Map<Long, String> live = new HashMap<>();
            db.sql("SELECT id, path FROM cache_file WHERE id = ANY(:ids) AND state IN " + LIVE)
                    .param("ids", copyOf.values().stream().distinct().toArray(Long[]::new))
                    .query(rs -> {
                        live.put(rs.getLong(1), rs.getString(2));
                    });
            List<Path> orphans = new ArrayList<>();
            for (var c : copyOf.entrySet()) {
                String recorded = live.get(c.getValue());
                if (recorded == null || (!recorded.equals(c.getKey().toString()) && anotherFile(c.getKey(), Path.of(recorded)))) {
                    orphans.add(c.getKey());
                }
            }
            if (!orphans.isEmpty()) log.info("removing {} orphaned files from {}", orphans.size(), dir);
            deleteFiles(orphans);
        }
    }

    /**
     * Whether the copy's recorded file is there and is not {@code listed} (a stray duplicate, e.g. a directory
     * copied by hand). When that cannot be told (the recorded spelling is not reachable from this host) the
     * listed file is taken for it and kept.
     */
    private static boolean anotherFile(Path listed, Path recorded) {
        try {
            return !Files.isSameFile(listed, recorded);
        } catch (IOException | SecurityException e) {
            return false;
        }
    }

    // ---------------------------------------------------------------------------------------------------
    // Internals

    private static final class Dir {
        final int id;
        final Path path;
        final long capacity;
        long used;
        long reserved;
        /** Used bytes when the row was read: bytes evicted since are free on the disk too. */
        final long usedBefore;
        /** Its file system, shared with the other directories on it; null when it cannot be asked (no disk limit). */
        Disk disk;
        boolean changed;
        /** Why it is out of service (it takes no new copy); null when in service. */
        String outOfService;

        Dir(int id, Path path, long capacity, long used, long reserved) {
            this.id = id;
            this.path = path;
            this.capacity = capacity;
            this.used = used;
            this.usedBefore = used;
            this.reserved = reserved;
        }

        /** Capacity minus used minus reserved, and no more than its file system's room ({@link Disk#room}). */
        long free() {
            long own = capacity - used - reserved;
            return disk == null ? own : Math.min(own, disk.room());
        }
    }

    /**
     * One file system and the directories on it. Its room is its free space when the rows were read, plus what
     * was evicted from its directories since, minus every reservation in them: directories on one file system
     * share its free space (each checked alone, two directories on one disk both promised the same free bytes).
     * Reservations are counted whole although part of them may be written already (and so gone from the free
     * space), which errs on the safe side.
     */
    private static final class Disk {
        final long usable;
        final List<Dir> dirs = new ArrayList<>();

        Disk(long usable) {
            this.usable = usable;
        }

        long room() {
            long room = usable;
            for (Dir d : dirs) room += d.usedBefore - d.used - d.reserved;
            return room;
        }
    }

    /**
     * Gives each directory its {@link Disk}: directories on the same file system (the same device, st_dev; else
     * the same {@link java.nio.file.FileStore}) share one, its free space asked once.
     */
    private static <C extends Collection<Dir>> C onDisks(C dirs) {
        Map<Object, Disk> disks = new HashMap<>();
        for (Dir d : dirs) {
            try {
                Object key = fileSystemOf(d.path);
                Disk disk = disks.get(key);
                if (disk == null) {
                    disk = new Disk(Files.getFileStore(d.path).getUsableSpace());
                    disks.put(key, disk);
                }
                disk.dirs.add(d);
                d.disk = disk;
            } catch (IOException | SecurityException | UnsupportedOperationException e) {
                d.disk = null; // the health indicator reports that directory
            }
        }
        return dirs;
    }

    /** What tells a file system apart: its device number, or its FileStore where there is none. */
    static Object fileSystemOf(Path dir) throws IOException {
        try {
            return Files.getAttribute(dir, "unix:dev");
        } catch (UnsupportedOperationException | IllegalArgumentException e) {
            return Files.getFileStore(dir);
        }
    }

    /**
     * Bytes reservable in these directories (free plus {@code evictable}), each file system's room counted once
     * for the directories sharing it.
     */
    private static long reservable(Collection<Dir> dirs, Map<Integer, Long> evictable) {
        long total = 0;
        Set<Disk> counted = new HashSet<>();
        for (Dir d : dirs) {
            if (d.disk == null) {
                total += Math.max(0, d.capacity - d.used - d.reserved + evictable.getOrDefault(d.id, 0L));
            } else if (counted.add(d.disk)) {
                long own = 0, freed = 0;
                for (Dir o : d.disk.dirs) {
                    long ev = evictable.getOrDefault(o.id, 0L);
                    own += Math.max(0, o.capacity - o.used - o.reserved + ev);
                    freed += ev;
                }
                total += Math.min(own, Math.max(0, d.disk.room() + freed));
            }
        }
        return total;
    }

    /**
     * Runs {@code work} in a transaction, again if PostgreSQL broke a deadlock by aborting it: instances with
     * different directories may insert the same files in different orders, and the loser simply retries. Inside
     * a caller's transaction it runs once: a deadlock aborted the caller's whole transaction, which only the caller
     * can run again (a retry here failed on the aborted transaction instead).
     */
    private <T> T inTransaction(java.util.function.Supplier<T> work) {
        if (org.springframework.transaction.support.TransactionSynchronizationManager.isActualTransactionActive()) {
            return tx.execute(status -> work.get());
        }
        return ON_DEADLOCK.invoke(() -> tx.execute(status -> work.get()));
    }

    /** Up to five attempts, a few jittered milliseconds apart. */
    private static final RetryTemplate ON_DEADLOCK = DatabaseRetry.onDeadlock(Duration.ofMillis(10));

    private Map<Integer, Dir> lockDirectories(Collection<Integer> ids) {
        Map<Integer, Dir> out = new LinkedHashMap<>();
        db.sql("SELECT id, path, capacity_bytes, used_bytes, reserved_bytes, out_of_service_reason FROM cache_directory "
                        + "WHERE id = ANY(:ids) ORDER BY id FOR UPDATE")
                .param("ids", ids.toArray(Integer[]::new))
                .query(rs -> {
                    Dir d = new Dir(rs.getInt("id"), Path.of(rs.getString("path")),
                            rs.getLong("capacity_bytes"), rs.getLong("used_bytes"), rs.getLong("reserved_bytes"));
                    d.outOfService = rs.getString("out_of_service_reason");
                    out.put(d.id, d);
                });
        onDisks(out.values());
        return out;
    }

    /** Locks the directory row of a copy; null if the copy does not exist. */
    private Integer lockCopyDirectory(Long copyId) {
        if (copyId == null) return null;
        return db.sql("SELECT d.id FROM cache_directory d JOIN cache_file cf ON cf.directory_id = d.id "
                        + "WHERE cf.id = :c FOR UPDATE OF d")
                .param("c", copyId).query(Integer.class).optional().orElse(null);
    }

    private void saveCounters(Collection<Dir> dirs) {
        for (Dir d : dirs) {
            if (!d.changed) continue;
            db.sql("UPDATE cache_directory SET used_bytes = :u, reserved_bytes = :r, updated_at = now() WHERE id = :id")
                    .param("u", d.used).param("r", d.reserved).param("id", d.id).update();
        }
    }

    /** Copies looked at per statement while counting evictable bytes ({@link #evictableUpTo}). */
    static final int EVICTABLE_PAGE = 1000;

    /**
     * Evictable bytes (verified, unpinned copies) of each directory in {@code want}, counted least recently used
     * first until that directory's wanted bytes are found: exact below them, else at least them. Summing every
     * copy took 2.4 s at 500,000 cached copies (in the reservation's transaction, the directories locked); a
     * page of this walk takes milliseconds.
     */
    private Map<Integer, Long> evictableUpTo(Map<Integer, Long> want, Instant now) {
        Map<Integer, Long> out = new HashMap<>();
        for (var w : want.entrySet()) {
            long found = 0;
            OffsetDateTime afterAccess = ts(Instant.EPOCH);
            long afterId = 0;
            while (found < w.getValue()) {
                record Copy(OffsetDateTime lastAccess, long id, long size) {}
                List<Copy> page = db.sql("""
                        SELECT cf.last_access, cf.id, cf.size_bytes FROM cache_file cf
                         WHERE cf.directory_id = :d AND cf.state = 'verified' AND (cf.last_access, cf.id) > (:after, :afterId)
                           AND """ + UNPINNED + """
                         ORDER BY cf.last_access, cf.id LIMIT :lim""")
                        .param("d", w.getKey()).param("after", afterAccess).param("afterId", afterId)
                        .param("now", ts(now)).param("lim", EVICTABLE_PAGE)
                        .query((rs, n) -> new Copy(rs.getObject(1, OffsetDateTime.class), rs.getLong(2), rs.getLong(3)))
                        .list();
                for (Copy c : page) found += c.size();
                if (page.size() < EVICTABLE_PAGE) break;
                afterAccess = page.getLast().lastAccess();
                afterId = page.getLast().id();
            }
            out.put(w.getKey(), found);
        }
        return out;
    }

    /**
     * The copy {@code cf} has no live pin. Written as a subquery, not {@code NOT EXISTS}: as an anti-join the
     * planner read every copy and every pin before a LIMIT (0.9 s for one eviction batch at 500,000 copies); as
     * a subquery it walks the LRU index and stops at the LIMIT (3 ms).
     */
    private static final String UNPINNED =
            " NOT (SELECT EXISTS (SELECT 1 FROM cache_pin p WHERE p.file_id = cf.file_id AND p.expires_at > :now)) ";

    /**
     * Evicts unpinned verified copies of {@code d}, least recently used first, until {@code needed} bytes
     * are free. Runs inside the reservation's transaction with the directory locked.
     */
    private boolean evict(Dir d, long needed, Instant now, List<Path> paths, List<Long> files, Map<Integer, Long> evictable) {
        List<Long> skipped = new ArrayList<>();
        skipped.add(-1L);
        while (d.free() < needed) {
            record Candidate(long id, long fileId, long size, String path) {}
            List<Candidate> batch = db.sql("""
                    SELECT id, file_id, size_bytes, path FROM cache_file cf
                    WHERE directory_id = :d AND state = 'verified' AND id <> ALL(:skip)
                      AND """ + UNPINNED + """
                    ORDER BY last_access, id LIMIT :lim FOR UPDATE SKIP LOCKED""")
                    .param("d", d.id).param("skip", skipped.toArray(Long[]::new)).param("now", ts(now))
                    .param("lim", EVICTION_BATCH)
                    .query((rs, n) -> new Candidate(rs.getLong("id"), rs.getLong("file_id"), rs.getLong("size_bytes"),
                            rs.getString("path")))
                    .list();
            if (batch.isEmpty()) {
                evictable.put(d.id, 0L);
                return false;
            }
            // Re-read pins now that the copies are locked: a pin committed after the query's snapshot counts.
            Set<Long> pinned = new HashSet<>(db.sql("SELECT DISTINCT file_id FROM cache_pin WHERE file_id = ANY(:f) AND expires_at > :now")
                    .param("f", batch.stream().map(Candidate::fileId).toArray(Long[]::new)).param("now", ts(now))
                    .query(Long.class).list());
            List<Long> victims = new ArrayList<>();
            for (Candidate c : batch) {
                if (d.free() >= needed) break;
                if (pinned.contains(c.fileId())) {
                    skipped.add(c.id());
                    continue;
                }
                victims.add(c.id());
                d.used -= c.size();
                d.changed = true;
                evictable.merge(d.id, -c.size(), Long::sum);
                paths.add(Path.of(c.path()));
                files.add(c.fileId());
            }
            if (!victims.isEmpty()) {
                db.sql("UPDATE cache_file SET state = 'evicted', ended_at = :now WHERE id = ANY(:ids)")
                        .param("now", ts(now)).param("ids", victims.toArray(Long[]::new)).update();
            }
        }
        return true;
    }

    /** Ends an open copy (reserved or writing) as discarded and returns its space. Caller deletes the file. */
    private boolean discardOpen(long copyId, String reason) {
        Integer dirId = lockCopyDirectory(copyId);
        if (dirId == null) return false;
        Long size = db.sql("UPDATE cache_file SET state = 'discarded', reason = :why, ended_at = :now "
                        + "WHERE id = :c AND state IN ('reserved', 'writing') RETURNING size_bytes")
                .param("why", reason).param("now", ts(clock.instant())).param("c", copyId)
                .query(Long.class).optional().orElse(null);
        if (size == null) return false;
        db.sql("DELETE FROM cache_reservation WHERE cache_file_id = :c").param("c", copyId).update();
        db.sql("UPDATE cache_directory SET reserved_bytes = reserved_bytes - :b, updated_at = now() WHERE id = :d")
                .param("b", size).param("d", dirId).update();
        return true;
    }

    private Map<Long, CacheEntry> lookupIn(Long[] fileIds) {
        Map<Long, CacheEntry> out = new HashMap<>();
        db.sql("SELECT cf.file_id, cf.state, cf.path, cf.size_bytes, cf.adler32, cf.last_access, r.id AS rid "
                        + "FROM cache_file cf LEFT JOIN cache_reservation r ON r.cache_file_id = cf.id "
                        + "WHERE cf.file_id = ANY(:ids) AND cf.state IN " + LIVE)
                .param("ids", fileIds)
                .query(rs -> {
                    boolean cached = "verified".equals(rs.getString("state"));
                    Long rid = rs.getObject("rid", Long.class);
                    out.put(rs.getLong("file_id"), new CacheEntry(rs.getLong("file_id"),
                            cached ? CacheEntry.State.CACHED : CacheEntry.State.STAGING, Path.of(rs.getString("path")),
                            rs.getLong("size_bytes"), cached ? rs.getString("adler32") : null,
                            rid, rs.getObject("last_access", OffsetDateTime.class).toInstant()));
                });
        return out;
    }

    private void touchAt(Collection<Long> fileIds, Instant now) {
        db.sql("UPDATE cache_file SET last_access = greatest(last_access, :now) WHERE file_id = ANY(:ids) AND state = 'verified'")
                .param("now", ts(now)).param("ids", fileIds.stream().distinct().toArray(Long[]::new)).update();
    }

    private CommitResult unknown(Reservation r, String measured) {
        return new CommitResult(r.fileId(), CommitResult.Outcome.UNKNOWN_RESERVATION, r.path(), null, measured,
                "reservation " + r.id() + " was aborted or discarded meanwhile");
    }

    private void requireStarted() {
        if (directories.isEmpty()) throw new IllegalStateException("disk cache not started (no directories registered)");
    }

    private static long sizeOf(Path p) {
        try {
            return Files.size(p);
        } catch (NoSuchFileException e) {
            return -1;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read size of " + p, e);
        }
    }

    /**
     * Creates the copy's fan-out subdirectory, never the cache directory itself: recreated after its disk was
     * unmounted, it would take staged files onto the file system under the mount point. The cache directory is
     * forced to disk after it (its new entry; the tape driver forces the copy and the fan-out directory before the
     * commit): at most 256 times in a cache directory's life, each a directory's fsync, so it is done here even
     * though a reservation may run under the recall engine's monitor.
     */
    private void createFanOut(Path p) {
        Path fan = p.getParent();
        if (Files.isDirectory(fan)) return;
        try {
            if (mountPoints.contains(fan.getParent()) && !isMountPoint(fan.getParent())) {
                throw new IOException("the cache directory " + fan.getParent() + " is no longer a mount point (require-mount): "
                        + "its disk is not mounted");
            }
            Files.createDirectory(fan);
            Durable.fsyncDirectory(fan.getParent());
        } catch (java.nio.file.FileAlreadyExistsException e) {
            // made meanwhile by another reservation
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create " + fan + (Files.isDirectory(fan.getParent()) ? ""
                    : ": the cache directory " + fan.getParent() + " is gone (disk unmounted?)"), e);
        }
    }

    /**
     * Whether the directory is a mount point: on another file system (device) than its parent, or the root. A disk
     * that is not mounted leaves its mount point on the file system under it; false then.
     */
    static boolean isMountPoint(Path dir) {
        try {
            Path real = dir.toRealPath();
            Path parent = real.getParent();
            return parent == null || !fileSystemOf(real).equals(fileSystemOf(parent));
        } catch (IOException | SecurityException e) {
            return false;
        }
    }

    /** Deletes after the database change committed; a failure leaves an orphan for the next start to remove. */
    private static void deleteFiles(Collection<Path> paths) {
        for (Path p : paths) {
            try {
                Files.deleteIfExists(p);
            } catch (IOException e) {
                log.warn("cannot delete cache file {} (removed at next start): {}", p, e.toString());
            }
        }
    }

    private static OffsetDateTime ts(Instant i) {
        return i.atOffset(ZoneOffset.UTC);
    }

    private static String hostName() {
        try {
            return java.net.InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            return "local";
        }
    }
}
