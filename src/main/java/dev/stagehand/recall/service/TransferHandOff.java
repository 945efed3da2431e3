package dev.stagehand.recall.service;

import dev.stagehand.platform.Transactions;
import dev.stagehand.cache.DiskCache;
import dev.stagehand.recall.request.RecallMetrics;
import dev.stagehand.recall.request.RequestSettlement;
import dev.stagehand.transfer.FileUrls;
import dev.stagehand.transfer.TransferFailure;
import dev.stagehand.transfer.TransferQueue;
import java.nio.file.Path;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.RowMapper;

/**
 * Hands each verified file of a request with a destination to the transfer queue as soon as it is on disk
 * (not when its whole request is), and ends the request's file when its transfer ends: done, or failed
 * with the transfer's reason. A delivered file's pin is released, so the movers' pace frees cache space
 * and paces staging. Everything is found through rows, so a restart carries on where it stopped.
 */
final class TransferHandOff {

    private static final Logger log = LoggerFactory.getLogger(TransferHandOff.class);
    static final int BATCH = 1000;

    private final JdbcTemplate jdbc;
    private final TransferQueue transfers;
    private final DiskCache cache;
    private final RequestSettlement settlement;
    /** Told the requests whose files were queued again for tape (their cached copy was found bad by a transfer). */
    private final java.util.function.Consumer<List<String>> readAgain;
    private final org.springframework.transaction.support.TransactionTemplate tx;

    TransferHandOff(JdbcTemplate jdbc, TransferQueue transfers, DiskCache cache, RecallMetrics metrics,
                    java.util.function.Consumer<List<String>> readAgain) {
        this.jdbc = jdbc;
        this.transfers = transfers;
        this.cache = cache;
        this.settlement = new RequestSettlement(jdbc, metrics);
        this.readAgain = readAgain;
        this.tx = Transactions.on(jdbc);
    }

    static final String CORRELATION_PREFIX = "stage:";

    /** The transfer row's correlation for one file of one request. */
    static String correlation(String requestId, long fileId) {
        return CORRELATION_PREFIX + requestId + ":" + fileId;
    }

    /** One round: queue newly verified files, then end files whose transfers ended. Returns whether any ended. */
    boolean run() {
        handOver();
        return collect(false);
    }

    /**
     * The once-a-minute round over everything waiting for its transfer: transfers ended, or files cancelled,
     * that a round missed (committed over {@link #LATE_COMMIT} after their time).
     */
    boolean collectAll() {
        return collect(true);
    }

    /** A transfer's end is its transaction's time: one committed later than this after it is left to the sweep. */
    static final Duration LATE_COMMIT = Duration.ofMinutes(1);
    /** Transfers that ended before this (the database's clock) were collected by an earlier round; null: none yet. */
    private Instant collectedTo;

    /**
     * Files of open requests with a destination that are on disk and not handed over yet. Found through the
     * partial index of on-disk files by request (V37): without it each round read every file of every open
     * request (0.14 s a round for one open request of 500,000 files, nearly all sent).
     */
    static final String READY = """
            SELECT x.request_id::text, x.file_id, f.name, f.size_bytes, cf.adler32, r.destination, cf.path,
                   EXISTS (SELECT 1 FROM transfer_job j
                            WHERE j.correlation = 'stage:' || x.request_id::text || ':' || x.file_id) AS queued,
                   r.overwrite
              FROM stage_request_file x JOIN stage_request r ON r.id = x.request_id JOIN file f ON f.id = x.file_id
              JOIN cache_file cf ON cf.file_id = x.file_id AND cf.state = 'verified'
             WHERE x.state = 'on_disk' AND r.destination IS NOT NULL AND r.state IN ('submitted', 'active')
             ORDER BY x.finished_at LIMIT ?""";

    private void handOver() {
        record Ready(String request, long file, String name, long size, String adler, String destination, String path,
                     boolean queued, boolean overwrite) {}
        List<Ready> ready = jdbc.query(READY, (rs, i) -> new Ready(rs.getString(1), rs.getLong(2), rs.getString(3),
                rs.getLong(4), rs.getString(5), rs.getString(6), rs.getString(7), rs.getBoolean(8), rs.getBoolean(9)), BATCH);
        for (Ready r : ready) {
            TransferQueue.Request job;
            try {
                job = new TransferQueue.Request(correlation(r.request(), r.file()), Path.of(r.path()).toUri(),
                        FileUrls.under(r.destination(), r.name()), r.size(), r.adler() == null ? null : Long.parseLong(r.adler().trim(), 16),
                        r.overwrite());
            } catch (RuntimeException e) {
                // this file cannot be sent; failing it keeps it from blocking every later hand-off
                log.warn("cannot hand {} of request {} to the movers: {}", r.name(), r.request(), e.toString());
                int failed = jdbc.update("""
                        UPDATE stage_request_file SET state = 'failed', error = ?, finished_at = now()
                         WHERE request_id = ?::uuid AND file_id = ? AND state = 'on_disk'""",
                        "cannot be handed to the movers: " + e.getMessage(), r.request(), r.file());
                if (failed > 0) cache.release(List.of(r.file()), r.request()); // only by the instance that failed it
                settlement.settleRequestsOf(r.file());
                continue;
            }
            // marked and queued in one transaction, the mark first: every instance's round reads the same ready
            // files, and the mark's row lock lets one of them queue the transfer (two transfers of one file to one
            // path ran at once, the later rewriting a copy the earlier had verified); a crash leaves neither
            tx.executeWithoutResult(t -> {
                int mine = jdbc.update("UPDATE stage_request_file SET state = 'transferring' "
                        + "WHERE request_id = ?::uuid AND file_id = ? AND state = 'on_disk'", r.request(), r.file());
                if (mine > 0 && !r.queued()) transfers.enqueue(List.of(job));
            });
        }
        if (!ready.isEmpty()) log.debug("{} staged files handed to the transfer queue", ready.size());
    }

    /**
     * Keeps the pins of files handed to the movers alive until their transfers end: a pin counts from the
     * file's landing, and a destination down for longer than the request's disk lifetime would otherwise let
     * the copy be evicted before it is sent. Returns how many pins were renewed.
     */
    int keepPinned() {
        // the requests' rows held while their files are read and their pins renewed (RequestPins)
        return ON_DEADLOCK.invoke(() -> tx.execute(t -> {
            RequestPins.lockOpen(jdbc, "SELECT request_id FROM stage_request_file WHERE state = 'transferring' AND NOT released");
            List<DiskCache.PinNeed> needs = jdbc.query("""
                    SELECT x.file_id, x.request_id::text, r.disk_lifetime_s FROM stage_request_file x
                      JOIN stage_request r ON r.id = x.request_id
                     WHERE x.state = 'transferring' AND NOT x.released AND r.state IN ('submitted', 'active')""",
                    (rs, i) -> new DiskCache.PinNeed(rs.getLong(1), rs.getString(2), RequestPins.lifetime(rs.getLong(3))));
            return cache.keepPinned(needs);
        }));
    }

    /** Pins are renewed and released in transactions of their own here: one that lost a deadlock runs again. */
    private static final org.springframework.core.retry.RetryTemplate ON_DEADLOCK =
            dev.stagehand.platform.DatabaseRetry.onDeadlock(Duration.ofMillis(10));

    private boolean collect(boolean all) {
        record Ended(String request, long file, String state, String error, long job, String errorClass) {}
        RowMapper<Ended> row = (rs, i) -> new Ended(rs.getString(1), rs.getLong(2), rs.getString(3), rs.getString(4), rs.getLong(5),
                rs.getString(6));
        Instant start = jdbc.queryForObject("SELECT now()", Timestamp.class).toInstant();
        Instant since = collectedTo;
        List<Ended> ended = new ArrayList<>();
        if (all || since == null) {
            ended.addAll(jdbc.query("""
                    SELECT x.request_id::text, x.file_id, j.state, j.last_error, j.id, j.last_error_class
                      FROM stage_request_file x
                      JOIN transfer_job j ON j.correlation = 'stage:' || x.request_id::text || ':' || x.file_id
                     WHERE x.state = 'transferring' AND j.state IN ('done', 'failed', 'cancelled')
                     LIMIT ?""", row, BATCH));
        } else {
            // only transfers ended since the last round: looking up every file waiting for its transfer took
            // 0.42 s a round with 100,000 waiting (a destination down), and a round runs after every staged file
            ended.addAll(jdbc.query("""
                    SELECT x.request_id::text, x.file_id, j.state, j.last_error, j.id, j.last_error_class
                      FROM transfer_job j
                      JOIN stage_request_file x ON x.request_id = CAST(split_part(j.correlation, ':', 2) AS uuid)
                                               AND x.file_id = CAST(split_part(j.correlation, ':', 3) AS bigint)
                     WHERE j.finished_at >= ? AND j.correlation LIKE 'stage:%'
                       AND j.state IN ('done', 'failed', 'cancelled') AND x.state = 'transferring'
                     LIMIT ?""", row, Timestamp.from(since), BATCH));
        }
        int endedTransfers = ended.size();
        // transfers of files cancelled since the last round (every one in the sweep), cancelled now
        ended.addAll(jdbc.query("""
                SELECT x.request_id::text, x.file_id, j.state, j.last_error, j.id, j.last_error_class
                  FROM stage_request_file x
                  JOIN transfer_job j ON j.correlation = 'stage:' || x.request_id::text || ':' || x.file_id
                 WHERE x.state = 'cancelled' AND x.finished_at >= ? AND j.state IN ('queued', 'active')
                 LIMIT ?""", row, Timestamp.from(all || since == null ? Instant.EPOCH : since), BATCH));
        // a full batch may leave more behind: the next round starts from the same time again
        if (endedTransfers < BATCH && ended.size() - endedTransfers < BATCH) collectedTo = start.minus(LATE_COMMIT);
        Set<Long> files = new HashSet<>();
        List<String> requeued = new ArrayList<>();
        for (Ended e : ended) {
            // the mover refused the copy, or a sum disagreed (the copy's bytes or the destination's: reading
            // the copy tells which)
            boolean suspect = "failed".equals(e.state()) && SOURCE_SUSPECT.contains(String.valueOf(e.errorClass()));
            String bad = suspect ? cache.brokenCopy(e.file(), true) : null;
            int before = bad == null ? 0 : jdbc.queryForObject("SELECT count(*) FROM transfer_job WHERE correlation = ?", Integer.class,
                    "stage-superseded:" + e.request() + ":" + e.file());
            // (a file no longer waiting for this transfer, cancelled meanwhile, ends below as it would have)
            if (bad != null && before < MAX_READS_AGAIN && readAgain(e.request(), e.file(), e.job(), bad)) {
                requeued.add(e.request());
                continue;
            }
            String also = bad == null ? "" : " (" + bad + "; its copies were found bad " + (before + 1) + " times)";
            // ended, and its pin released, holding its request's row as a release does: a renewal of the request's
            // pins (keepPinned) that read the file as waiting is not committed after the release
            ON_DEADLOCK.invoke(() -> tx.executeWithoutResult(t -> {
                jdbc.queryForList("SELECT id FROM stage_request WHERE id = ?::uuid FOR UPDATE", e.request());
                int mine = switch (e.state()) {
                    case "queued", "active" -> { // its file was cancelled (and its pin released by the cancel)
                        transfers.cancel(e.job());
                        yield 1;
                    }
                    case "done" -> jdbc.update("""
                            UPDATE stage_request_file SET state = 'done', error = NULL, finished_at = now()
                             WHERE request_id = ?::uuid AND file_id = ? AND state = 'transferring'""", e.request(), e.file());
                    default -> jdbc.update("""
                            UPDATE stage_request_file SET state = 'failed', error = ?, finished_at = now()
                             WHERE request_id = ?::uuid AND file_id = ? AND state = 'transferring'""",
                            "transfer " + e.state() + (e.error() == null ? "" : ": " + e.error()) + also, e.request(), e.file());
                };
                // delivered (or given up): the copy need not stay for this request. Only by the instance that ended the
                // file: another that read the same transfer may have read the file again meanwhile (its copy found bad),
                // and the pin is kept for that read
                if (mine > 0) cache.release(List.of(e.file()), e.request());
            }));
            files.add(e.file());
        }
        for (long f : new ArrayList<>(files)) settlement.settleRequestsOf(f);
        if (!requeued.isEmpty()) readAgain.accept(requeued);
        return !ended.isEmpty();
    }

    /**
     * Failure classes of a transfer that may be the cached copy's fault: the mover refused it, found its bytes
     * off the catalog's sum (failed at once), or a sum disagreed at the destination (the copy is read to tell).
     */
    static final Set<String> SOURCE_SUSPECT = Set.of(TransferFailure.Kind.BAD_REQUEST.name(),
            TransferFailure.Kind.SOURCE_CHECKSUM_MISMATCH.name(), TransferFailure.Kind.CHECKSUM_MISMATCH.name());

    /** Times a file is read again for one request after its copies were found bad, before its transfer's failure stands. */
    static final int MAX_READS_AGAIN = 2;

    /**
     * A file whose transfer failed because its cached copy is bad is read from tape again, not failed: the copy
     * is discarded, the file queued again (its pin kept), and the transfer row's correlation retired, so the file's
     * next hand-off queues a transfer of its own rather than taking the failed one for it. Like dCache restaging
     * a broken pool replica; the request used to fail although its file was safe on tape.
     */
    private boolean readAgain(String request, long fileId, long job, String why) {
        cache.discardCopy(fileId, "a transfer found " + why);
        jdbc.update("UPDATE transfer_job SET correlation = 'stage-superseded:' || substr(correlation, 7) WHERE id = ? AND correlation LIKE 'stage:%'",
                job);
        int n = jdbc.update("""
                UPDATE stage_request_file SET state = 'queued', error = NULL, finished_at = NULL
                 WHERE request_id = ?::uuid AND file_id = ? AND state = 'transferring'""", request, fileId);
        if (n > 0) log.warn("file {} of request {}: {}; read from tape again", fileId, request, why);
        return n > 0;
    }
}
