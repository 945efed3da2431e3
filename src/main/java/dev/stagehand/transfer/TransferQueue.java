package dev.stagehand.transfer;

import java.net.URI;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * The transfer queue in PostgreSQL (table transfer_job). Other modules enqueue files here; the
 * {@code TransferDrainer} claims rows with {@code FOR UPDATE SKIP LOCKED} under a lease and moves them.
 * <p>The rows are the queue; this instance also passes in-process hints so that nothing waits for a poll:
 * rows queued here wake the drainer once committed ({@link #awaitQueued}), and rows ended here are announced
 * to {@link #onEnded} listeners. A hint can be missed (another instance queued the row, a listener was busy):
 * the pollers still find every row.
 */
@Component
public class TransferQueue {

    private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(TransferQueue.class);

    /**
     * A file to move, as a caller asks for it. {@code overwrite}: a file already at the destination that the row
     * did not write is written over (the destination path is the caller's own: a replica's place at a site), not
     * kept or failed as {@code stagehand.transfer.existing-destination} says for the rest.
     */
    public record Request(String correlation, URI source, URI destination, long sizeBytes, Long adler32, boolean overwrite) {

        /** A request that does not overwrite a file it did not write (unless existing-destination says to). */
        public Request(String correlation, URI source, URI destination, long sizeBytes, Long adler32) {
            this(correlation, source, destination, sizeBytes, adler32, false);
        }
    }

    private final JdbcTemplate jdbc;
    /** One permit at most: "rows were queued since the drainer last looked". */
    private final Semaphore queued = new Semaphore(0);
    private final List<Consumer<String>> endListeners = new CopyOnWriteArrayList<>();

    public TransferQueue(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    /**
     * Waits until rows are queued in this instance (after their transaction commits) or {@code max} passes,
     * whichever is first; returns at once when rows were queued since the last call. Returns whether it
     * was woken by queued rows.
     */
    public boolean awaitQueued(Duration max) throws InterruptedException {
        if (!queued.tryAcquire(max.toNanos(), TimeUnit.NANOSECONDS)) return false;
        queued.drainPermits();
        return true;
    }

    /**
     * {@code listener} gets the correlation of each row this instance ends (done, failed, cancelled), once
     * that is committed. Called on the thread that ended it: it must only note the change and return.
     */
    public void onEnded(Consumer<String> listener) {
        endListeners.add(listener);
    }

    private void wakeDrainer() {
        if (queued.availablePermits() == 0) queued.release();
    }

    private void ended(String correlation) {
        for (Consumer<String> l : endListeners) {
            try {
                l.accept(correlation);
            } catch (RuntimeException e) {
                // a hint only: the listener's own poll finds the row
            }
        }
    }

    /** Runs {@code hint} once the current transaction commits (at once outside one). */
    private static void afterCommit(Runnable hint) {
        if (TransactionSynchronizationManager.isSynchronizationActive()) {
            TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
                @Override
                public void afterCommit() {
                    hint.run();
                }
            });
        } else {
            hint.run();
        }
    }

    /** Queues {@code requests}; returns their row ids in the same order. */
    @Transactional
    public List<Long> enqueue(List<Request> requests) {
        List<Long> ids = new ArrayList<>(requests.size());
        for (Request r : requests) {
            if (r.sizeBytes() < 0) throw new IllegalArgumentException("negative size for " + r.source());
            // under its destination's lock, shared (see claimPartialDelete), held to the end of the transaction
            ids.add(jdbc.queryForObject("""
                    INSERT INTO transfer_job (correlation, source, destination, size_bytes, adler32, overwrite)
                    SELECT ?, ?, ?, ?::bigint, ?::bigint, ? FROM (SELECT %s) AS l RETURNING id""".formatted(DESTINATION_LOCK_SHARED.formatted("?")),
                    Long.class, r.correlation(), r.source().toString(), r.destination().toString(), r.sizeBytes(), r.adler32(),
                    r.overwrite(), r.destination().toString()));
        }
        if (!ids.isEmpty()) afterCommit(this::wakeDrainer);
        return ids;
    }

    public TransferJob job(long id) {
        List<TransferJob> rows = jdbc.query("SELECT * FROM transfer_job WHERE id = ?", TransferQueue::row, id);
        if (rows.isEmpty()) throw new IllegalArgumentException("no transfer job " + id);
        return rows.getFirst();
    }

    public List<TransferJob> byCorrelation(String correlation) {
        return jdbc.query("SELECT * FROM transfer_job WHERE correlation = ? ORDER BY id", TransferQueue::row, correlation);
    }

    /** Cancels a row not yet finished; a running transfer is abandoned by the drainer on its next look. */
    public boolean cancel(long id) {
        List<String> c = jdbc.query("""
                UPDATE transfer_job SET state = 'cancelled', finished_at = now(), lease_owner = NULL, lease_until = NULL
                WHERE id = ? AND state IN ('queued', 'active') RETURNING correlation""", (rs, n) -> rs.getString(1), id);
        if (c.isEmpty()) return false;
        afterCommit(() -> ended(c.getFirst()));
        return true;
    }

    /**
     * Puts a failed row back in the queue (an operator's retry): its attempt counters and last error stay
     * for the record; its outage backoff and its count of lapsed claims start anew (kept, the first wait was
     * max-delay, and a row failed for its lapses failed again at its next one). Returns false when
     * the row is not failed (nothing changed).
     */
    public boolean retry(long id) {
        // live again under its destination's lock, shared (see claimPartialDelete)
        boolean again = jdbc.update("""
                UPDATE transfer_job j SET state = 'queued', finished_at = NULL, lease_owner = NULL, lease_until = NULL,
                       not_before = now(), outage_since = NULL, deferrals = 0, lapses = 0
                  FROM (SELECT %s FROM transfer_job WHERE id = ?) AS l
                WHERE j.id = ? AND j.state = 'failed'""".formatted(DESTINATION_LOCK_SHARED.formatted("destination")), id, id) == 1;
        if (again) afterCommit(this::wakeDrainer);
        return again;
    }

    /** The newest rows in any of {@code states} (queued, active, done, failed, cancelled), newest first. */
    public List<TransferJob> recent(List<String> states, int limit) {
        return jdbc.query("SELECT * FROM transfer_job WHERE state = ANY (?) ORDER BY id DESC LIMIT ?",
                TransferQueue::row, states.toArray(String[]::new), limit);
    }

    /**
     * Claims up to {@code limit} rows for {@code owner}: active ones whose lease expired (their mover is gone)
     * first, then queued ones in {@code not_before} order. Two statements, not one with OR: together they
     * could not use the ready index's order, so each claim read and sorted every ready row (135 ms at 100,000
     * queued, against 0.25 ms).
     */
    @Transactional
    public List<TransferJob> claim(String owner, int limit, Duration lease) {
        return claim(owner, limit, lease, Integer.MAX_VALUE);
    }

    /**
     * As {@link #claim(String, int, Duration)}; a row whose claim lapses for the {@code maxLapses}th time fails
     * instead of being claimed again (see {@link #releaseStale}).
     */
    @Transactional
    public List<TransferJob> claim(String owner, int limit, Duration lease, int maxLapses) {
        failLapsed("state = 'active' AND lease_until < now()", maxLapses);
        List<TransferJob> claimed = new ArrayList<>(claimWhere(owner, limit, lease,
                "state = 'active' AND lease_until < now() ORDER BY lease_until, id", ", lapses = lapses + 1"));
        if (claimed.size() < limit) {
            // not while a cancelled transfer's partial file at the same destination is being deleted
            claimed.addAll(claimWhere(owner, limit - claimed.size(), lease, """
                    state = 'queued' AND not_before <= now() AND NOT EXISTS (SELECT 1 FROM transfer_job d
                          WHERE d.destination = transfer_job.destination AND d.partial_delete_until > now())
                    ORDER BY not_before, id""", ""));
        }
        return claimed;
    }

    private List<TransferJob> claimWhere(String owner, int limit, Duration lease, String whereAndOrder, String alsoSet) {
        return jdbc.query("""
                UPDATE transfer_job SET state = 'active', lease_owner = ?, lease_until = now() + make_interval(secs => ?),
                       attempts = attempts + 1, started_at = coalesce(started_at, now())%s
                WHERE id IN (SELECT id FROM transfer_job WHERE %s LIMIT ? FOR UPDATE SKIP LOCKED)
                RETURNING *""".formatted(alsoSet, whereAndOrder), TransferQueue::row, owner, lease.toMillis() / 1000.0, limit);
    }

    /**
     * Fails the rows matching {@code held} (claims that ended with no outcome) whose lapse would be their
     * {@code maxLapses}th: each claim of such a row ended with its instance gone (crashed or killed while moving
     * it), and claimed for ever it would take down every instance in turn.
     */
    private void failLapsed(String held, int maxLapses, Object... heldArgs) {
        Object[] args = java.util.Arrays.copyOf(heldArgs, heldArgs.length + 1);
        args[heldArgs.length] = maxLapses;
        List<String> ended = jdbc.queryForList("""
                UPDATE transfer_job SET state = 'failed', last_error_class = 'LAPSED', lapses = lapses + 1,
                       last_error = 'claimed ' || (lapses + 1) || ' times by instances that stopped before it ended (crashed or '
                                    || 'were killed while moving it?); retry it once the cause is found',
                       finished_at = now(), lease_owner = NULL, lease_until = NULL
                WHERE id IN (SELECT id FROM transfer_job WHERE %s AND lapses + 1 >= ? FOR UPDATE SKIP LOCKED)
                RETURNING correlation""".formatted(held), String.class, args);
        if (ended.isEmpty()) return;
        log.warn("{} transfer(s) failed: claimed {} times by instances that stopped "
                + "before they ended", ended.size(), maxLapses);
        afterCommit(() -> ended.forEach(this::ended));
    }

    /**
     * Rows {@code owner} held before a restart: nothing moves them now, so they are queued again at once
     * (another instance would otherwise wait for their leases), each such restart counted as a lapse of its
     * claim, and failed at the {@code maxLapses}th. Returns how many were queued again.
     */
    public int releaseStale(String owner, int maxLapses) {
        failLapsed("state = 'active' AND lease_owner = ?", maxLapses, owner);
        return jdbc.update("UPDATE transfer_job SET state = 'queued', lease_owner = NULL, lease_until = NULL, lapses = lapses + 1 "
                + "WHERE state = 'active' AND lease_owner = ?", owner);
    }

    /**
     * Extends {@code owner}'s leases on the rows {@code ids} (those it is moving: a row it claimed but does not
     * move must lapse, not be held for ever); returns how many it still holds.
     */
    public int renew(String owner, Collection<Long> ids, Duration lease) {
        return jdbc.update("UPDATE transfer_job SET lease_until = now() + make_interval(secs => ?) "
                + "WHERE state = 'active' AND lease_owner = ? AND id = ANY (?)", lease.toMillis() / 1000.0, owner,
                ids.toArray(Long[]::new));
    }

    /** Whether {@code owner} still holds the row (not cancelled, lease not taken over). */
    public boolean holds(long id, String owner) {
        return Boolean.TRUE.equals(jdbc.queryForObject(
                "SELECT EXISTS (SELECT 1 FROM transfer_job WHERE id = ? AND state = 'active' AND lease_owner = ?)",
                Boolean.class, id, owner));
    }

    /** Which of the rows {@code ids} {@code owner} no longer holds (cancelled, ended or taken over). */
    List<Long> notHeld(String owner, Collection<Long> ids) {
        return jdbc.queryForList("""
                SELECT x.id FROM unnest(?::bigint[]) AS x(id)
                 WHERE NOT EXISTS (SELECT 1 FROM transfer_job j WHERE j.id = x.id AND j.state = 'active' AND j.lease_owner = ?)""",
                Long.class, ids.toArray(Long[]::new), owner);
    }

    /**
     * A row's destination's lock (transaction-scoped), taken shared by whatever makes a row to it live. One of 256
     * by the destination's hash, not one per destination: an enqueue of 10^5 files in one transaction would take
     * 10^5 locks, more than PostgreSQL's shared lock table holds (max_locks_per_transaction x connections), and
     * fail. Two destinations in one bucket only make a delete wait for the other's enqueue to commit.
     */
    private static final String DESTINATION_LOCK = "(hashtext('transfer_job.destination'), hashtext(%s) & 255)";
    private static final String DESTINATION_LOCK_SHARED = "pg_advisory_xact_lock_shared" + DESTINATION_LOCK;

    /**
     * Whether the partial file cancelled row {@code id}'s mover left at its destination may be deleted: no live
     * row (queued or active) goes there. If so the row holds the deletion for {@code hold} (until
     * {@link #partialDeleted}): a row queued to the same place meanwhile is not claimed before, or the delete
     * would remove its bytes. The look and the hold are made under the destination's lock, which a row becoming
     * live (queued, retried) takes shared until it commits: so either the look sees that row, or the row is
     * queued after the hold and its claim sees the hold. Before, a row queued between the look and the delete
     * lost its first bytes to it (or all of them: a put verified by the server before its 226, then deleted).
     * Only a row that wrote there ({@link #writing}) has a partial file to delete: before, a row that failed or was
     * cancelled before its first STOR deleted whatever was at its destination (another's file, lost).
     */
    boolean claimPartialDelete(long id, Duration hold) {
        return holdDestination(id, hold, "j.state = 'cancelled'");
    }

    /**
     * As {@link #claimPartialDelete}, for a row {@code owner} still holds that is failing for good: its partial
     * file may be deleted when no other live row goes to its destination, and a row queued there meanwhile is
     * not claimed until the delete is over. Before, the failed row's delete took no hold: a transfer queued to
     * the same place while it ran was claimed at once, and the delete removed the bytes it had written.
     */
    boolean holdPartialDelete(long id, String owner, Duration hold) {
        return holdDestination(id, hold, "j.state = 'active' AND j.lease_owner = ?", owner);
    }

    /**
     * Records that row {@code id}, which {@code owner} holds, writes at its destination from now on (called by the
     * mover before its first STOR or ESTO there, and committed before it): from then on the file there is the
     * row's, resumed or written over by its later claims, and deleted when it fails or is cancelled. Returns
     * false when the row is not {@code owner}'s any more (cancelled or taken over): then it must not write.
     */
    boolean writing(long id, String owner) {
        return jdbc.update("UPDATE transfer_job SET wrote_destination = true WHERE id = ? AND state = 'active' AND lease_owner = ?",
                id, owner) == 1;
    }

    private boolean holdDestination(long id, Duration hold, String mine, Object... mineArgs) {
        Object[] args = new Object[2 + mineArgs.length];
        args[0] = seconds(hold);
        args[1] = id;
        System.arraycopy(mineArgs, 0, args, 2, mineArgs.length);
        // its own transaction (called from the drainer, past any proxy)
        return Boolean.TRUE.equals(dev.stagehand.platform.Transactions.on(jdbc).execute(t -> {
            jdbc.query("SELECT pg_advisory_xact_lock" + DESTINATION_LOCK.formatted("destination") + " FROM transfer_job WHERE id = ?",
                    rs -> {}, id);
            // clock_timestamp(): the lock may have been waited for
            return jdbc.update("""
                    UPDATE transfer_job j SET partial_delete_until = clock_timestamp() + make_interval(secs => ?)
                     WHERE j.id = ? AND %s AND j.wrote_destination AND NOT EXISTS (
                           SELECT 1 FROM transfer_job o WHERE o.destination = j.destination AND o.id <> j.id
                                                          AND o.state IN ('queued', 'active'))""".formatted(mine),
                    args) == 1;
        }));
    }

    /**
     * Ends row {@code id}'s hold on its destination (its partial file deleted, or not): rows queued there may go.
     * {@code gone}: the file was deleted, so nothing at the destination is the row's any more (an operator's retry
     * looks there again first).
     */
    void partialDeleted(long id, boolean gone) {
        if (jdbc.update("""
                UPDATE transfer_job SET partial_delete_until = NULL, wrote_destination = wrote_destination AND NOT ?
                 WHERE id = ? AND partial_delete_until IS NOT NULL""", gone, id) > 0) {
            afterCommit(this::wakeDrainer);
        }
    }

    boolean done(long id, String owner, CopyResult r) {
        double seconds = Math.max(r.elapsed().toNanos() / 1e9, 1e-9);
        return endedBy(jdbc.query("""
                UPDATE transfer_job SET state = 'done', bytes_moved = ?, mb_per_s = ?, mover_attempts = ?,
                       dest_adler32 = ?, finished_at = now(), lease_owner = NULL, lease_until = NULL
                WHERE id = ? AND state = 'active' AND lease_owner = ? RETURNING correlation""", (rs, n) -> rs.getString(1),
                r.bytes(), r.bytes() / 1e6 / seconds, r.attempts(), r.adler32() < 0 ? null : r.adler32(), id, owner));
    }

    boolean failed(long id, String owner, TransferFailure f) {
        return endedBy(jdbc.query("""
                UPDATE transfer_job SET state = 'failed', last_error_class = ?, last_error = ?, mover_attempts = ?,
                       finished_at = now(), lease_owner = NULL, lease_until = NULL
                WHERE id = ? AND state = 'active' AND lease_owner = ? RETURNING correlation""", (rs, n) -> rs.getString(1),
                f.kind().name(), f.getMessage(), f.attempts(), id, owner));
    }

    /**
     * Puts a row {@code owner} claimed back in the queue as it was, its claim not counted as an attempt: the
     * drainer is stopping, or the mover dropped the file without it being the file's fault. Returns whether
     * the row was still ours (not cancelled or taken over meanwhile).
     */
    boolean putBack(long id, String owner) {
        return jdbc.update("""
                UPDATE transfer_job SET state = 'queued', lease_owner = NULL, lease_until = NULL,
                       attempts = greatest(attempts - 1, 0)
                WHERE id = ? AND state = 'active' AND lease_owner = ?""", id, owner) == 1;
    }

    /** What became of a row whose destination (or source) could not be reached. */
    enum Outcome { PUT_BACK, FAILED, NOT_OURS }

    /**
     * A claimed row failed because the other end could not be reached ({@link TransferFailure.Kind#unreachable()}):
     * it goes back to the queue, not to be claimed for {@code outage.delay()} doubled per put-back (at most
     * {@code outage.maxDelay()}), unless its outage has lasted {@code outage.giveUpAfter()}: then it fails.
     * A site down for an hour thus delays its files rather than failing them (FTS3 and Rucio fail them and
     * leave the resubmission to someone).
     */
    Outcome putBackOrFail(long id, String owner, TransferFailure f, TransferProperties.Outage outage) {
        int back = jdbc.update("""
                UPDATE transfer_job SET state = 'queued', lease_owner = NULL, lease_until = NULL,
                       last_error_class = ?, last_error = ?, mover_attempts = ?, deferrals = deferrals + 1,
                       outage_since = coalesce(outage_since, now()),
                       not_before = now() + make_interval(secs => least(?, ? * power(2, least(deferrals, 30))))
                WHERE id = ? AND state = 'active' AND lease_owner = ?
                  AND coalesce(outage_since, now()) > now() - make_interval(secs => ?)""",
                f.kind().name(), f.getMessage(), f.attempts(), seconds(outage.maxDelay()), seconds(outage.delay()),
                id, owner, seconds(outage.giveUpAfter()));
        if (back == 1) return Outcome.PUT_BACK;
        return failed(id, owner, f) ? Outcome.FAILED : Outcome.NOT_OURS;
    }

    /** Whether {@code owner} holds the row and its outage has lasted {@code outage.giveUpAfter()}: its next failure is its last. */
    boolean outageOver(long id, String owner, TransferProperties.Outage outage) {
        return Boolean.TRUE.equals(jdbc.queryForObject("""
                SELECT EXISTS (SELECT 1 FROM transfer_job WHERE id = ? AND state = 'active' AND lease_owner = ?
                                  AND outage_since <= now() - make_interval(secs => ?))""", Boolean.class,
                id, owner, seconds(outage.giveUpAfter())));
    }

    private static double seconds(Duration d) {
        return d.toMillis() / 1000.0;
    }

    /** Whether a row was ended; if so its listeners hear of it once that is committed. */
    private boolean endedBy(List<String> correlations) {
        if (correlations.isEmpty()) return false;
        afterCommit(() -> ended(correlations.getFirst()));
        return true;
    }

    private static TransferJob row(ResultSet rs, int n) throws SQLException {
        long sum = rs.getLong("adler32");
        Long adler = rs.wasNull() ? null : sum;
        double rate = rs.getDouble("mb_per_s");
        Double mbps = rs.wasNull() ? null : rate;
        return new TransferJob(rs.getLong("id"), rs.getString("correlation"), rs.getString("source"),
                rs.getString("destination"), rs.getLong("size_bytes"), adler, rs.getString("state"), rs.getInt("attempts"),
                rs.getString("last_error_class"), rs.getString("last_error"), rs.getLong("bytes_moved"), mbps,
                instant(rs.getTimestamp("created_at")), instant(rs.getTimestamp("started_at")),
                instant(rs.getTimestamp("finished_at")), instant(rs.getTimestamp("not_before")), rs.getInt("deferrals"),
                rs.getBoolean("wrote_destination"), rs.getBoolean("overwrite"));
    }

    private static Instant instant(Timestamp t) {
        return t == null ? null : t.toInstant();
    }
}
