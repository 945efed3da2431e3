package dev.stagehand.recall.service;

import dev.stagehand.recall.scheduler.FileWork;
import dev.stagehand.recall.scheduler.QueueStore;
import dev.stagehand.recall.scheduler.RequestWork;
import java.nio.file.Path;
import java.sql.Timestamp;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import dev.stagehand.recall.request.RequestSettlement;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.function.DoubleFunction;
import java.time.Instant;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The production queue store on PostgreSQL. A file is claimed through its {@code recall_file} row with
 * {@code SELECT ... FOR UPDATE SKIP LOCKED} inside one statement, so two instances never claim the same
 * file; claims carry a lease that the owner renews and anyone may expire. Request rows follow the file rows.
 */
public final class JdbcQueueStore implements QueueStore {

    private final JdbcTemplate jdbc;
    private final String instance;
    private final Duration lease;
    private final DoubleFunction<Instant> toInstant;
    private final RequestSettlement settlement;
    private final java.util.function.Consumer<List<Long>> landed;

    /** @param landed called with files now on disk (to pin them for their requests' disk lifetimes) */
    public JdbcQueueStore(JdbcTemplate jdbc, String instance, Duration lease, DoubleFunction<Instant> toInstant,
                          java.util.function.Consumer<List<Long>> landed) {
        this.landed = landed;
        this.jdbc = jdbc;
        this.instance = instance;
        this.lease = lease;
        this.toInstant = toInstant;
        this.settlement = new RequestSettlement(jdbc);
    }

    @Override
    public List<FileWork> claim(String volume, List<FileWork> files) {
        if (files.isEmpty()) return List.of();
        Long[] ids = files.stream().map(FileWork::id).toArray(Long[]::new);
        List<Long> got = jdbc.queryForList("""
                WITH c AS (SELECT file_id FROM recall_file WHERE file_id = ANY(?) AND state = 'queued'
                           FOR UPDATE SKIP LOCKED)
                UPDATE recall_file r SET state = 'staging', volume = ?, claimed_by = ?,
                       lease_until = now() + make_interval(secs => ?), attempts = attempts + 1, error = NULL,
                       updated_at = now()
                  FROM c WHERE r.file_id = c.file_id
                RETURNING r.file_id""", Long.class, ids, volume, instance, (double) lease.toSeconds());
        if (got.isEmpty()) return List.of();
        Long[] claimed = got.toArray(Long[]::new);
        jdbc.update("""
                UPDATE stage_request_file SET state = 'staging', started_at = coalesce(started_at, now())
                 WHERE file_id = ANY(?) AND state = 'queued'""", (Object) claimed);
        jdbc.update("""
                UPDATE stage_request SET state = 'active', started_at = coalesce(started_at, now())
                 WHERE state = 'submitted'
                   AND id IN (SELECT request_id FROM stage_request_file WHERE file_id = ANY(?))""", (Object) claimed);
        Set<Long> mine = new HashSet<>(got);
        List<FileWork> out = new ArrayList<>(got.size());
        for (FileWork f : files) if (mine.contains(f.id())) out.add(f); // keep the read order
        return out;
    }

    @Override
    public void staged(FileWork file, String volume, long adler32, Path path) {
        jdbc.update("""
                UPDATE recall_file SET state = 'on_disk', adler32 = ?, path = ?, lease_until = NULL, error = NULL,
                       updated_at = now() WHERE file_id = ?""",
                String.format("%08x", adler32), path == null ? null : path.toString(), file.id());
        jdbc.update("""
                UPDATE stage_request_file SET state = 'on_disk', error = NULL, finished_at = now()
                 WHERE file_id = ? AND state IN ('queued', 'staging')""", file.id());
        landed.accept(List.of(file.id())); // the disk lifetime counts from now
        completeRequests(file.id());
    }

    @Override
    public void released(FileWork file) {
        jdbc.update("""
                UPDATE recall_file SET state = 'queued', claimed_by = NULL, lease_until = NULL, error = ?,
                       updated_at = now() WHERE file_id = ? AND state = 'staging'""", file.error(), file.id());
        jdbc.update("UPDATE stage_request_file SET state = 'queued' WHERE file_id = ? AND state = 'staging'", file.id());
    }

    @Override
    public void failed(FileWork file) {
        String reason = file.error() == null ? "recall failed" : file.error();
        jdbc.update("""
                UPDATE recall_file SET state = 'failed', claimed_by = NULL, lease_until = NULL, error = ?,
                       updated_at = now() WHERE file_id = ?""", reason, file.id());
        jdbc.update("""
                UPDATE stage_request_file SET state = 'failed', error = ?, finished_at = now()
                 WHERE file_id = ? AND state IN ('queued', 'staging')""", reason, file.id());
        completeRequests(file.id());
    }

    /** Ends the requests holding this file once none of their files is open (one rule: RequestSettlement). */
    void completeRequests(long fileId) {
        settlement.settleRequestsOf(fileId);
    }

    @Override
    public void requestFinished(RequestWork request) {
        // the file updates above already ended the request's row
    }

    @Override
    public void etas(Collection<RequestWork> requests) {
        List<Object[]> rows = new ArrayList<>();
        for (RequestWork r : requests) {
            if (Double.isNaN(r.eta())) continue;
            rows.add(new Object[] {Timestamp.from(toInstant.apply(r.eta())), UUID.fromString(r.id())});
        }
        if (!rows.isEmpty()) jdbc.batchUpdate("UPDATE stage_request SET eta_at = ? WHERE id = ? AND state IN ('submitted', 'active')", rows);
    }

    /** Extends this instance's leases (it is alive and still reading). */
    public void renewLeases() {
        jdbc.update("""
                UPDATE recall_file SET lease_until = now() + make_interval(secs => ?)
                 WHERE claimed_by = ? AND state = 'staging'""", (double) lease.toSeconds(), instance);
    }

    /** Claims whose lease lapsed (their instance died) go back to the queue; returns their file ids. */
    public List<Long> expireLeases() {
        List<Long> ids = jdbc.queryForList("""
                UPDATE recall_file SET state = 'queued', claimed_by = NULL, lease_until = NULL,
                       error = 'lease of ' || claimed_by || ' expired', updated_at = now()
                 WHERE state = 'staging' AND lease_until < now() RETURNING file_id""", Long.class);
        if (!ids.isEmpty()) {
            jdbc.update("UPDATE stage_request_file SET state = 'queued' WHERE file_id = ANY(?) AND state = 'staging'",
                    (Object) ids.toArray(Long[]::new));
        }
        return ids;
    }

    /** Claims of this instance left from before a restart: nothing is reading them now. */
    public void releaseOwnStaleClaims() {
        jdbc.update("""
                UPDATE stage_request_file SET state = 'queued'
                 WHERE state = 'staging' AND file_id IN (SELECT file_id FROM recall_file
                                                         WHERE state = 'staging' AND claimed_by = ?)""", instance);
        jdbc.update("""
                UPDATE recall_file SET state = 'queued', claimed_by = NULL, lease_until = NULL, updated_at = now()
                 WHERE state = 'staging' AND claimed_by = ?""", instance);
    }
}
