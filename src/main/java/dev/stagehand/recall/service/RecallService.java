package dev.stagehand.recall.service;

import dev.stagehand.platform.Transactions;
import dev.stagehand.cache.CacheEntry;
import dev.stagehand.cache.DiskCache;
import dev.stagehand.platform.DatabaseRetry;
import dev.stagehand.platform.EventClock;
import dev.stagehand.platform.InstanceId;
import dev.stagehand.platform.ScaledClock;
import dev.stagehand.recall.RecallProperties;
import dev.stagehand.recall.request.RecallMetrics;
import dev.stagehand.recall.scheduler.Copy;
import dev.stagehand.recall.scheduler.EngineListener;
import dev.stagehand.recall.scheduler.FileWork;
import dev.stagehand.recall.scheduler.QueueModel.FileSpec;
import dev.stagehand.recall.scheduler.RecallEngine;
import dev.stagehand.recall.scheduler.SchedulerConfig;
import dev.stagehand.recall.scheduler.TapeModelCosts;
import dev.stagehand.tape.TapeLibrary;
import dev.stagehand.tape.TapeModel;
import dev.stagehand.transfer.TransferQueue;
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
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The recall scheduler in the service: takes queued {@code stage_request_file} work from PostgreSQL, runs
 * the same {@link RecallEngine} the simulator runs against the configured tape library, reads into space
 * reserved in the {@link DiskCache} (a volume is mounted only when a useful batch of it fits), and keeps
 * every outcome in rows (restart-safe: claims are leased, requests and files
 * carry their state and ETA). Several instances may share one database.
 */
public final class RecallService {

    private static final Logger log = LoggerFactory.getLogger(RecallService.class);

    private final JdbcTemplate jdbc;
    private final TapeLibrary library;
    private final EventClock clock;
    private final TapeModel model;
    private final RecallProperties props;
    private final DiskCache cache;
    private final TransferHandOff handOff;
    private final org.springframework.transaction.support.TransactionTemplate tx;
    private final RecallMetrics metrics;
    private final String instance;
    private volatile RecallEngine engine;
    private JdbcQueueStore store;
    private volatile ScheduledExecutorService poller;
    /** Requests given to the engine, with their creation time; forgotten once older than the intake window. */
    private final Map<String, Instant> known = new HashMap<>();
    /** The newest request creation time seen (the database's clock): the intake window ends {@link #LATE_COMMIT} before it. */
    private Instant watermark = Instant.EPOCH;
    /**
     * A request's creation time is its transaction's start: one that commits later than this after it may be
     * missed by a round's window, and is then found by the next sweep ({@link #SWEEP}).
     */
    static final Duration LATE_COMMIT = Duration.ofSeconds(60);

    public RecallService(JdbcTemplate jdbc, TapeLibrary library, EventClock clock, TapeModel model, RecallProperties props,
                         DiskCache cache) {
        this(jdbc, library, clock, model, props, cache, null);
    }

    /** @param transfers where verified files of requests with a destination go; null: no hand-off */
    public RecallService(JdbcTemplate jdbc, TapeLibrary library, EventClock clock, TapeModel model, RecallProperties props,
                         DiskCache cache, TransferQueue transfers) {
        this(jdbc, library, clock, model, props, cache, transfers, RecallMetrics.NONE);
    }

    /** @param metrics where bytes staged and request latencies are recorded */
    public RecallService(JdbcTemplate jdbc, TapeLibrary library, EventClock clock, TapeModel model, RecallProperties props,
                         DiskCache cache, TransferQueue transfers, RecallMetrics metrics) {
        this.jdbc = jdbc;
        this.cache = cache;
        this.metrics = metrics;
        this.handOff = transfers == null ? null : new TransferHandOff(jdbc, transfers, cache, metrics, lostCopyRequests::addAll);
        this.tx = Transactions.on(jdbc);
        this.library = library;
        this.clock = clock;
        this.model = model;
        this.props = props;
        this.instance = InstanceId.orHostAndPid(props.instanceId());
    }

    public String instanceId() {
        return instance;
    }

    public RecallEngine engine() {
        return engine;
    }

    /** Creates the engine and starts polling (no-op polling when {@code pollInterval} is zero: tests call {@link #poll}). */
    public synchronized void start() {
        SchedulerConfig config = props.schedulerConfig();
        engine = null;
        known.clear(); // a new engine holds nothing: every open request is taken in again
        partial.clear();
        lostCopyRequests.clear();
        watermark = Instant.EPOCH;
        lastSweep = Instant.EPOCH;
        sweepCursor = -1;
        store = new JdbcQueueStore(jdbc, instance, props.lease(), this::wallClock, ids -> pin(ids, null), metrics, this::pipelineChanged);
        store.releaseOwnStaleClaims(); // before the engine: it takes back the volumes still in its drives
        engine = new RecallEngine(library, clock, new TapeModelCosts(model), config, store,
                new CacheStaging(cache, jdbc, props.cacheBatchBytes(), metrics, ids -> pin(ids, null)),
                new EngineListener() {
                    @Override
                    public void fileFailed(FileWork file, double t) {
                        log.warn("recall of {} failed: {}", file.name(), file.error());
                    }
                });
        if (!props.pollInterval().isZero()) {
            poller = Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "recall-intake");
                t.setDaemon(true);
                return t;
            });
            long ms = props.pollInterval().toMillis();
            poller.scheduleWithFixedDelay(this::pollLogged, 0, ms, TimeUnit.MILLISECONDS);
        }
        log.info("recall scheduler {} started: policy {}, {} drives, {} accessors", instance, props.policy(),
                library.layout().drives().size(), library.layout().accessors());
    }

    /**
     * Stops polling. Takes no lock: an intake round in progress may hold this service's monitor while it
     * waits for the engine, and the engine may be waiting on work the stopping thread holds (Spring pauses
     * and stops contexts from its own thread), so stop only cancels and lets that round finish by itself.
     */
    public void stop() {
        ScheduledExecutorService p = poller;
        poller = null;
        if (p != null) p.shutdownNow();
    }

    /** An engine time as a wall-clock instant (a scaled demo clock runs faster than the wall). */
    private Instant wallClock(double t) {
        Instant at = engine.toInstant(t);
        double ahead = Duration.between(clock.now(), at).toNanos() / 1e9;
        double factor = clock instanceof ScaledClock sc ? sc.factor() : 1.0;
        return Instant.now().plusNanos((long) (ahead / factor * 1e9));
    }

    private void pollLogged() {
        try {
            poll();
            DatabaseRetry.recovered();
        } catch (RuntimeException e) {
            // a database outage is logged once (DatabaseRetry); the next round tries again
            if (!DatabaseRetry.noteFailure("recall intake", e)) log.warn("recall intake failed; retrying", e);
        }
    }

    private final AtomicBoolean intakeQueued = new AtomicBoolean();

    /**
     * A request was submitted through this instance: one intake round runs now instead of at the next poll
     * (a submission no longer waits up to a poll interval before its first mount). Coalesced; a hint only.
     */
    public void requestSubmitted() {
        ScheduledExecutorService p = poller;
        if (p == null || !intakeQueued.compareAndSet(false, true)) return;
        try {
            p.execute(() -> {
                intakeQueued.set(false);
                if (poller != null) pollLogged();
            });
        } catch (RejectedExecutionException stopped) {
            intakeQueued.set(false);
        }
    }

    private final AtomicBoolean pipelineRoundQueued = new AtomicBoolean();

    /**
     * A file of this instance landed on disk, or a transfer of a staged file ended: its hand-off (or the end
     * of its file, the release of its pin and so the space staging waits for) runs now on the intake thread
     * instead of at the next poll. Only a hint: each poll does the same from the rows. Coalesced; never
     * blocks the caller (engine callbacks and mover threads call it).
     */
    public void pipelineChanged() {
        ScheduledExecutorService p = poller;
        if (p == null || handOff == null || !pipelineRoundQueued.compareAndSet(false, true)) return;
        try {
            p.execute(this::pipelineRound);
        } catch (RejectedExecutionException stopped) {
            pipelineRoundQueued.set(false);
        }
    }

    private synchronized void pipelineRound() {
        pipelineRoundQueued.set(false); // first: a change during this round asks for another one
        if (poller == null) return;
        try {
            // pins released: the space a waiting volume needs may be there now
            if (handOff.run()) engine.requestPass();
        } catch (RuntimeException e) {
            // the next poll does it again
            if (!DatabaseRetry.noteFailure("transfer hand-off", e)) log.warn("transfer hand-off failed; the next poll retries", e);
        }
    }

    /** One intake round: leases, new requests, reconciliation with the rows, then a scheduling pass. */
    public synchronized void poll() {
        Instant now = clock.now();
        boolean sweep = sweepCursor < 0 && Duration.between(lastSweep, now).compareTo(SWEEP) >= 0;
        settleLeases();
        engine.libraryDrives(library.drives()); // an operator's recovery or switch of a drive
        if (sweep) {
            requeueLostCopies(); // first: the walk below and the intake take them in as queued
            // the cache answers for what was staged: the engine need not hold every request it ever served, and a
            // request it ended that is still open in the rows (a settle lost, a stale answer) is taken in again
            int forgotten = engine.forgetEnded();
            if (forgotten > 0) log.debug("{} ended request(s) forgotten by the scheduler", forgotten);
            if (!lostCopyRequests.isEmpty()) {
                // the engine took their lost files for on disk: taken in again once it no longer holds them
                Set<String> held = engine.heldRequestIds();
                for (var it = lostCopyRequests.iterator(); it.hasNext(); ) {
                    String r = it.next();
                    if (!held.contains(r)) {
                        known.remove(r);
                        it.remove();
                    }
                }
            }
            // the walk; not in an engine's first round, which takes in every open request's files anyway
            if (!lastSweep.equals(Instant.EPOCH)) sweepCursor = 0;
        }
        Map<String, Fresh> fresh = freshRequests(sweep);
        List<Slice> slices = slices(fresh);
        registerQueuedFiles(queuedFilesOf(slices));
        if (sweepCursor >= 0) sweepSlice();
        intake(fresh, slices);
        reconcile();
        if (handOff != null) handOff.run();
        if (sweep) {
            if (handOff != null && handOff.collectAll()) engine.requestPass();
            settleLost();
            lastSweep = now; // only once it went through: a sweep cut short by the database is done again next round
        }
        engine.requestPass();
        // a request taken in part: its next slice in a round of its own at once, after what waits on this thread
        if (!partial.isEmpty()) requestSubmitted();
    }

    /**
     * Files of one request a round takes in at most. A request of more is taken in a slice a round, in file id
     * order: its first volumes are planned (and mounted) within a second or two instead of after the whole of it
     * was read, which took 9.5-18 s for 10^6 files (bench/intake.sh) while the intake thread, and with it the
     * hand-off of staged files, waited.
     */
    public static final int INTAKE_SLICE = 50_000;
    private int intakeSlice = INTAKE_SLICE;

    /** Tests: a request of a few files taken in over several rounds. */
    void intakeSlice(int files) {
        intakeSlice = files;
    }

    /**
     * Requests this engine has taken in part, with the file id up to which each was, in the order they came.
     * Held in memory like the engine itself: a new engine (a restart) takes every open request in from the rows
     * again, and claims on {@code recall_file} keep a file from being read twice by any instance.
     */
    private final Map<String, Long> partial = new LinkedHashMap<>();

    /**
     * A request's files a round takes in: those with ids in ({@code after}, {@code upTo}]; {@code last}: none
     * after it (the request is whole once this is taken in); {@code whole}: the request at once, as a small one.
     */
    record Slice(String request, long after, long upTo, boolean last, boolean whole) {}

    /** Whether requests are still being taken in a slice a round. */
    public synchronized boolean takingInSlices() {
        return !partial.isEmpty();
    }

    /** This round's slices: the next of each request taken in part, then the new ones (a first slice if large). */
    private List<Slice> slices(Map<String, Fresh> fresh) {
        partial.keySet().removeIf(id -> !engine.takesMore(id)); // forgotten meanwhile (cancelled, deleted)
        List<Slice> out = new ArrayList<>();
        partial.forEach((id, upTo) -> out.add(slice(id, upTo)));
        fresh.forEach((id, f) -> out.add(f.files() > intakeSlice ? slice(id, Long.MIN_VALUE)
                : new Slice(id, Long.MIN_VALUE, Long.MAX_VALUE, true, true)));
        return out;
    }

    /** The next {@link #intakeSlice} files of the request after file id {@code after}, along its primary key. */
    private Slice slice(String request, long after) {
        List<Long> bound = jdbc.queryForList("""
                SELECT file_id FROM stage_request_file WHERE request_id = ?::uuid AND file_id > ?
                 ORDER BY file_id OFFSET ? LIMIT 1""", Long.class, request, after, intakeSlice - 1);
        return bound.isEmpty() ? new Slice(request, after, Long.MAX_VALUE, true, false) : new Slice(request, after, bound.getFirst(), false, false);
    }

    /**
     * How often a sweep starts looking at the whole queue rather than at the requests new since the last round:
     * every queued file against the cache and the tape copies (a file cached or a volume lost since), open
     * requests without open files (a repair: see {@link #settleLost}), the pins of files waiting for their
     * transfers. Looking at the whole queue every round cost seconds at 10^6 queued files (bench/intake.sh).
     */
    static final Duration SWEEP = Duration.ofMinutes(1);
    private Instant lastSweep = Instant.EPOCH;
    /**
     * Queued files a round looks at while a sweep walks the queue, in file order. The whole queue at once held
     * the intake thread, and with it the hand-off of staged files, for 10-37 s at 10^6 queued files
     * (bench/intake.sh); a slice takes a fraction of a second, and the walk of 10^6 about 40 rounds.
     */
    public static final int SWEEP_SLICE = 25_000;
    /** The last file id the sweep's walk has looked at; negative when no walk is under way. */
    private long sweepCursor = -1;
    private int sweepSlice = SWEEP_SLICE;

    /** Tests: a walk of a few files in several rounds. */
    void sweepSlice(int files) {
        sweepSlice = files;
    }

    /** Whether a sweep's walk through the queued files is under way. */
    synchronized boolean sweeping() {
        return sweepCursor >= 0;
    }

    /** The next slice of the sweep's walk through the queued files; the walk ends with a short slice. */
    private void sweepSlice() {
        List<Long> slice = jdbc.queryForList("""
                SELECT DISTINCT file_id FROM stage_request_file WHERE state = 'queued' AND file_id > ?
                 ORDER BY file_id LIMIT ?""", Long.class, sweepCursor, sweepSlice);
        registerQueuedFiles(slice);
        sweepCursor = slice.size() < sweepSlice ? -1 : slice.getLast(); // only once it went through
    }

    /** Requests with files queued again by {@link #requeueLostCopies}, until the intake may take them in again. */
    private final Set<String> lostCopyRequests = new HashSet<>();
    /** Copies lost before this (the cache's clock) were looked at by an earlier sweep; EPOCH: none yet. */
    private Instant lostCheckedTo = Instant.EPOCH;

    /**
     * Files answered on disk for open requests whose copy was lost since (its file gone from disk, or found
     * corrupt) are queued again: the walk and the intake then read them from tape. Otherwise a file waiting for
     * its hand-off waited for ever (no verified copy to send), and a request without a destination ended with a
     * file that is not on disk. A released file of a request with a destination is read again too: a release
     * drops the pin, not the transfer the request asked for (cancel is for that), and left on disk without a copy
     * it kept its request open for ever. A released file of a request without one has ended (nothing more is
     * owed: it need not be on disk), as has every file of an ended request: a new request reads the file again.
     */
    private void requeueLostCopies() {
        Instant checked = cache.now();
        List<Long> lost = new ArrayList<>(cache.filesLostSince(lostCheckedTo));
        lost.removeAll(cache.lookup(lost).keySet()); // staged again since (or being): nothing to read
        if (!lost.isEmpty()) {
            List<String> requests = jdbc.queryForList("""
                    UPDATE stage_request_file x SET state = 'queued', finished_at = NULL
                      FROM stage_request r
                     WHERE r.id = x.request_id AND r.state IN ('submitted', 'active') AND x.state = 'on_disk'
                       AND (NOT x.released OR r.destination IS NOT NULL) AND x.file_id = ANY(?)
                    RETURNING x.request_id::text""", String.class, (Object) lost.toArray(Long[]::new));
            if (!requests.isEmpty()) {
                log.warn("{} file(s) of open requests lost their cached copy (gone from disk or found corrupt): read from tape again",
                        requests.size());
                lostCopyRequests.addAll(requests);
            }
        }
        // a file waiting for its hand-off whose copy left the cache otherwise: evicted (a released file has no pin,
        // so the next reservation that needs space may take its copy before the hand-off). Looked for from the
        // requests' side (open ones with a destination, their few files on disk), as evictions are many
        List<String> evicted = jdbc.queryForList("""
                UPDATE stage_request_file x SET state = 'queued', finished_at = NULL
                  FROM stage_request r
                 WHERE r.id = x.request_id AND r.state IN ('submitted', 'active') AND r.destination IS NOT NULL
                   AND x.state = 'on_disk' AND NOT EXISTS (SELECT 1 FROM cache_file cf WHERE cf.file_id = x.file_id
                                                             AND cf.state IN ('reserved', 'writing', 'verified'))
                RETURNING x.request_id::text""", String.class);
        if (!evicted.isEmpty()) {
            log.warn("{} file(s) waiting for their hand-off had no copy in the cache any more (evicted): read from tape again",
                    evicted.size());
            lostCopyRequests.addAll(evicted);
        }
        lostCheckedTo = checked.minus(LATE_LOSS); // only once it went through
    }

    /** A copy's loss is its transaction's time: one committed later than this after it is seen by a later sweep still. */
    static final Duration LATE_LOSS = Duration.ofMinutes(1);

    /**
     * Ends requests whose last file ended without their settle (an instance killed between a transfer's end
     * and its request's, or any other lost statement): otherwise such a request stayed active for ever.
     */
    private void settleLost() {
        int n = store.settleLost();
        if (n > 0) log.warn("{} request(s) had ended without being settled (a settle lost to a crash); settled now", n);
        if (handOff != null) {
            int renewed = handOff.keepPinned();
            if (renewed > 0) log.info("{} pin(s) of files still waiting for their transfers renewed", renewed);
        }
    }

    /**
     * Renews this instance's claims on the files its engine is reading and takes back lapsed claims. All of
     * it runs under the engine's monitor (its callbacks hold it while they claim, reserve and record
     * outcomes): a snapshot of the files being read taken outside it is stale by the time the leases are
     * renewed and expired, so a read list started in between had its claims expired under it, its
     * half-written copies aborted, and the file read again by this same process.
     */
    private void settleLeases() {
        synchronized (engine) {
            List<Long> live = engine.readingNow();
            store.renewLeases(live); // first: after a database outage our own leases may have lapsed, and we are alive
            List<Long> lapsed = store.expireLeases(live);
            if (lapsed.isEmpty()) return;
            // the claimer died: its half-written copy would hold the file's one live cache slot for ever
            for (CacheEntry e : cache.lookup(lapsed).values()) {
                if (!e.cached() && e.reservationId() != null) cache.abort(e.reservationId(), "claim's lease expired (instance gone)");
            }
            log.info("{} recall claims whose lease lapsed taken back (instance gone, or outcome never recorded)", lapsed.size());
            for (long id : lapsed) engine.requeueIfClaimedElsewhere(id);
        }
    }

    /**
     * Open requests the engine does not have, with their creation times: those created in the window (since
     * {@link #LATE_COMMIT} before the newest seen); {@code all}: any the engine does not serve (one committed
     * later than the window allowed). Looked up alone, before their files: joined to them, the planner walked
     * every queued file (bench/intake.sh).
     */
    private Map<String, Fresh> freshRequests(boolean all) {
        Set<String> skip = new HashSet<>(known.keySet());
        if (all) skip.addAll(engine.heldRequestIds());
        Map<String, Fresh> fresh = new LinkedHashMap<>();
        Instant now = clock.now();
        jdbc.query("""
                SELECT id::text, created_at, greatest(extract(epoch FROM now() - created_at), 0), file_count, priority, experiment
                  FROM stage_request
                 WHERE state IN ('submitted', 'active') AND created_at >= ? AND id <> ALL(?::uuid[])
                 ORDER BY created_at, id""",
                rs -> { fresh.put(rs.getString(1), new Fresh(rs.getTimestamp(2).toInstant(), now.minusNanos((long) (rs.getDouble(3) * 1e9)),
                        rs.getInt(4), rs.getInt(5), rs.getString(6))); },
                Timestamp.from(all ? Instant.EPOCH : watermark.minus(LATE_COMMIT)), skip.toArray(String[]::new));
        return fresh;
    }

    /**
     * A request to take in: its creation time (the database's clock, for the intake window) and its arrival on the
     * engine's clock: the engine's now less the wait since creation, measured by the database alone. So a request
     * taken in again after a restart keeps its age (aging, the overview's oldest) instead of starting anew, and
     * neither the host's clock offset nor a scaled clock enters. {@code files}, {@code priority} and
     * {@code experiment} as the request's row says (the count decides whether it is taken in slices).
     */
    record Fresh(Instant created, Instant arrival, int files, int priority, String experiment) {}

    /** The queued files of these slices (small requests whole in one statement, a large one's slice along its key). */
    private List<Long> queuedFilesOf(List<Slice> slices) {
        String[] whole = slices.stream().filter(Slice::whole).map(Slice::request).toArray(String[]::new);
        Set<Long> ids = new java.util.LinkedHashSet<>();
        if (whole.length > 0) {
            ids.addAll(jdbc.queryForList("SELECT DISTINCT file_id FROM stage_request_file WHERE request_id = ANY(?::uuid[]) AND state = 'queued'",
                    Long.class, (Object) whole));
        }
        for (Slice s : slices) {
            if (s.whole()) continue;
            ids.addAll(jdbc.queryForList("""
                    SELECT file_id FROM stage_request_file WHERE request_id = ?::uuid AND file_id > ? AND file_id <= ? AND state = 'queued'""",
                    Long.class, s.request(), s.after(), s.upTo()));
        }
        return new ArrayList<>(ids);
    }

    /**
     * Queued files: each gets its {@code recall_file} row; one already in the cache is answered at once, one
     * with no usable tape copy or already failed fails at once. Called with the files of the requests new since
     * the last round and with the sweep's slices: files given to the engine are not looked at every round (its
     * outcomes keep their rows; the sweep catches what changed under them).
     */
    private void registerQueuedFiles(List<Long> queued) {
        if (queued.isEmpty()) return;
        Long[] queuedIds = queued.toArray(Long[]::new);
        // the ids' range besides the ids: for a sweep's slice the planner then reads that part of recall_file and
        // segment along their keys instead of scanning them whole (0.75 s a slice at 10^6 queued files, now 0.19 s)
        long lo = queued.stream().mapToLong(Long::longValue).min().getAsLong();
        long hi = queued.stream().mapToLong(Long::longValue).max().getAsLong();
        jdbc.update("INSERT INTO recall_file (file_id) SELECT unnest(?::bigint[]) ON CONFLICT (file_id) DO NOTHING", (Object) queuedIds);
        // asked again after it failed: try again
        jdbc.update("""
                UPDATE recall_file rf SET state = 'queued', error = NULL, updated_at = now()
                 WHERE rf.state = 'failed' AND rf.file_id = ANY(?) AND EXISTS (
                       SELECT 1 FROM stage_request_file x JOIN stage_request r ON r.id = x.request_id
                        WHERE x.file_id = rf.file_id AND x.state = 'queued' AND r.created_at > rf.updated_at)""", (Object) queuedIds);
        // already in the cache: answered at once, no tape read; staged once but evicted since: read again
        List<Long> cached = new ArrayList<>();
        List<Long> inFlight = new ArrayList<>();
        for (CacheEntry e : cache.lookup(queued).values()) (e.cached() ? cached : inFlight).add(e.fileId());
        // being written for another read (joined): pinned now, as its read list's pins may predate these requests
        pin(inFlight, null);
        List<Long> onDisk = List.of();
        if (!cached.isEmpty()) {
            cache.touch(cached); // a hit is a use: evicted least recently used first, not in the order it was staged
            pin(cached, null);
            // looked up again once pinned: a copy evicted between the lookup and the pin is gone (read again)
            Map<Long, CacheEntry> held = cache.lookup(cached);
            cached.removeIf(id -> held.get(id) == null || !held.get(id).cached());
        }
        if (!cached.isEmpty()) {
            Long[] ids = cached.toArray(Long[]::new);
            onDisk = jdbc.queryForList("""
                    UPDATE stage_request_file x SET state = 'on_disk', finished_at = now(), started_at = coalesce(started_at, now())
                     WHERE x.file_id = ANY(?) AND x.state = 'queued' RETURNING x.file_id""", Long.class, (Object) ids);
            jdbc.update("""
                    UPDATE recall_file SET state = 'on_disk', error = NULL, updated_at = now()
                     WHERE file_id = ANY(?) AND state IN ('queued', 'failed', 'on_disk')""", (Object) ids);
        }
        List<Long> evicted = jdbc.queryForList("""
                UPDATE recall_file SET state = 'queued', path = NULL, updated_at = now()
                 WHERE state = 'on_disk' AND file_id = ANY(?) AND NOT (file_id = ANY(?)) RETURNING file_id""",
                Long.class, queuedIds, cached.toArray(Long[]::new));
        if (!evicted.isEmpty()) {
            // staged and committed between the cache lookup above and that update: not evicted after all (a staging
            // still under way is 'staging', never matched there, so looking again now closes the window); without
            // this the engine forgot the fresh copy and read the file from tape a second time
            Map<Long, CacheEntry> now = cache.lookup(evicted);
            List<Long> gone = new ArrayList<>();
            for (long id : evicted) {
                CacheEntry e = now.get(id);
                if (e != null && e.cached()) {
                    jdbc.update("UPDATE recall_file SET state = 'on_disk', path = ?, updated_at = now() WHERE file_id = ? AND state = 'queued'",
                            e.path().toString(), id);
                } else {
                    gone.add(id);
                }
            }
            evicted = gone;
        }
        for (long id : evicted) engine.evicted(id);
        List<Long> failed = jdbc.queryForList("""
                UPDATE stage_request_file x SET state = 'failed', error = rf.error, finished_at = now()
                  FROM recall_file rf WHERE rf.file_id = x.file_id AND rf.state = 'failed' AND x.state = 'queued'
                   AND x.file_id = ANY(?) AND rf.file_id BETWEEN ? AND ?
                RETURNING x.file_id""", Long.class, queuedIds, lo, hi);
        // no usable copy on tape: fail at once with the reason. The ids joined as rows, not matched by = ANY: with a
        // 10^6-file request's array the planner spent 1.2 s on the array alone and the check took 3.2 s, now 1.2 s
        // (a sweep's 25,000-id slice 0.23-0.27 s, now 0.08 s; in psql on bench/intake.sh's database)
        List<Long> noCopy = jdbc.queryForList("""
                UPDATE recall_file rf SET state = 'failed', error = 'no usable tape copy (segment lost or volume unavailable)',
                       updated_at = now()
                  FROM unnest(?::bigint[]) AS t(id)
                 WHERE rf.file_id = t.id AND rf.state = 'queued' AND rf.file_id BETWEEN ? AND ? AND NOT EXISTS (
                       SELECT 1 FROM segment s JOIN volume v ON v.id = s.volume_id
                        WHERE s.file_id = rf.file_id AND s.file_id BETWEEN ? AND ? AND s.state = 'ok' AND v.state = 'available')
                RETURNING rf.file_id""", Long.class, queuedIds, lo, hi, lo, hi);
        if (!noCopy.isEmpty()) {
            jdbc.update("""
                    UPDATE stage_request_file x SET state = 'failed', error = rf.error, finished_at = now()
                      FROM recall_file rf WHERE rf.file_id = x.file_id AND x.file_id = ANY(?) AND x.state = 'queued'""",
                    (Object) noCopy.toArray(Long[]::new));
        }
        for (List<Long> ids : List.of(onDisk, failed, noCopy)) for (long id : new HashSet<>(ids)) store.completeRequests(id);
    }

    /**
     * Gives the engine this round's slices (those of {@code fresh} requests taken whole that have files to read,
     * a large request's first slice, the next slices of those taken in part), then moves the round's window on.
     */
    private void intake(Map<String, Fresh> fresh, List<Slice> slices) {
        if (!slices.isEmpty()) submit(fresh, slices);
        // only once they were given to the engine: a round cut short reads the same requests again
        for (Fresh f : fresh.values()) if (f.created().isAfter(watermark)) watermark = f.created();
        Instant window = watermark.minus(LATE_COMMIT);
        known.values().removeIf(created -> created.isBefore(window)); // outside every later window: never read again
    }

    /** The files of requests taken in, with the copies of each file's rows gathered into its (still mutable) list. */
    private static final class Taken {
        record Head(int priority, String experiment) {}
        final Map<String, Head> heads = new HashMap<>();
        final Map<String, Map<Long, FileSpec>> byRequest = new HashMap<>();

        void row(java.sql.ResultSet rs) throws java.sql.SQLException {
            String id = rs.getString("id");
            if (!heads.containsKey(id)) heads.put(id, new Head(rs.getInt("priority"), rs.getString("experiment")));
            long fid = rs.getLong("fid");
            Map<Long, FileSpec> files = byRequest.computeIfAbsent(id, k -> new LinkedHashMap<>());
            FileSpec f = files.get(fid);
            if (f == null) { // its first row
                String adler = rs.getString("adler32");
                f = new FileSpec(fid, rs.getString("name"), rs.getLong("size_bytes"), new ArrayList<>(2), rs.getString("fexp"),
                        rs.getString("dataset"), adler == null ? null : adler.trim(), rs.getString("meta"));
                files.put(fid, f);
            }
            f.copies().add(new Copy(rs.getString("label"), rs.getLong("offset_bytes")));
        }

        List<FileSpec> files(String request) {
            Map<Long, FileSpec> taken = byRequest.get(request);
            if (taken == null) return List.of();
            List<FileSpec> files = new ArrayList<>(taken.values());
            for (FileSpec spec : files) {
                if (spec.copies().size() > 1) spec.copies().sort(java.util.Comparator.comparing(Copy::volume)); // as before: by label
            }
            return files;
        }
    }

    // a row per usable copy, joined (not a subquery per file: that probed segment and volume once per file,
    // 27 s for a 10^6-file request); a file with no usable copy has no row: it failed above (registerQueuedFiles)
    private static final String TAKEN_ROWS = """
            SELECT sr.id::text AS id, sr.priority, sr.experiment, f.id AS fid, f.name, f.size_bytes, f.adler32,
                   f.experiment AS fexp, d.name AS dataset, x.targeted_metadata::text AS meta,
                   v.label, s.offset_bytes
              FROM stage_request_file x
              JOIN stage_request sr ON sr.id = x.request_id
              JOIN file f ON f.id = x.file_id
              JOIN segment s ON s.file_id = x.file_id AND s.state = 'ok'
              JOIN volume v ON v.id = s.volume_id AND v.state = 'available'
              LEFT JOIN dataset d ON d.id = f.dataset_id
             WHERE x.state IN ('queued', 'staging') AND sr.state IN ('submitted', 'active')
            """;

    private void submit(Map<String, Fresh> fresh, List<Slice> slices) {
        Taken taken = new Taken();
        String[] whole = slices.stream().filter(Slice::whole).map(Slice::request).toArray(String[]::new);
        if (whole.length > 0) {
            // on the files' column: its statistics then show a small request as small (on sr.id the
            // planner took every queued file of a 10^6-file request for it and scanned them: 1.5 s)
            jdbc.query(TAKEN_ROWS + " AND x.request_id = ANY(?::uuid[])", taken::row, (Object) whole);
        }
        for (Slice sl : slices) {
            if (sl.whole()) continue;
            // a slice along the request's key, and the files' and segments' rows along theirs (the slice's range of
            // file ids), as the sweep's slices are read
            jdbc.query(TAKEN_ROWS + """
                     AND x.request_id = ?::uuid AND x.file_id > ? AND x.file_id <= ?
                       AND f.id > ? AND f.id <= ? AND s.file_id > ? AND s.file_id <= ?""", taken::row,
                    sl.request(), sl.after(), sl.upTo(), sl.after(), sl.upTo(), sl.after(), sl.upTo());
        }
        for (Slice sl : slices) { // requests taken in part first (they came earlier), then the new in creation order
            String request = sl.request();
            List<FileSpec> files = taken.files(request);
            if (partial.containsKey(request)) {
                engine.addFiles(request, files, !sl.last());
                if (sl.last()) partial.remove(request);
                else partial.put(request, sl.upTo());
                continue;
            }
            Fresh f = fresh.get(request);
            if (sl.whole() || sl.last()) {
                if (files.isEmpty()) continue; // nothing of it to read (as before: looked at again while in the window)
                Taken.Head first = taken.heads.get(request);
                // no pins here: a file is pinned for its requests before its read list reserves its space
                // (CacheStaging), so a copy that lands is held for them from the start; files on disk or being
                // written now were pinned above (registerQueuedFiles)
                engine.submit(request, f.arrival(), first.priority(), first.experiment() == null ? files.get(0).experiment() : first.experiment(), files);
            } else {
                // a large request's first slice: the rest follows a slice a round (even if nothing of this one is open)
                String experiment = f.experiment() != null || files.isEmpty() ? f.experiment() : files.get(0).experiment();
                engine.submit(request, f.arrival(), f.priority(), experiment, files, true);
                partial.put(request, sl.upTo());
            }
            known.put(request, f.created());
        }
    }

    /**
     * Pins these files for each open request still waiting for them (not released, cancelled, failed or already
     * delivered) for the request's disk lifetime from now; only for {@code onlyRequest} when given. Not for an
     * ended request, nor a file its transfer delivered (its pin was released then): a file asked for again was
     * pinned anew for every request of its past, each for its whole lifetime, and nothing released those pins.
     */
    void pin(List<Long> fileIds, String onlyRequest) {
        if (fileIds.isEmpty()) return;
        Long[] ids = fileIds.toArray(Long[]::new);
        String wanting = """
                SELECT x.request_id FROM stage_request_file x WHERE x.file_id = ANY(?) AND NOT x.released
                   AND x.state NOT IN ('cancelled', 'failed', 'done') AND (?::uuid IS NULL OR x.request_id = ?::uuid)""";
        // the requests' rows held while their files are read and pinned (RequestPins)
        PIN_DEADLOCK.invoke(() -> tx.executeWithoutResult(t -> {
            RequestPins.lockOpen(jdbc, wanting, ids, onlyRequest, onlyRequest);
            Map<String, List<Long>> byRequest = new LinkedHashMap<>();
            Map<String, Duration> lifetimes = new HashMap<>();
            jdbc.query("""
                    SELECT x.request_id::text, r.disk_lifetime_s, x.file_id FROM stage_request_file x
                      JOIN stage_request r ON r.id = x.request_id
                     WHERE x.file_id = ANY(?) AND NOT x.released AND x.state NOT IN ('cancelled', 'failed', 'done')
                       AND r.state IN ('submitted', 'active') AND (?::uuid IS NULL OR x.request_id = ?::uuid)""", rs -> {
                lifetimes.put(rs.getString(1), RequestPins.lifetime(rs.getLong(2)));
                byRequest.computeIfAbsent(rs.getString(1), k -> new ArrayList<>()).add(rs.getLong(3));
            }, ids, onlyRequest, onlyRequest);
            byRequest.forEach((request, files) -> cache.pin(files, request, lifetimes.get(request)));
        }));
    }

    /** Pins are made in a transaction of their own: one that lost a deadlock runs again. */
    private static final org.springframework.core.retry.RetryTemplate PIN_DEADLOCK = DatabaseRetry.onDeadlock(Duration.ofMillis(10));

    /** Cancelled files per open request the engine serves, as last seen (the running counts, V30). */
    private final Map<String, Long> cancelledSeen = new HashMap<>();
    /** Files cancelled before this (the database's clock) were looked at; EPOCH: none yet. */
    private Instant cancelsCheckedTo = Instant.EPOCH;

    /**
     * Files cancelled one by one (on any instance) in requests still open whose count of cancelled files changed:
     * the engine stops waiting for them, and stops reading those nobody else wants. A request cancelled whole
     * ends and is forgotten instead.
     */
    private void forgetCancelledFiles(List<String> requests) {
        if (requests.isEmpty()) return; // the window may stay where it is: it only bounds the look below
        Instant checked = jdbc.queryForObject("SELECT now()", Timestamp.class).toInstant();
        Map<String, Set<Long>> cancelled = new HashMap<>();
        jdbc.query("""
                SELECT request_id::text, file_id FROM stage_request_file
                 WHERE request_id = ANY(?::uuid[]) AND state = 'cancelled' AND finished_at >= ?""",
                rs -> { cancelled.computeIfAbsent(rs.getString(1), k -> new HashSet<>()).add(rs.getLong(2)); },
                requests.toArray(String[]::new), Timestamp.from(cancelsCheckedTo));
        cancelled.forEach(engine::forgetFiles);
        // a cancel's time is its transaction's start: one committing later than this is still seen next time
        cancelsCheckedTo = checked.minus(LATE_COMMIT);
    }

    private void reconcile() {
        List<String> open = engine.openRequestIds();
        if (!open.isEmpty()) {
            // ended, or deleted (WLCG DELETE): the engine stops serving them; a changed priority applies at once
            Map<String, Integer> still = new HashMap<>();
            List<String> cancelledSince = new ArrayList<>();
            jdbc.query("""
                    SELECT r.id::text, r.priority, coalesce(c.files, 0) FROM stage_request r
                      LEFT JOIN stage_request_count c ON c.request_id = r.id AND c.state = 'cancelled'
                     WHERE r.id = ANY(?::uuid[]) AND r.state IN ('submitted', 'active')""", rs -> {
                String id = rs.getString(1);
                still.put(id, rs.getInt(2));
                Long seen = cancelledSeen.put(id, rs.getLong(3));
                if (rs.getLong(3) != (seen == null ? 0 : seen)) cancelledSince.add(id);
            }, (Object) open.toArray(String[]::new));
            for (String id : open) {
                Integer p = still.get(id);
                if (p == null) engine.forget(id);
                else engine.changePriority(id, p);
            }
            cancelledSeen.keySet().retainAll(still.keySet());
            forgetCancelledFiles(cancelledSince);
        }
        Set<String> unavailable = engine.unavailableVolumes();
        if (!unavailable.isEmpty()) { // restored by an operator: usable again
            for (String v : jdbc.queryForList("SELECT label FROM volume WHERE label = ANY(?) AND state = 'available'",
                    String.class, (Object) unavailable.toArray(String[]::new))) engine.volumeAvailable(v);
        }
        List<Long> elsewhere = engine.claimedElsewhere();
        if (!elsewhere.isEmpty()) {
            jdbc.query("""
                    SELECT file_id, state, error FROM recall_file
                     WHERE file_id = ANY(?) AND state IN ('queued', 'on_disk', 'failed')""", rs -> {
                long id = rs.getLong(1);
                switch (rs.getString(2)) {
                    case "queued" -> engine.requeueIfClaimedElsewhere(id);
                    case "on_disk" -> engine.finishedElsewhere(id, true, null);
                    default -> engine.finishedElsewhere(id, false, rs.getString(3));
                }
            }, (Object) elsewhere.toArray(Long[]::new));
        }
    }
}
