package dev.stagehand.recall.request;

import java.util.UUID;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;

/**
 * Ends a request once none of its files is open any more. Open files are those still queued, staging or
 * transferring, and those on disk that wait for a transfer (the request has a destination); a file on
 * disk in a request without destination has ended (it stays pinned until released or expired).
 *
 * <p>The final state: cancelled when every file was cancelled, failed when any file failed (a file the request
 * named that was absent from the catalog counts as failed, and so does a failed file deleted from the catalog while
 * the request was open; one cancelled and deleted so counts as cancelled), else done.
 * Call it in the transaction that moved a file to an ended state (cancel does; the scheduler should).
 */
@Component
public class RequestSettlement {

    /** SQL condition, over alias {@code srf} and request alias {@code r}, for a file that is still open. */
    public static final String OPEN_FILE =
            "(srf.state IN ('queued', 'staging', 'transferring') OR (srf.state = 'on_disk' AND r.destination IS NOT NULL))";

    private final JdbcTemplate jdbc;
    private final RecallMetrics metrics;

    public RequestSettlement(JdbcTemplate jdbc) {
        this(jdbc, RecallMetrics.NONE);
    }

    @org.springframework.beans.factory.annotation.Autowired
    public RequestSettlement(JdbcTemplate jdbc, RecallMetrics metrics) {
        this.jdbc = jdbc;
        this.metrics = metrics;
    }

    /** @return true if the request ended now */
    public boolean settle(UUID requestId) {
        return ended(SETTLE + "r.id = ?" + RETURNING, requestId) > 0;
    }

    /** Settles every open request that holds {@code fileId} (after the file reached an ended state). */
    public int settleRequestsOf(long fileId) {
        return ended(SETTLE + "r.id IN (SELECT request_id FROM stage_request_file WHERE file_id = ?)" + RETURNING, fileId);
    }

    /**
     * Locks the open requests holding {@code fileId}, in id order, before a transaction moves the file's rows
     * to an ended state and settles. Without it two transactions ending a request's last two files each
     * settle before the other commits, each sees the other's file still open, and the request never ends.
     * Cancel and release lock the request first too, so the order is the same everywhere.
     */
    public void lockOpenRequestsOf(long fileId) {
        jdbc.queryForList("""
                SELECT id FROM stage_request WHERE state IN ('submitted', 'active')
                   AND id IN (SELECT request_id FROM stage_request_file WHERE file_id = ?)
                 ORDER BY id FOR UPDATE""", fileId);
    }

    /**
     * Ends every open request none of whose files is open any more: a repair for a settle lost to a crash
     * between a file's end and its request's (the statements of a hand-off round are not one transaction).
     */
    public int settleAll() {
        return ended(SETTLE + "?" + RETURNING, true);
    }

    /** Ends a request as cancelled (the caller cancelled all its open files). */
    public boolean cancel(UUID requestId) {
        return ended("UPDATE stage_request r SET state = 'cancelled', completed_at = now() WHERE r.id = ?" + RETURNING, requestId) > 0;
    }

    /** Runs the settling statement and records each request it ended (latency per experiment and result). */
    private int ended(String sql, Object arg) {
        int[] n = {0};
        jdbc.query(sql, rs -> {
            n[0]++;
            metrics.requestEnded(rs.getString("experiment"), rs.getString("state"),
                    java.time.Duration.ofNanos((long) (rs.getDouble("seconds") * 1e9)));
        }, arg);
        return n[0];
    }

    private static final String RETURNING =
            " RETURNING r.experiment, r.state, extract(epoch FROM r.completed_at - r.created_at)::float8 AS seconds";

    private static final String SETTLE = """
            UPDATE stage_request r SET
              state = CASE
                WHEN EXISTS (SELECT 1 FROM stage_request_absent a WHERE a.request_id = r.id AND coalesce(a.state, 'failed') = 'failed') THEN 'failed'
                WHEN NOT EXISTS (SELECT 1 FROM stage_request_file f WHERE f.request_id = r.id AND f.state <> 'cancelled') THEN 'cancelled'
                WHEN EXISTS (SELECT 1 FROM stage_request_file f WHERE f.request_id = r.id AND f.state = 'failed') THEN 'failed'
                ELSE 'done' END,
              completed_at = now()
            WHERE r.state IN ('submitted', 'active')
              AND NOT EXISTS (SELECT 1 FROM stage_request_file srf WHERE srf.request_id = r.id AND """ + OPEN_FILE + ") AND ";
}
