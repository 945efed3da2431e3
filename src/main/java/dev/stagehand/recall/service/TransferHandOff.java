package dev.stagehand.recall.service;

import dev.stagehand.cache.DiskCache;
import dev.stagehand.recall.request.RecallMetrics;
import dev.stagehand.recall.request.RequestSettlement;
import dev.stagehand.transfer.FileUrls;
import dev.stagehand.transfer.TransferQueue;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.core.JdbcTemplate;

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

    TransferHandOff(JdbcTemplate jdbc, TransferQueue transfers, DiskCache cache, RecallMetrics metrics) {
        this.jdbc = jdbc;
        this.transfers = transfers;
        this.cache = cache;
        this.settlement = new RequestSettlement(jdbc, metrics);
    }

    static final String CORRELATION_PREFIX = "stage:";

    /** The transfer row's correlation for one file of one request. */
    static String correlation(String requestId, long fileId) {
        return CORRELATION_PREFIX + requestId + ":" + fileId;
    }

    /** One round: queue newly verified files, then end files whose transfers ended. Returns whether any ended. */
    boolean run() {
        handOver();
        return collect();
    }

    private void handOver() {
        record Ready(String request, long file, String name, long size, String adler, String destination, String path,
                     boolean queued) {}
        List<Ready> ready = jdbc.query("""
                SELECT x.request_id::text, x.file_id, f.name, f.size_bytes, cf.adler32, r.destination, cf.path,
                       EXISTS (SELECT 1 FROM transfer_job j
                                WHERE j.correlation = 'stage:' || x.request_id::text || ':' || x.file_id) AS queued
                  FROM stage_request_file x JOIN stage_request r ON r.id = x.request_id JOIN file f ON f.id = x.file_id
                  JOIN cache_file cf ON cf.file_id = x.file_id AND cf.state = 'verified'
                 WHERE x.state = 'on_disk' AND r.destination IS NOT NULL AND r.state IN ('submitted', 'active')
                 ORDER BY x.finished_at LIMIT ?""", (rs, i) -> new Ready(rs.getString(1), rs.getLong(2), rs.getString(3),
                rs.getLong(4), rs.getString(5), rs.getString(6), rs.getString(7), rs.getBoolean(8)), BATCH);
        for (Ready r : ready) {
            TransferQueue.Request job;
            try {
                job = new TransferQueue.Request(correlation(r.request(), r.file()), Path.of(r.path()).toUri(),
                        FileUrls.under(r.destination(), r.name()), r.size(), r.adler() == null ? null : Long.parseLong(r.adler().trim(), 16));
            } catch (RuntimeException e) {
                // this file cannot be sent; failing it keeps it from blocking every later hand-off
                log.warn("cannot hand {} of request {} to the movers: {}", r.name(), r.request(), e.toString());
                jdbc.update("""
                        UPDATE stage_request_file SET state = 'failed', error = ?, finished_at = now()
                         WHERE request_id = ?::uuid AND file_id = ? AND state = 'on_disk'""",
                        "cannot be handed to the movers: " + e.getMessage(), r.request(), r.file());
                cache.release(List.of(r.file()), r.request());
                settlement.settleRequestsOf(r.file());
                continue;
            }
            // queued first, then marked: after a crash in between, the next round only marks it (never two jobs)
            if (!r.queued()) transfers.enqueue(List.of(job));
            jdbc.update("UPDATE stage_request_file SET state = 'transferring' WHERE request_id = ?::uuid AND file_id = ? AND state = 'on_disk'",
                    r.request(), r.file());
        }
        if (!ready.isEmpty()) log.debug("{} staged files handed to the transfer queue", ready.size());
    }

    /**
     * Keeps the pins of files handed to the movers alive until their transfers end: a pin counts from the
     * file's landing, and a destination down for longer than the request's disk lifetime would otherwise let
     * the copy be evicted before it is sent. Returns how many pins were renewed.
     */
    int keepPinned() {
        List<DiskCache.PinNeed> needs = jdbc.query("""
                SELECT x.file_id, x.request_id::text, r.disk_lifetime_s FROM stage_request_file x
                  JOIN stage_request r ON r.id = x.request_id
                 WHERE x.state = 'transferring' AND NOT x.released AND r.state IN ('submitted', 'active')""",
                (rs, i) -> new DiskCache.PinNeed(rs.getLong(1), rs.getString(2),
                        java.time.Duration.ofSeconds(rs.getLong(3) > 0 ? rs.getLong(3) : 86_400)));
        return cache.keepPinned(needs);
    }

    private boolean collect() {
        record Ended(String request, long file, String state, String error, long job) {}
        List<Ended> ended = new ArrayList<>(jdbc.query("""
                SELECT x.request_id::text, x.file_id, j.state, j.last_error, j.id
                  FROM stage_request_file x
                  JOIN transfer_job j ON j.correlation = 'stage:' || x.request_id::text || ':' || x.file_id
                 WHERE x.state = 'transferring' AND j.state IN ('done', 'failed', 'cancelled')
                 LIMIT ?""", (rs, i) -> new Ended(rs.getString(1), rs.getLong(2), rs.getString(3), rs.getString(4), rs.getLong(5)), BATCH));
        // two statements, not one with OR: each side then starts from its partial index (open request files;
        // unfinished transfers) instead of scanning the ended rows that pile up in both tables
        ended.addAll(jdbc.query("""
                SELECT x.request_id::text, x.file_id, j.state, j.last_error, j.id
                  FROM transfer_job j
                  JOIN stage_request_file x ON j.correlation = 'stage:' || x.request_id::text || ':' || x.file_id
                 WHERE j.state IN ('queued', 'active') AND j.correlation LIKE 'stage:%' AND x.state = 'cancelled'
                 LIMIT ?""", (rs, i) -> new Ended(rs.getString(1), rs.getLong(2), rs.getString(3), rs.getString(4), rs.getLong(5)), BATCH));
        Set<Long> files = new HashSet<>();
        for (Ended e : ended) {
            switch (e.state()) {
                case "queued", "active" -> transfers.cancel(e.job()); // its file was cancelled
                case "done" -> jdbc.update("""
                        UPDATE stage_request_file SET state = 'done', error = NULL, finished_at = now()
                         WHERE request_id = ?::uuid AND file_id = ? AND state = 'transferring'""", e.request(), e.file());
                default -> jdbc.update("""
                        UPDATE stage_request_file SET state = 'failed', error = ?, finished_at = now()
                         WHERE request_id = ?::uuid AND file_id = ? AND state = 'transferring'""",
                        "transfer " + e.state() + (e.error() == null ? "" : ": " + e.error()), e.request(), e.file());
            }
            // delivered (or given up): the copy need not stay for this request
            cache.release(List.of(e.file()), e.request());
            files.add(e.file());
        }
        for (long f : new ArrayList<>(files)) settlement.settleRequestsOf(f);
        return !ended.isEmpty();
    }
}
