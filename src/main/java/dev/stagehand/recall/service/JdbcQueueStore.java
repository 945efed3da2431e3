package dev.stagehand.recall.service;

import dev.stagehand.platform.Transactions;
import dev.stagehand.platform.DatabaseRetry;
import dev.stagehand.recall.scheduler.FileWork;
import dev.stagehand.recall.scheduler.QueueStore;
import dev.stagehand.recall.scheduler.RequestWork;
import java.nio.file.Path;
import java.sql.Timestamp;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import dev.stagehand.recall.request.RecallMetrics;
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
    private final Runnable onDisk;
    private final org.springframework.transaction.support.TransactionTemplate tx;

    /** @param landed called with files now on disk (to pin them for their requests' disk lifetimes) */
    public JdbcQueueStore(JdbcTemplate jdbc, String instance, Duration lease, DoubleFunction<Instant> toInstant,
                          java.util.function.Consumer<List<Long>> landed) {
        this(jdbc, instance, lease, toInstant, landed, RecallMetrics.NONE);
    }

    /** @param metrics records the latency of each request this instance ends */
    public JdbcQueueStore(JdbcTemplate jdbc, String instance, Duration lease, DoubleFunction<Instant> toInstant,
                          java.util.function.Consumer<List<Long>> landed, RecallMetrics metrics) {
        this(jdbc, instance, lease, toInstant, landed, metrics, () -> {});
    }

    /** @param onDisk told (a hint, after the commit) whenever files were recorded on disk: their hand-off may start */
    public JdbcQueueStore(JdbcTemplate jdbc, String instance, Duration lease, DoubleFunction<Instant> toInstant,
                          java.util.function.Consumer<List<Long>> landed, RecallMetrics metrics, Runnable onDisk) {
        this.onDisk = onDisk;
        this.landed = landed;
        this.jdbc = jdbc;
        this.instance = instance;
        this.lease = lease;
        this.toInstant = toInstant;
        this.settlement = new RequestSettlement(jdbc, metrics);
        this.tx = Transactions.on(jdbc);
    }

    // Engine callbacks go through DatabaseRetry: an outcome that could not be written would leave the
    // engine and the rows disagreeing, so they wait for the database to come back instead.

    @Override
    public List<FileWork> claim(String volume, List<FileWork> files) {
        if (files.isEmpty()) return List.of();
        return DatabaseRetry.call("claim on " + volume, () -> claim0(volume, files));
    }

    private List<FileWork> claim0(String volume, List<FileWork> files) {
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
    public List<Taken> takenElsewhere(List<FileWork> files) {
        if (files.isEmpty()) return List.of();
        Long[] ids = files.stream().map(FileWork::id).toArray(Long[]::new);
        try {
            return jdbc.query("""
                    SELECT file_id, state, error FROM recall_file
                     WHERE file_id = ANY(?) AND (state IN ('on_disk', 'failed') OR (state = 'staging' AND claimed_by <> ?))""",
                    (rs, i) -> new Taken(rs.getLong(1), switch (rs.getString(2)) {
                        case "staging" -> Elsewhere.CLAIMED;
                        case "on_disk" -> Elsewhere.ON_DISK;
                        default -> Elsewhere.FAILED;
                    }, rs.getString(3)), ids, instance);
        } catch (RuntimeException e) {
            // a look only: the claim after the mount still keeps a file from being read twice
            if (!DatabaseRetry.noteFailure("look for files taken elsewhere", e)) throw e;
            return List.of();
        }
    }

    @Override
    public void staged(FileWork file, String volume, long adler32, Path path) {
        // one transaction: a kill between the file's row and its requests' rows would leave a request waiting
        // for a file that is already on disk, and nothing would hand it on
        DatabaseRetry.run("staged " + file.name(), () -> tx.executeWithoutResult(t -> staged0(file, adler32, path)));
        onDisk.run();
    }

    private void staged0(FileWork file, long adler32, Path path) {
        settlement.lockOpenRequestsOf(file.id());
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
        DatabaseRetry.run("release " + file.name(), () -> tx.executeWithoutResult(t -> released0(file)));
    }

    private void released0(FileWork file) {
        // only our own claim: after our lease lapsed another instance may hold the file now, and its requests'
        // rows are 'staging' for that instance's read
        int mine = jdbc.update("""
                UPDATE recall_file SET state = 'queued', claimed_by = NULL, lease_until = NULL, error = ?,
                       updated_at = now() WHERE file_id = ? AND state = 'staging' AND claimed_by = ?""",
                file.error(), file.id(), instance);
        if (mine > 0) jdbc.update("UPDATE stage_request_file SET state = 'queued' WHERE file_id = ? AND state = 'staging'", file.id());
    }

    /** Disabled with the library's reason, for operators to see and restore (the intake reads available volumes only). */
    @Override
    public void volumeUnavailable(String volume, String reason) {
        jdbc.update("""
                UPDATE volume SET state = 'disabled', state_reason = ?, updated_at = now()
                 WHERE label = ? AND state = 'available'""", "recall: " + reason, volume);
    }

    @Override
    public void failed(FileWork file) {
        // one transaction: a kill between the two rows left the request's file 'staging' for ever
        DatabaseRetry.run("fail " + file.name(), () -> tx.executeWithoutResult(t -> failed0(file)));
    }

    private void failed0(FileWork file) {
        String reason = file.error() == null ? "recall failed" : file.error();
        settlement.lockOpenRequestsOf(file.id());
        // not a file another instance is reading now (it claimed the file after our lease lapsed), nor one it has
        // read since: failing that failed the requests that asked for it meanwhile, its copy on disk
        int mine = jdbc.update("""
                UPDATE recall_file SET state = 'failed', claimed_by = NULL, lease_until = NULL, error = ?,
                       updated_at = now() WHERE file_id = ? AND state <> 'on_disk' AND (state <> 'staging' OR claimed_by = ?)""",
                reason, file.id(), instance);
        if (mine == 0) return;
        jdbc.update("""
                UPDATE stage_request_file SET state = 'failed', error = ?, finished_at = now()
                 WHERE file_id = ? AND state IN ('queued', 'staging')""", reason, file.id());
        completeRequests(file.id());
    }

    /** Ends open requests with no open file left whose settle was lost (a crash between statements); how many. */
    int settleLost() {
        return settlement.settleAll();
    }

    /** Ends the requests holding this file once none of their files is open (one rule: RequestSettlement). */
    void completeRequests(long fileId) {
        settlement.settleRequestsOf(fileId);
    }

    @Override
    public void requestFinished(RequestWork request) {
        // the file updates above already ended the request's row
    }

    /** Why a request still being taken in has no ETA (stage_request.eta_unknown, V69). */
    public static final String ETA_WHILE_TAKEN_IN = "not yet known: the request is still being taken into the scheduler's queue";

    @Override
    public void etas(Collection<RequestWork> requests) {
        List<Object[]> rows = new ArrayList<>();
        for (RequestWork r : requests) {
            if (r.intakePending()) { // not known yet, and said so: an estimate written earlier (another engine's) goes
                rows.add(new Object[] {null, ETA_WHILE_TAKEN_IN, UUID.fromString(r.id())});
            } else if (!Double.isNaN(r.eta())) {
                rows.add(new Object[] {Timestamp.from(toInstant.apply(r.eta())), null, UUID.fromString(r.id())});
            }
        }
        if (rows.isEmpty()) return;
        try {
            jdbc.batchUpdate("UPDATE stage_request SET eta_at = ?, eta_unknown = ? WHERE id = ? AND state IN ('submitted', 'active')", rows,
                    new int[] {java.sql.Types.TIMESTAMP, java.sql.Types.VARCHAR, java.sql.Types.OTHER});
        } catch (RuntimeException e) {
            // an estimate only: the next refresh writes it again
            if (!DatabaseRetry.noteFailure("ETA update", e)) throw e;
        }
    }

    @Override
    public boolean claimVolume(String volume) {
        return DatabaseRetry.call("claim volume " + volume, () -> jdbc.update("""
                INSERT INTO volume_lease (label, instance, lease_until) VALUES (?, ?, now() + make_interval(secs => ?))
                ON CONFLICT (label) DO UPDATE SET instance = excluded.instance, lease_until = excluded.lease_until,
                       acquired_at = CASE WHEN volume_lease.instance = excluded.instance THEN volume_lease.acquired_at ELSE now() END
                 WHERE volume_lease.instance = excluded.instance OR volume_lease.lease_until < now()""",
                volume, instance, (double) lease.toSeconds()) == 1);
    }

    @Override
    public void releaseVolume(String volume) {
        DatabaseRetry.run("release volume " + volume,
                () -> jdbc.update("DELETE FROM volume_lease WHERE label = ? AND instance = ?", volume, instance));
    }

    /**
     * Extends this instance's leases on the files it is reading now ({@code live}), and on its volumes. A
     * claim of ours that nothing reads any more (its outcome could not be written) is not renewed: it lapses
     * and the file is queued again.
     */
    public void renewLeases(List<Long> live) {
        // only leases with less than half their time left (or lapsed): every file of every read list rewritten at
        // every poll (2 s) was up to 20,000 row versions per drive for a 10-minute lease
        jdbc.update("""
                UPDATE recall_file SET lease_until = now() + make_interval(secs => ?)
                 WHERE claimed_by = ? AND state = 'staging' AND file_id = ANY(?)
                   AND lease_until < now() + make_interval(secs => ?)""", (double) lease.toSeconds(), instance,
                live.toArray(Long[]::new), lease.toSeconds() / 2.0);
        jdbc.update("UPDATE volume_lease SET lease_until = now() + make_interval(secs => ?) WHERE instance = ?",
                (double) lease.toSeconds(), instance);
    }

    /**
     * Claims whose lease lapsed (their instance died, or nothing here reads them any more) go back to the
     * queue; returns their file ids. Never the files this instance is reading ({@code live}).
     */
    public List<Long> expireLeases(List<Long> live) {
        List<Long> ids = jdbc.queryForList("""
                UPDATE recall_file SET state = 'queued', claimed_by = NULL, lease_until = NULL,
                       error = 'lease of ' || claimed_by || ' expired', updated_at = now()
                 WHERE state = 'staging' AND lease_until < now() AND NOT (claimed_by = ? AND file_id = ANY(?))
                RETURNING file_id""", Long.class, instance, live.toArray(Long[]::new));
        if (!ids.isEmpty()) {
            jdbc.update("UPDATE stage_request_file SET state = 'queued' WHERE file_id = ANY(?) AND state = 'staging'",
                    (Object) ids.toArray(Long[]::new));
        }
        return ids;
    }

    /**
     * Claims of this instance left from before a restart: nothing is reading them now. Its volume leases go
     * too; the engine takes those of the volumes still in its drives again when it starts.
     */
    public void releaseOwnStaleClaims() {
        jdbc.update("DELETE FROM volume_lease WHERE instance = ?", instance);
        jdbc.update("""
                UPDATE stage_request_file SET state = 'queued'
                 WHERE state = 'staging' AND file_id IN (SELECT file_id FROM recall_file
                                                         WHERE state = 'staging' AND claimed_by = ?)""", instance);
        jdbc.update("""
                UPDATE recall_file SET state = 'queued', claimed_by = NULL, lease_until = NULL, updated_at = now()
                 WHERE state = 'staging' AND claimed_by = ?""", instance);
    }
}
