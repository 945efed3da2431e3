package dev.stagehand.transfer;

import java.net.URI;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;
import org.springframework.transaction.annotation.Transactional;

/**
 * The transfer queue in PostgreSQL (table transfer_job). Other modules enqueue files here; the
 * {@code TransferDrainer} claims rows with {@code FOR UPDATE SKIP LOCKED} under a lease and moves them.
 */
@Component
public class TransferQueue {

    /** A file to move, as a caller asks for it. */
    public record Request(String correlation, URI source, URI destination, long sizeBytes, Long adler32) {}

    private final JdbcTemplate jdbc;

    public TransferQueue(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    /** Queues {@code requests}; returns their row ids in the same order. */
    @Transactional
    public List<Long> enqueue(List<Request> requests) {
        List<Long> ids = new ArrayList<>(requests.size());
        for (Request r : requests) {
            if (r.sizeBytes() < 0) throw new IllegalArgumentException("negative size for " + r.source());
            ids.add(jdbc.queryForObject("""
                    INSERT INTO transfer_job (correlation, source, destination, size_bytes, adler32)
                    VALUES (?, ?, ?, ?, ?) RETURNING id""", Long.class,
                    r.correlation(), r.source().toString(), r.destination().toString(), r.sizeBytes(), r.adler32()));
        }
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
        return jdbc.update("""
                UPDATE transfer_job SET state = 'cancelled', finished_at = now(), lease_owner = NULL, lease_until = NULL
                WHERE id = ? AND state IN ('queued', 'active')""", id) == 1;
    }

    /**
     * Puts a failed row back in the queue (an operator's retry): its attempt counters and last error stay
     * for the record. Returns false when the row is not failed (nothing changed).
     */
    public boolean retry(long id) {
        return jdbc.update("""
                UPDATE transfer_job SET state = 'queued', finished_at = NULL, lease_owner = NULL, lease_until = NULL
                WHERE id = ? AND state = 'failed'""", id) == 1;
    }

    /** The newest rows in any of {@code states} (queued, active, done, failed, cancelled), newest first. */
    public List<TransferJob> recent(List<String> states, int limit) {
        return jdbc.query("SELECT * FROM transfer_job WHERE state = ANY (?) ORDER BY id DESC LIMIT ?",
                TransferQueue::row, states.toArray(String[]::new), limit);
    }

    /** Claims up to {@code limit} queued rows (or active ones whose lease expired) for {@code owner}. */
    @Transactional
    public List<TransferJob> claim(String owner, int limit, Duration lease) {
        return jdbc.query("""
                UPDATE transfer_job SET state = 'active', lease_owner = ?, lease_until = now() + make_interval(secs => ?),
                       attempts = attempts + 1, started_at = coalesce(started_at, now())
                WHERE id IN (SELECT id FROM transfer_job
                             WHERE state = 'queued' OR (state = 'active' AND lease_until < now())
                             ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED)
                RETURNING *""", TransferQueue::row, owner, lease.toMillis() / 1000.0, limit);
    }

    /**
     * Rows {@code owner} held before a restart: nothing moves them now, so they are queued again at once
     * (another instance would otherwise wait for their leases). Returns how many.
     */
    public int releaseStale(String owner) {
        return jdbc.update("UPDATE transfer_job SET state = 'queued', lease_owner = NULL, lease_until = NULL "
                + "WHERE state = 'active' AND lease_owner = ?", owner);
    }

    /** Extends the leases {@code owner} holds; returns how many rows it still holds. */
    public int renew(String owner, Duration lease) {
        return jdbc.update("UPDATE transfer_job SET lease_until = now() + make_interval(secs => ?) "
                + "WHERE state = 'active' AND lease_owner = ?", lease.toMillis() / 1000.0, owner);
    }

    /** Whether {@code owner} still holds the row (not cancelled, lease not taken over). */
    public boolean holds(long id, String owner) {
        return Boolean.TRUE.equals(jdbc.queryForObject(
                "SELECT EXISTS (SELECT 1 FROM transfer_job WHERE id = ? AND state = 'active' AND lease_owner = ?)",
                Boolean.class, id, owner));
    }

    boolean done(long id, String owner, CopyResult r) {
        double seconds = Math.max(r.elapsed().toNanos() / 1e9, 1e-9);
        return jdbc.update("""
                UPDATE transfer_job SET state = 'done', bytes_moved = ?, mb_per_s = ?, mover_attempts = ?,
                       dest_adler32 = ?, finished_at = now(), lease_owner = NULL, lease_until = NULL
                WHERE id = ? AND state = 'active' AND lease_owner = ?""",
                r.bytes(), r.bytes() / 1e6 / seconds, r.attempts(), r.adler32() < 0 ? null : r.adler32(), id, owner) == 1;
    }

    boolean failed(long id, String owner, TransferFailure f) {
        return jdbc.update("""
                UPDATE transfer_job SET state = 'failed', last_error_class = ?, last_error = ?, mover_attempts = ?,
                       finished_at = now(), lease_owner = NULL, lease_until = NULL
                WHERE id = ? AND state = 'active' AND lease_owner = ?""",
                f.kind().name(), f.getMessage(), f.attempts(), id, owner) == 1;
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
                instant(rs.getTimestamp("finished_at")));
    }

    private static Instant instant(Timestamp t) {
        return t == null ? null : t.toInstant();
    }
}
