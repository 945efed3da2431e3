package dev.stagehand.replication;

import dev.stagehand.recall.StageRequestRejected;
import dev.stagehand.recall.StageRequests;
import dev.stagehand.recall.StageRequests.NewStageRequest;
import dev.stagehand.replication.ReplicaPlanner.Decision;
import dev.stagehand.replication.ReplicaPlanner.FileView;
import dev.stagehand.replication.ReplicaPlanner.SiteRef;
import dev.stagehand.transfer.FileUrls;
import dev.stagehand.transfer.Mover;
import dev.stagehand.transfer.TransferFailure;
import dev.stagehand.transfer.TransferQueue;
import java.net.URI;
import java.nio.file.Path;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.context.SmartLifecycle;
import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;
import org.springframework.transaction.TransactionException;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Makes the replicas the rules ask for. One pass (every {@code pass-interval}, on one instance at a time
 * thanks to a lease row):
 * <ol>
 *   <li>expires rules past their lifetime, and cancels the transfers whose replica went (its file deleted);</li>
 *   <li>applies each continuous rule: chooses its N sites among those matching (sites already holding most
 *       of the dataset first, then by name; fixed once chosen) and adds a wanted replica for every file
 *       of the dataset at each (cron rules do this only when their schedule runs them);</li>
 *   <li>follows replicas under way through their transfer_job rows (done: verified when the destination's
 *       Adler32 equals the catalog's) and recall requests (staging &rarr; transferring), and counts
 *       failures: retried with backoff, failed for good after {@code max-attempts};</li>
 *   <li>dispatches pending replicas: one transfer_job each (local copy or third-party from a site), or one
 *       recall request per (site, experiment) for copies that must come from tape; the source is chosen by
 *       {@link ReplicaPlanner} (bottleneck links crossed once, then fan-out);</li>
 *   <li>recomputes the per-site completeness of every dataset a rule covers;</li>
 *   <li>deletes at their sites the copies no active rule has wanted for {@code deletion.grace}.</li>
 * </ol>
 * A replica is a single row per (file, site) whatever the number of rules wanting it, so no transfer is
 * made twice and none for a replica already done. Everything is in rows: a restart carries on.
 */
@Component
public class ReplicationEngine implements SmartLifecycle {

    private static final Logger log = LoggerFactory.getLogger(ReplicationEngine.class);

    /**
     * What one pass did: rules applied (whole, or for their dataset's new files), replicas finished and failed,
     * transfers queued, files sent to recall, replicas waiting. {@code led} is false when another instance held
     * the lease (nothing was done).
     */
    public record PassReport(boolean led, int rulesApplied, int finished, int failed, int dispatched, int staged, int waiting) {}

    private final JdbcTemplate jdbc;
    private final TransactionTemplate tx;
    private final TransferQueue transfers;
    private final StageRequests stageRequests;
    private final Mover mover;
    private final ObjectProvider<LocalSource> localSource;
    private final ReplicationProperties props;
    private final String owner = "replication-" + ProcessHandle.current().pid() + "-" + Long.toHexString(System.nanoTime());
    private final ReentrantLock passLock = new ReentrantLock();
    /** Remote directories known to exist (site id + path): created once, not before every file. */
    private final Set<String> madeDirectories = ConcurrentHashMap.newKeySet();
    private volatile boolean running;
    private Thread thread;
    /** Null in an engine built by hand (tests): its expired rules' schedules go at their next firing. */
    private ObjectProvider<ReplicationSchedules> schedules;

    public ReplicationEngine(JdbcTemplate jdbc, TransactionTemplate tx, TransferQueue transfers, StageRequests stageRequests,
                             Mover mover, ObjectProvider<LocalSource> localSource, ReplicationProperties props) {
        this.jdbc = jdbc;
        this.tx = tx;
        this.transfers = transfers;
        this.stageRequests = stageRequests;
        this.mover = mover;
        this.localSource = localSource;
        this.props = props;
    }

    /** The rules' Quartz schedules, which an expired rule leaves. */
    @org.springframework.beans.factory.annotation.Autowired
    void setSchedules(ObjectProvider<ReplicationSchedules> schedules) {
        this.schedules = schedules;
    }

    @Override
    public void start() {
        if (!props.enabled()) return;
        running = true;
        thread = Thread.ofVirtual().name("replication-engine").start(this::loop);
    }

    @Override
    public void stop() {
        running = false;
        if (thread != null) thread.interrupt();
        try {
            // hand the lease over at once rather than after it runs out
            jdbc.update("UPDATE replication_engine_lease SET until = '-infinity' WHERE name = 'engine' AND owner = ?", owner);
        } catch (RuntimeException e) {
            log.debug("replication lease not released: {}", e.toString());
        }
    }

    @Override
    public boolean isRunning() {
        return running;
    }

    private void loop() {
        while (running) {
            try {
                pass();
            } catch (RuntimeException e) {
                log.warn("replication pass: {}", e.toString());
            }
            try {
                Thread.sleep(props.passInterval().toMillis());
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    /** The lease that makes one instance at a time run passes (taken over when its holder stops renewing). */
    private boolean lead() {
        long leaseMillis = Math.max(30_000, props.passInterval().toMillis() * 10);
        return jdbc.update("""
                UPDATE replication_engine_lease SET owner = ?, until = now() + make_interval(secs => ?)
                 WHERE name = 'engine' AND (owner = ? OR until < now())""", owner, leaseMillis / 1000.0, owner) == 1;
    }

    /**
     * Moves the engine's lease to this instance now (an operator's or a test's choice; otherwise the lease
     * moves only when its holder stops renewing it). The background passes of this instance then lead.
     */
    public void takeLead() {
        jdbc.update("UPDATE replication_engine_lease SET owner = ?, until = now() + interval '30 seconds' WHERE name = 'engine'", owner);
    }

    /** One pass (see the class comment); public so tests and benchmarks can drive the engine step by step. */
    public PassReport pass() {
        passLock.lock();
        try {
            if (!lead()) return new PassReport(false, 0, 0, 0, 0, 0, 0);
            expire();
            cancelOrphans();
            int applied = applyContinuousRules();
            int[] tracked = track();
            // the lease is renewed between steps (a pass can outlast it): one that moved to another instance
            // meanwhile ends this pass; the replica claims in send and stage keep any overlap from sending twice
            int[] sent = lead() ? dispatch() : new int[3];
            if (lead()) recomputeStatusInTurn();
            if (lead()) reap(); // after: its deletions at the sites take time, and what they change is counted next pass
            if (lead()) pruneHistoryInTurn();
            return new PassReport(true, applied, tracked[0], tracked[1], sent[0], sent[1], sent[2]);
        } finally {
            passLock.unlock();
        }
    }

    /**
     * Expires the rules past their lifetime. A scheduled one loses its schedule (an expired rule never becomes
     * active again): it fired every night to record "rule expired", and was listed with its next firing. The
     * copies on their way that no active rule wants any more are stopped, as when a rule is deleted.
     */
    private void expire() {
        record Expired(long id, boolean scheduled) {}
        List<Expired> expired = tx.execute(status -> {
            List<Expired> rules = jdbc.query("""
                    UPDATE replication_rule SET state = 'expired' WHERE state = 'active' AND expires_at < now()
                    RETURNING id, schedule IS NOT NULL""", (rs, i) -> new Expired(rs.getLong(1), rs.getBoolean(2)));
            for (Expired e : rules) ReplicationRules.stop(jdbc, transfers, stageRequests, ReplicationRules.inFlightOnlyFor(jdbc, e.id()));
            return rules;
        });
        ReplicationSchedules s = schedules == null ? null : schedules.getIfAvailable();
        for (Expired x : expired) {
            if (!x.scheduled() || s == null) continue;
            long rule = x.id();
            try {
                s.unschedule(rule);
            } catch (RuntimeException e) { // its next firing removes it (runScheduled)
                log.warn("schedule of expired rule {} not removed: {}", rule, e.toString());
            }
        }
    }

    /**
     * Cancels the transfers whose replica went while they were queued or running (a file deleted from the
     * catalog takes its replicas with it; a trigger records their transfers): nothing follows them, and they
     * went on writing to the site a file the catalog no longer has. One ended meanwhile is left as it is.
     */
    private void cancelOrphans() {
        tx.executeWithoutResult(status -> {
            for (long job : jdbc.queryForList("DELETE FROM replication_orphan_transfer RETURNING job_id", Long.class)) {
                if (transfers.cancel(job)) log.info("transfer {} cancelled: the replica it made is gone", job);
            }
        });
    }

    /** A full application of every continuous rule now and then: a safety net, as for completeness. */
    static final Duration FULL_APPLY_EVERY = Duration.ofHours(1);
    private volatile long lastFullApply = Long.MIN_VALUE;
    /** The sites (names, attributes) the last pass chose from; null: none yet. */
    private volatile Map<Long, SiteRef> sitesLastPass;

    /**
     * Applies the continuous rules that may want something new: those never applied wholly (and every rule
     * every {@link #FULL_APPLY_EVERY}); those whose dataset got files since the last pass (marked per file by a
     * trigger on file) for those files; those with sites still to choose for a new site, and only when the
     * sites changed since the last pass. Re-inserting every file of every rule's dataset at each pass took
     * seconds at 10^6 files. One transaction: the marks taken are not lost if it fails. Returns how many rules
     * were applied, whole or for their dataset's new files.
     */
    private int applyContinuousRules() {
        long now = System.nanoTime();
        boolean full = lastFullApply == Long.MIN_VALUE || now - lastFullApply >= FULL_APPLY_EVERY.toNanos();
        Map<Long, SiteRef> sites = sites();
        boolean sitesChanged = !sites.equals(sitesLastPass);
        Integer applied = tx.execute(status -> {
            Map<Long, List<Long>> added = new HashMap<>();
            jdbc.query("DELETE FROM replication_file_added RETURNING dataset_id, file_id", rs -> {
                added.computeIfAbsent(rs.getLong(1), k -> new ArrayList<>()).add(rs.getLong(2));
            });
            record Due(long rule, long dataset, boolean whole) {}
            List<Due> due = jdbc.query("""
                    SELECT r.id, r.dataset_id, ? OR r.applied_at IS NULL FROM replication_rule r
                     WHERE r.state = 'active' AND r.schedule IS NULL
                       AND (? OR r.applied_at IS NULL OR r.dataset_id = ANY (?)
                            OR (? AND r.copies > (SELECT count(*) FROM replication_rule_site s WHERE s.rule_id = r.id)))
                     ORDER BY r.id""", (rs, i) -> new Due(rs.getLong(1), rs.getLong(2), rs.getBoolean(3)),
                    full, full, added.keySet().toArray(Long[]::new), sitesChanged);
            for (Due d : due) {
                apply(d.rule(), d.whole() ? null : added.getOrDefault(d.dataset(), List.of()).toArray(Long[]::new), sites);
            }
            return (int) due.stream().filter(d -> d.whole() || added.containsKey(d.dataset())).count();
        });
        if (full) lastFullApply = now;
        sitesLastPass = sites;
        return applied;
    }

    /**
     * Applies a rule now: chooses its sites if not yet chosen and wants a replica of every file of its
     * dataset at each. Returns how many (file, site) replicas the rule wants that it did not before.
     */
    public int applyRule(long ruleId) {
        return apply(ruleId, null, null);
    }

    /**
     * {@link #applyRule}, for the dataset's {@code files} only (at the sites chosen before; a site chosen now
     * gets every file), or every file when null. {@code sites}: the sites to choose from, null to read them.
     */
    private int apply(long ruleId, Long[] files, Map<Long, SiteRef> sites) {
        return tx.execute(status -> {
            List<Map<String, Object>> rows = jdbc.queryForList(
                    "SELECT dataset_id, copies, site_expression, state FROM replication_rule WHERE id = ? FOR UPDATE", ruleId);
            if (rows.isEmpty() || !"active".equals(rows.getFirst().get("state"))) return 0;
            long dataset = ((Number) rows.getFirst().get("dataset_id")).longValue();
            int copies = ((Number) rows.getFirst().get("copies")).intValue();
            String expression = (String) rows.getFirst().get("site_expression");
            List<Long> chosen = jdbc.queryForList("SELECT site_id FROM replication_rule_site WHERE rule_id = ?", Long.class, ruleId);
            String note = null;
            int chosenBefore = chosen.size();
            if (chosen.size() < copies) {
                SiteExpression expr = SiteExpression.parse(expression);
                List<SiteRef> candidates = (sites == null ? sites() : sites).values().stream()
                        .filter(s -> expr.matches(s) && !chosen.contains(s.id())).toList();
                Map<Long, Long> held = new HashMap<>();
                // counting the dataset's copies per site reads all of them: only when there is a choice to make
                if (!candidates.isEmpty()) jdbc.query("""
                        SELECT r.site_id, count(*) FROM replica r JOIN file f ON f.id = r.file_id
                         WHERE f.dataset_id = ? AND r.state IN ('done', 'verified') GROUP BY r.site_id""",
                        rs -> {
                            held.put(rs.getLong(1), rs.getLong(2));
                        }, dataset);
                candidates = candidates.stream()
                        .sorted(Comparator.<SiteRef>comparingLong(s -> -held.getOrDefault(s.id(), 0L)).thenComparing(SiteRef::name))
                        .toList();
                for (SiteRef s : candidates) {
                    if (chosen.size() >= copies) break;
                    jdbc.update("INSERT INTO replication_rule_site (rule_id, site_id) VALUES (?, ?)", ruleId, s.id());
                    chosen.add(s.id());
                }
                if (chosen.size() < copies)
                    note = "only " + chosen.size() + " of " + copies + " sites match '" + expression + "'";
            }
            jdbc.update("UPDATE replication_rule SET note = ? WHERE id = ? AND note IS DISTINCT FROM ?", note, ruleId, note);
            if (files == null) {
                // the first time only: an update of the rule marks its dataset for a completeness recompute
                jdbc.update("UPDATE replication_rule SET applied_at = now() WHERE id = ? AND applied_at IS NULL", ruleId);
                return want(ruleId, dataset, chosen, null);
            }
            return want(ruleId, dataset, chosen.subList(chosenBefore, chosen.size()), null)
                    + want(ruleId, dataset, chosen.subList(0, chosenBefore), files);
        });
    }

    /**
     * The rule wants a replica at each of {@code sites} of each of {@code files} of its dataset (every file
     * when null). Returns how many it did not want before.
     */
    private int want(long ruleId, long dataset, List<Long> sites, Long[] files) {
        if (sites.isEmpty() || (files != null && files.length == 0)) return 0;
        Long[] at = sites.toArray(Long[]::new);
        // the (file, site) pairs wanted, for both inserts
        String pairs = "SELECT f.id, s.site_id FROM file f, unnest(?::bigint[]) AS s(site_id) WHERE f.dataset_id = ?"
                + (files == null ? "" : " AND f.id = ANY (?)");
        Object[] args = files == null ? new Object[] {at, dataset} : new Object[] {at, dataset, files};
        jdbc.update("INSERT INTO replica (file_id, site_id) " + pairs + " ON CONFLICT DO NOTHING", args);
        List<Long> added = jdbc.queryForList("INSERT INTO replication_rule_replica (rule_id, file_id, site_id) SELECT " + ruleId
                + ", p.* FROM (" + pairs + ") p ON CONFLICT DO NOTHING RETURNING file_id", Long.class, args);
        if (!added.isEmpty()) {
            // a replica declared lost earlier, and wanted again: made again; one left pending while no rule
            // wanted it is looked at now
            jdbc.update("""
                    UPDATE replica r SET state = 'pending', attempts = CASE WHEN r.state = 'lost' THEN 0 ELSE r.attempts END,
                           next_attempt_at = NULL, waiting_for = NULL, updated_at = now()
                     WHERE r.file_id = ANY (?) AND r.site_id = ANY (?)
                       AND (r.state = 'lost' OR (r.state = 'pending' AND r.waiting_for = ?))""",
                    added.stream().distinct().toArray(Long[]::new), at, UNWANTED);
        }
        return added.size();
    }

    /**
     * A scheduled run of a rule (called by {@link ReplicationRunJob} on one instance of the cluster):
     * applies the rule (its dataset's new files), runs a pass, then waits until every replica the rule wants
     * is settled (done, verified or failed for good) or {@code schedule.max-run-time} passed. Recorded in
     * replication_run. A firing of the rule's schedule ({@code bySchedule}) is skipped, with no run recorded,
     * when the schedule is paused or another instance already runs that firing; an operator's run is not.
     * Returns false when the rule no longer exists or has expired (its job is then removed).
     */
    public boolean runScheduled(long ruleId, Instant scheduledAt, String instance, boolean bySchedule) {
        return runScheduled(ruleId, scheduledAt, instance, bySchedule, false);
    }

    /**
     * The same, for a firing Quartz {@code recovered} after the node running it was lost: a firing runs at
     * most once, so one whose run had started is not run again, and its run's row, which the lost node left
     * unfinished, is finished as failed (instance lost). One that had not started runs as any firing would.
     */
    public boolean runScheduled(long ruleId, Instant scheduledAt, String instance, boolean bySchedule, boolean recovered) {
        // Whether to run, and the run's row, in one transaction holding a share lock on the rule: a pause
        // (an update of the row) waits for it, so a run either started before the pause returned or sees it.
        record Start(String state, Long run) {}
        Start start = tx.execute(status -> {
            List<Map<String, Object>> rule = jdbc.queryForList(
                    "SELECT state, schedule_paused FROM replication_rule WHERE id = ? FOR SHARE", ruleId);
            if (rule.isEmpty()) return null;
            String state = (String) rule.getFirst().get("state");
            Timestamp at = scheduledAt == null ? null : Timestamp.from(scheduledAt);
            String firedBy = bySchedule ? "schedule" : "operator";
            if (recovered) {
                // the lost node may only have stalled and still run it: its own end, if it comes, overwrites this
                int lost = jdbc.update("""
                        UPDATE replication_run SET finished_at = now(),
                               outcome = 'failed: instance ' || coalesce(instance, '?') || ' lost during the run; its firing, recovered by '
                                         || ? || ', is not run again'
                         WHERE rule_id = ? AND scheduled_at = ? AND fired_by = ? AND finished_at IS NULL""",
                        instance, ruleId, at, firedBy);
                if (lost > 0 || !jdbc.queryForList("SELECT 1 FROM replication_run WHERE rule_id = ? AND scheduled_at = ? AND fired_by = ?",
                        ruleId, at, firedBy).isEmpty()) {
                    log.warn("recovered firing of rule {} at {} not run again: its run had started on a lost instance"
                            + " (the next firing, or a run now, replicates what it missed)", ruleId, scheduledAt);
                    return new Start(state, null);
                }
            }
            if (bySchedule && Boolean.TRUE.equals(rule.getFirst().get("schedule_paused"))) {
                log.info("firing of rule {} at {} skipped: its schedule is paused", ruleId, scheduledAt);
                return new Start(state, null);
            }
            // one run per scheduled firing, even when two nodes of the Quartz cluster acquired it (quartz#107)
            List<Long> run = jdbc.queryForList("""
                    INSERT INTO replication_run (rule_id, instance, scheduled_at, fired_by) VALUES (?, ?, ?, ?)
                    ON CONFLICT (rule_id, scheduled_at) WHERE fired_by = 'schedule' DO NOTHING RETURNING id""",
                    Long.class, ruleId, instance, at, firedBy);
            if (run.isEmpty()) log.info("firing of rule {} at {} skipped: another instance runs it", ruleId, scheduledAt);
            return new Start(state, run.isEmpty() ? null : run.getFirst());
        });
        if (start == null) return false;
        if (start.run() == null) return true;
        long run = start.run();
        List<String> state = List.of(start.state());
        String outcome;
        int added = 0;
        try {
            if (!state.getFirst().equals("active")) {
                outcome = "rule " + state.getFirst();
            } else {
                added = applyRule(ruleId);
                pass();
                long deadline = System.nanoTime() + props.schedule().maxRunTime().toNanos();
                outcome = "settled";
                while (open(ruleId) > 0) {
                    if (System.nanoTime() > deadline) {
                        outcome = "timed out after " + props.schedule().maxRunTime() + " with " + open(ruleId) + " replicas open";
                        break;
                    }
                    Thread.sleep(props.schedule().settlePoll().toMillis());
                    if (props.enabled()) continue; // the background passes move things on
                    pass();
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            outcome = "interrupted";
        } catch (RuntimeException e) {
            outcome = "error: " + e.getMessage();
            log.warn("scheduled run of rule {}: {}", ruleId, e.toString());
        }
        jdbc.update("UPDATE replication_run SET finished_at = now(), files_added = ?, outcome = ? WHERE id = ?", added, outcome, run);
        // an expired rule's schedule goes (the pass that expires it removes it; this is for one it could not)
        return state.getFirst().equals("active");
    }

    /** Replicas the rule wants that are not settled yet. */
    private long open(long ruleId) {
        return jdbc.queryForObject("""
                SELECT count(*) FROM replication_rule_replica x JOIN replica r ON r.file_id = x.file_id AND r.site_id = x.site_id
                 WHERE x.rule_id = ? AND r.state IN ('pending', 'staging', 'transferring')""", Long.class, ruleId);
    }

    /** How often {@link #track} looks at every replica under way rather than at the transfers ended since the last pass. */
    static final Duration SWEEP_EVERY = Duration.ofMinutes(1);
    /** A transfer's end is its transaction's time: one committed later than this after it is left to the sweep. */
    static final Duration LATE_COMMIT = Duration.ofMinutes(1);
    /** Transfers that ended before this (the database's clock) were followed by an earlier pass; null: none yet. */
    private Instant trackedTo;
    private long lastSweep = Long.MIN_VALUE;

    /** The next pass looks at every replica under way (for tests: a late commit is caught by the sweep). */
    void sweepAtNextPass() {
        lastSweep = Long.MIN_VALUE;
    }

    /**
     * Follows replicas under way; returns {finished, failed attempts}. A pass follows the transfers and recall
     * files that ended since the last one (by the indexes on their end times); once a minute, and at the first
     * pass, every replica under way is looked at. A replica staged from tape shows transferring from its
     * transfer's start in the sweep, or its end, whichever comes first.
     */
    private int[] track() {
        long now = System.nanoTime();
        boolean sweep = trackedTo == null || lastSweep == Long.MIN_VALUE || now - lastSweep >= SWEEP_EVERY.toNanos();
        Instant start = jdbc.queryForObject("SELECT now()", Timestamp.class).toInstant();
        Object[] since = sweep ? new Object[0] : new Object[] {Timestamp.from(trackedTo)};
        // staged from tape and handed to the transfer queue: follow that transfer
        if (sweep) {
            jdbc.update("""
                    UPDATE replica r SET state = 'transferring', transfer_job_id = j.id, updated_at = now()
                      FROM transfer_job j
                     WHERE r.state = 'staging' AND j.correlation = 'stage:' || r.stage_request_id::text || ':' || r.file_id""");
        } else {
            jdbc.update("""
                    UPDATE replica r SET state = 'transferring', transfer_job_id = j.id, updated_at = now()
                      FROM transfer_job j
                     WHERE j.finished_at >= ? AND j.correlation LIKE 'stage:%' AND r.state = 'staging'
                       AND r.file_id = CAST(split_part(j.correlation, ':', 3) AS bigint)
                       AND r.stage_request_id = CAST(split_part(j.correlation, ':', 2) AS uuid)""", since);
        }
        String ended = sweep ? "" : " AND j.finished_at >= ?";
        // a transfer the recall side superseded (the cached copy it sent from was found bad, so the file is read
        // from tape again and sent by a transfer of its own): the replica waits for that one, as when staging
        jdbc.update("""
                UPDATE replica r SET state = 'staging', transfer_job_id = NULL, updated_at = now()
                  FROM transfer_job j
                 WHERE r.state = 'transferring' AND j.id = r.transfer_job_id AND j.correlation LIKE 'stage-superseded:%'""" + ended,
                since);
        List<Long> finished = jdbc.queryForList("""
                UPDATE replica r SET state = CASE WHEN f.adler32 IS NOT NULL AND j.dest_adler32 IS NOT NULL THEN 'verified' ELSE 'done' END,
                       adler32 = CASE WHEN j.dest_adler32 IS NOT NULL THEN lpad(to_hex(j.dest_adler32), 8, '0') END,
                       done_at = now(), updated_at = now(), last_error = NULL, waiting_for = NULL, next_attempt_at = NULL
                  FROM transfer_job j, file f
                 WHERE r.state = 'transferring' AND j.id = r.transfer_job_id AND j.state = 'done' AND f.id = r.file_id
                   AND (f.adler32 IS NULL OR j.dest_adler32 IS NULL OR lpad(to_hex(j.dest_adler32), 8, '0') = f.adler32)""" + ended
                + " RETURNING r.file_id", Long.class, since);
        List<Failed> failed = new ArrayList<>(fail("""
                FROM transfer_job j, file f
                WHERE r.state = 'transferring' AND j.id = r.transfer_job_id AND f.id = r.file_id
                  AND (j.state IN ('failed', 'cancelled') OR (j.state = 'done' AND f.adler32 IS NOT NULL
                       AND j.dest_adler32 IS NOT NULL AND lpad(to_hex(j.dest_adler32), 8, '0') <> f.adler32))
                  -- a recall's failed transfer counts once the recall side has ended its file: it may read it again
                  AND NOT (j.state <> 'done' AND r.stage_request_id IS NOT NULL AND EXISTS (
                           SELECT 1 FROM stage_request_file x
                            WHERE x.request_id = r.stage_request_id AND x.file_id = r.file_id AND x.state = 'transferring'))""" + ended,
                """
                CASE WHEN j.state = 'done' THEN 'destination Adler32 ' || lpad(to_hex(j.dest_adler32), 8, '0') || ' differs from the catalog''s ' || f.adler32
                     ELSE 'transfer ' || j.state || coalesce(' (' || j.last_error_class || ')', '') || coalesce(': ' || j.last_error, '') END""",
                since));
        failed.addAll(fail("""
                FROM stage_request_file x
                WHERE r.state = 'staging' AND x.request_id = r.stage_request_id AND x.file_id = r.file_id
                  AND x.state IN ('failed', 'cancelled')""" + (sweep ? ""
                        : " AND ((x.state = 'failed' AND x.finished_at >= ?) OR (x.state = 'cancelled' AND x.finished_at >= ?))"),
                "'recall ' || x.state || coalesce(': ' || x.error, '')", sweep ? since : new Object[] {since[0], since[0]}));
        if (sweep) {
            // a recall request deleted (the WLCG API forgets its files) ends no file: without this its replicas
            // stayed staging for ever (one whose transfer was queued moved to transferring above)
            failed.addAll(fail("""
                    WHERE r.state = 'staging' AND NOT EXISTS (
                        SELECT 1 FROM stage_request_file x WHERE x.request_id = r.stage_request_id AND x.file_id = r.file_id)""",
                    "'recall request ' || coalesce(r.stage_request_id::text, '') || ' is gone'"));
        }
        trackedTo = start.minus(LATE_COMMIT);
        if (sweep) lastSweep = now;
        if (failed.stream().anyMatch(f -> f.error().contains("(NO_SUCH_PATH)"))) {
            madeDirectories.clear(); // a directory we thought made is gone: make them again
        }
        // copies waiting to fan out from one just made, or for one that failed, are looked at now
        List<Long> settled = new ArrayList<>(finished);
        failed.forEach(f -> settled.add(f.file()));
        lookAgain("file_id = ANY (?)", (Object) settled.stream().distinct().toArray(Long[]::new));
        return new int[] {finished.size(), failed.size()};
    }

    /** Waiting replicas selected by {@code where} are looked at at the next pass rather than at their next look. */
    private void lookAgain(String where, Object... args) {
        if (args.length > 0 && args[0] instanceof Object[] a && a.length == 0) return;
        jdbc.update("UPDATE replica SET next_attempt_at = NULL WHERE state = 'pending' AND waiting_for IS NOT NULL "
                + "AND next_attempt_at IS NOT NULL AND " + where, args);
    }

    private record Failed(long file, String error) {}

    /**
     * Counts a failed attempt for the replicas selected by {@code from}: pending again after backoff, or failed
     * for good. Returns those replicas' files and the errors recorded.
     */
    private List<Failed> fail(String from, String reason, Object... args) {
        List<Object> all = new ArrayList<>(List.of(props.maxAttempts(), props.retryBackoff().toMillis() / 1000.0));
        all.addAll(List.of(args));
        return jdbc.query("""
                UPDATE replica r SET attempts = r.attempts + 1,
                       state = CASE WHEN r.attempts + 1 >= ? THEN 'failed' ELSE 'pending' END,
                       last_error = """ + reason + """
                , waiting_for = NULL, updated_at = now(),
                       next_attempt_at = now() + make_interval(secs => least(3600, ? * power(2, least(r.attempts, 12))))
                """ + from + " RETURNING r.file_id, r.last_error", (rs, i) -> new Failed(rs.getLong(1), rs.getString(2)), all.toArray());
    }

    private record Pending(long file, long site, String name, long size, String adler32, String experiment, boolean onTape,
                           String preference, boolean wanted, Timestamp nextAttemptAt) {}

    /** Why a pending replica no active rule wants (its rules expired or were deleted) is not made. */
    static final String UNWANTED = "no active rule wants it";
    /**
     * When a waiting replica is looked at again, at the latest: the events that can end a wait look at once (a
     * copy of its file made or failed, its site's or a holder's endpoints changed, its file registered at a
     * site, a rule wanting it again). A safety net: at 10^6 waiting replicas it is 280 looks a second, within
     * what dispatch takes in a second (1,000 by default), so waiting ones never fill the dispatch for good.
     */
    static final Duration WAIT_RECHECK = Duration.ofHours(1);

    private record TapeGroup(long site, String experiment) {}

    /** Dispatches due pending replicas; returns {transfers queued, files sent to recall, waiting}. */
    private int[] dispatch() {
        // the due ones only, never tried first, along the replica_due index: a replica that must wait is
        // given a later look (below), so however many wait they cannot hold up the rest
        List<Pending> pending = jdbc.query("""
                SELECT r.file_id, r.site_id, f.name, f.size_bytes, f.adler32, f.experiment,
                       EXISTS (SELECT 1 FROM segment g JOIN volume v ON v.id = g.volume_id
                                WHERE g.file_id = f.id AND g.state = 'ok' AND v.state = 'available') AS on_tape,
                       (SELECT min(ru.source_expression) FROM replication_rule_replica x JOIN replication_rule ru ON ru.id = x.rule_id
                         WHERE x.file_id = r.file_id AND x.site_id = r.site_id AND ru.state = 'active') AS preference,
                       EXISTS (SELECT 1 FROM replication_rule_replica x JOIN replication_rule ru ON ru.id = x.rule_id
                                WHERE x.file_id = r.file_id AND x.site_id = r.site_id AND ru.state = 'active') AS wanted,
                       r.next_attempt_at
                  FROM replica r JOIN file f ON f.id = r.file_id
                 WHERE r.state = 'pending' AND coalesce(r.next_attempt_at, '-infinity'::timestamptz) <= now()
                 ORDER BY coalesce(r.next_attempt_at, '-infinity'::timestamptz), r.file_id, r.site_id LIMIT ?""",
                (rs, i) -> new Pending(rs.getLong(1), rs.getLong(2), rs.getString(3), rs.getLong(4), rs.getString(5),
                        rs.getString(6), rs.getBoolean(7), rs.getString(8), rs.getBoolean(9), rs.getTimestamp(10)),
                props.dispatchBatch());
        if (pending.isEmpty()) return new int[3];
        Map<Long, SiteRef> sites = sites();
        Map<Long, String> endpoints = endpoints();
        ReplicaPlanner planner = planner(sites);
        Long[] fileIds = pending.stream().map(Pending::file).distinct().toArray(Long[]::new);
        Map<Long, List<SiteRef>> holders = new HashMap<>();
        Map<Long, List<SiteRef>> inFlight = new HashMap<>();
        jdbc.query("SELECT file_id, site_id, state FROM replica WHERE file_id = ANY (?) AND state IN ('done', 'verified', 'staging', 'transferring')",
                rs -> {
                    SiteRef s = sites.get(rs.getLong(2));
                    boolean good = rs.getString(3).equals("done") || rs.getString(3).equals("verified");
                    if (good && !endpoints.containsKey(s.id())) return; // a holder we cannot read from
                    (good ? holders : inFlight).computeIfAbsent(rs.getLong(1), k -> new ArrayList<>()).add(s);
                }, (Object) fileIds);
        LocalSource local = localSource.getIfAvailable();
        Map<TapeGroup, List<Pending>> fromTape = new LinkedHashMap<>();
        int queued = 0;
        List<Waiting> waits = new ArrayList<>();
        for (Pending p : pending) {
            SiteRef target = sites.get(p.site());
            String base = endpoints.get(p.site());
            if (!p.wanted()) {
                waits.add(new Waiting(p, UNWANTED));
                continue;
            }
            if (base == null) {
                waits.add(new Waiting(p, "site " + target.name() + " has no enabled endpoint"));
                continue;
            }
            try {
                Optional<Path> localCopy = local == null ? Optional.empty() : local.locate(p.file());
                SiteExpression preference = p.preference() == null ? null : SiteExpression.parse(p.preference());
                Decision d = planner.decide(new FileView(target, holders.getOrDefault(p.file(), List.of()),
                        inFlight.getOrDefault(p.file(), List.of()), localCopy.isPresent(), p.onTape(), preference));
                URI destination = url(base, p.name());
                switch (d) {
                    case ReplicaPlanner.Wait w -> waits.add(new Waiting(p, w.reason()));
                    case ReplicaPlanner.FromTape t -> fromTape.computeIfAbsent(new TapeGroup(p.site(), p.experiment()), k -> new ArrayList<>()).add(p);
                    case ReplicaPlanner.FromLocal l -> queued += send(p, localCopy.get().toUri(), destination, "local");
                    case ReplicaPlanner.FromSite s -> queued += send(p, url(endpoints.get(s.site().id()), p.name()), destination, s.site().name());
                }
                if (!(d instanceof ReplicaPlanner.Wait)) inFlight.computeIfAbsent(p.file(), k -> new ArrayList<>()).add(target);
            } catch (RuntimeException e) {
                rowFailed(e, p, "cannot dispatch");
            }
        }
        waitAll(waits);
        int staged = 0;
        for (var e : fromTape.entrySet()) {
            try {
                staged += stage(e.getKey(), e.getValue(), endpoints.get(e.getKey().site()));
            } catch (RuntimeException ex) {
                for (Pending p : e.getValue()) rowFailed(ex, p, "cannot send to recall");
            }
        }
        return new int[] {queued, staged, waits.size()};
    }

    /**
     * One replica could not be handled (a URL that does not parse, a bad checksum in the catalog, ...): it
     * alone counts a failed attempt, so it cannot stop the pass for every other replica. The database being
     * away is not the row's fault: that is thrown on and the pass is tried again.
     */
    private void rowFailed(RuntimeException e, Pending p, String what) {
        if (e instanceof DataAccessException || e instanceof TransactionException) throw e;
        log.warn("replica of {} at site {}: {}", p.name(), p.site(), e.toString());
        failNow(p, what + ": " + e);
    }

    private record Waiting(Pending replica, String reason) {}

    /**
     * Records why each replica waits and when it is looked at again, in one statement; not for one whose next
     * look moved since dispatch read it (an event that ends its wait looked at it meanwhile).
     */
    private void waitAll(List<Waiting> waits) {
        if (waits.isEmpty()) return;
        jdbc.update("""
                UPDATE replica r SET waiting_for = w.reason, next_attempt_at = now() + make_interval(secs => ?)
                  FROM unnest(?::bigint[], ?::bigint[], ?::text[], ?::timestamptz[]) AS w(file_id, site_id, reason, seen)
                 WHERE r.file_id = w.file_id AND r.site_id = w.site_id AND r.state = 'pending'
                   AND r.next_attempt_at IS NOT DISTINCT FROM w.seen""",
                WAIT_RECHECK.toSeconds(),
                waits.stream().map(w -> w.replica().file()).toArray(Long[]::new),
                waits.stream().map(w -> w.replica().site()).toArray(Long[]::new),
                waits.stream().map(Waiting::reason).toArray(String[]::new),
                waits.stream().map(w -> w.replica().nextAttemptAt()).toArray(Timestamp[]::new));
    }

    /**
     * Queues one transfer, in one transaction with the replica's claim: the replica is taken from pending first,
     * and only a replica this pass took gets a transfer (another instance's pass, after the lease moved, may have
     * sent it since this pass read it; its row lock makes this claim wait for its commit and then find nothing).
     */
    private int send(Pending p, URI source, URI destination, String sourceName) {
        if (!makeParent(p, destination)) return 0;
        Long adler = p.adler32() == null ? null : Long.parseLong(p.adler32().trim(), 16);
        return tx.execute(status -> {
            if (jdbc.update("""
                    UPDATE replica SET state = 'transferring', source = ?, transfer_job_id = NULL, stage_request_id = NULL,
                           waiting_for = NULL, updated_at = now() WHERE file_id = ? AND site_id = ? AND state = 'pending'""",
                    sourceName, p.file(), p.site()) == 0) return 0;
            // the replica's path at the site is replication's own (as Rucio's transfers to disk sites overwrite): a
            // file there is a copy declared bad, or one an earlier transfer left; kept, it would fail the replica for good
            long job = transfers.enqueue(List.of(new TransferQueue.Request("replica:" + p.file() + ":" + p.site(), source,
                    destination, p.size(), adler, true))).getFirst();
            jdbc.update("UPDATE replica SET transfer_job_id = ? WHERE file_id = ? AND site_id = ?", job, p.file(), p.site());
            return 1;
        });
    }

    /**
     * One recall request per (site, experiment), with the site's endpoint as destination. The request and the
     * replicas marked staging commit together: a crash between them would leave the replicas pending, and the
     * next pass would recall and send the files a second time.
     */
    private int stage(TapeGroup g, List<Pending> files, String base) {
        List<Pending> ready = files.stream().filter(p -> makeParent(p, url(base, p.name()))).toList();
        if (ready.isEmpty()) return 0;
        try {
            return tx.execute(status -> {
                // the replicas are claimed first, and only those this pass took are recalled (as in send)
                List<Pending> claimed = ready.stream().filter(p -> jdbc.update("""
                        UPDATE replica SET state = 'staging', source = 'tape', stage_request_id = NULL, transfer_job_id = NULL,
                               waiting_for = NULL, updated_at = now() WHERE file_id = ? AND site_id = ? AND state = 'pending'""",
                        p.file(), p.site()) == 1).toList();
                if (claimed.isEmpty()) return 0;
                // the recall's transfers write over a file at the replica's path, as send's do
                UUID request = stageRequests.submit(props.owner(), new NewStageRequest(null,
                        claimed.stream().map(Pending::name).toList(), null, null, base, g.experiment()).overwriting())
                        .request().id();
                for (Pending p : claimed)
                    jdbc.update("UPDATE replica SET stage_request_id = ? WHERE file_id = ? AND site_id = ?", request, p.file(), p.site());
                return claimed.size();
            });
        } catch (StageRequestRejected e) {
            for (Pending p : ready) failNow(p, "recall refused: " + e.getMessage());
            return 0;
        }
    }

    /**
     * An active rule wants replica {@code r}: it asked for it, or it chose the site for the file's dataset (a cron
     * rule before its next run adds the file only then).
     */
    /** How often {@link #reap} looks for unwanted copies, at most (less when the grace is shorter). */
    static final Duration REAP_EVERY = Duration.ofMinutes(1);
    /**
     * A copy still marked {@code deleting} this long after its mark was left by a crash or an error (a deletion
     * batch takes minutes, not this long): its deletion is done again.
     */
    static final Duration DELETING_LAPSES = Duration.ofHours(1);
    /** Back to pending, to be made again: a copy a rule wants after it was deleted, or while it was being deleted. */
    private static final String REMAKE = """
            state = 'pending', unwanted_since = NULL, attempts = 0, source = NULL, adler32 = NULL, transfer_job_id = NULL,
            stage_request_id = NULL, last_error = NULL, waiting_for = NULL, next_attempt_at = NULL, done_at = NULL, updated_at = now()""";
    private long lastReap = Long.MIN_VALUE;
    private long lastFullMark = Long.MIN_VALUE;
    /**
     * Datasets whose replicas, wants or rules changed since the reaper last looked (from the completeness marks):
     * only their copies can have become unwanted. A hint: the reaper looks at every copy at its first run and
     * every {@link #FULL_RECOMPUTE_EVERY}.
     */
    private final Set<Long> datasetsChanged = ConcurrentHashMap.newKeySet();

    private static final String WANTED = """
            (EXISTS (SELECT 1 FROM replication_rule_replica x JOIN replication_rule ru ON ru.id = x.rule_id
                      WHERE x.file_id = r.file_id AND x.site_id = r.site_id AND ru.state = 'active')
             OR EXISTS (SELECT 1 FROM replication_rule ru JOIN replication_rule_site rs ON rs.rule_id = ru.id
                          JOIN file w ON w.dataset_id = ru.dataset_id
                         WHERE w.id = r.file_id AND rs.site_id = r.site_id AND ru.state = 'active'))""";

    /**
     * Deletes the copies no rule wants any more, as Rucio's reaper does: a done or verified replica no active
     * rule has wanted for {@code deletion.grace} (its rules expired or were deleted) is deleted at its site.
     * Only copies replication made are deleted: those registered as already at a site (origins) stay. Kept too:
     * the file's last copy outside tape (no good tape segment on an available volume and no other verified
     * replica that a rule wants), and a copy some transfer is reading from. A copy is marked {@code deleting}
     * before the site is asked, so no transfer starts from it meanwhile; if a rule comes to want it before the
     * row goes, it is made again (pending). A mark left behind (a crash or a database error mid-deletion) does
     * not stay: a rule wanting the copy makes it pending at the next look, otherwise it is deleted again after
     * {@link #DELETING_LAPSES} (already gone at the site counts as deleted). Returns how many copies were deleted.
     */
    private int reap() {
        ReplicationProperties.Deletion del = props.deletion();
        // not every pass, but often enough against the grace (hours)
        long now = System.nanoTime();
        if (lastReap != Long.MIN_VALUE && now - lastReap < Math.min(REAP_EVERY.toNanos(), del.grace().toNanos())) return 0;
        lastReap = now;
        // marking copies unwanted reads every done copy (2.3 s at 10^6): now and then; otherwise only those of
        // the datasets that changed
        boolean everyCopy = lastFullMark == Long.MIN_VALUE || now - lastFullMark >= FULL_RECOMPUTE_EVERY.toNanos();
        Long[] changed = datasetsChanged.toArray(Long[]::new);
        String mark = "UPDATE replica r SET unwanted_since = now() WHERE unwanted_since IS NULL AND state IN ('done', 'verified') "
                + "AND source IS DISTINCT FROM 'registered' AND NOT " + WANTED;
        if (everyCopy) {
            jdbc.update(mark);
            lastFullMark = now;
        } else if (changed.length > 0) {
            jdbc.update(mark + " AND r.file_id IN (SELECT id FROM file WHERE dataset_id = ANY (?))", (Object) changed);
        }
        datasetsChanged.removeAll(List.of(changed));
        jdbc.update("UPDATE replica r SET unwanted_since = NULL WHERE unwanted_since IS NOT NULL AND state <> 'deleting' AND " + WANTED);
        // deleting rows always have unwanted_since (their mark needs it): the conditions below use its index.
        // No deletion of this instance is under way now (the reaper runs in the pass, and its batch ended).
        jdbc.update("UPDATE replica r SET " + REMAKE + " WHERE unwanted_since IS NOT NULL AND state = 'deleting' AND " + WANTED);
        if (!del.enabled()) return 0;
        record Doomed(long file, long site, String name) {}
        // a mark left behind (updated_at is the mark: nothing else writes a deleting row) is taken again
        List<Doomed> doomed = new ArrayList<>(jdbc.query("""
                UPDATE replica r SET updated_at = now() FROM file f
                 WHERE f.id = r.file_id AND (r.file_id, r.site_id) IN (
                       SELECT c.file_id, c.site_id FROM replica c
                        WHERE c.unwanted_since IS NOT NULL AND c.state = 'deleting' AND c.updated_at < now() - make_interval(secs => ?)
                        ORDER BY c.updated_at LIMIT ? FOR UPDATE SKIP LOCKED)
                RETURNING r.file_id, r.site_id, f.name""",
                (rs, i) -> new Doomed(rs.getLong(1), rs.getLong(2), rs.getString(3)), DELETING_LAPSES.toSeconds(), del.batch()));
        doomed.addAll(jdbc.query("""
                UPDATE replica r SET state = 'deleting', updated_at = now() FROM file f
                 WHERE f.id = r.file_id AND (r.file_id, r.site_id) IN (
                       SELECT c.file_id, c.site_id FROM replica c
                        WHERE c.state IN ('done', 'verified') AND c.unwanted_since <= now() - make_interval(secs => ?)
                          AND (c.next_attempt_at IS NULL OR c.next_attempt_at <= now())
                          -- a tape copy to fall back on is one that can be read: on a broken or disabled
                          -- volume it is not, and deleting this copy could lose the file
                          AND (EXISTS (SELECT 1 FROM segment g JOIN volume v ON v.id = g.volume_id
                                        WHERE g.file_id = c.file_id AND g.state = 'ok' AND v.state = 'available')
                               OR EXISTS (SELECT 1 FROM replica o WHERE o.file_id = c.file_id AND o.site_id <> c.site_id
                                             AND o.state = 'verified' AND o.unwanted_since IS NULL))
                          AND NOT EXISTS (SELECT 1 FROM replica t JOIN site s ON s.name = t.source
                                           WHERE t.file_id = c.file_id AND t.state = 'transferring' AND s.id = c.site_id)
                        ORDER BY c.unwanted_since LIMIT ? FOR UPDATE SKIP LOCKED)
                RETURNING r.file_id, r.site_id, f.name""",
                (rs, i) -> new Doomed(rs.getLong(1), rs.getLong(2), rs.getString(3)),
                del.grace().toMillis() / 1000.0, Math.max(0, del.batch() - doomed.size())));
        if (doomed.isEmpty()) return 0;
        Map<Long, String> endpoints = endpoints();
        Map<URI, Doomed> byUrl = new LinkedHashMap<>();
        for (Doomed d : doomed) {
            String base = endpoints.get(d.site());
            if (base == null) {
                keepForNow(d.file(), d.site(), "deletion waits: the site has no enabled endpoint");
                continue;
            }
            try {
                byUrl.put(url(base, d.name()), d);
            } catch (RuntimeException e) { // this copy's URL only: the others are still deleted
                log.warn("replica of {} at site {}: {}", d.name(), d.site(), e.toString());
                keepForNow(d.file(), d.site(), "deletion failed: cannot make its URL: " + e);
            }
        }
        Map<URI, TransferFailure> failed;
        try {
            failed = byUrl.isEmpty() ? Map.of() : mover.delete(byUrl.keySet());
        } catch (RuntimeException e) { // the mover failed as a whole: every copy stays, none is left 'deleting'
            log.warn("replica deletion: {}", e.toString());
            for (Doomed d : byUrl.values()) keepForNow(d.file(), d.site(), "deletion failed: " + e);
            return 0;
        }
        int deleted = 0;
        for (var e : byUrl.entrySet()) {
            Doomed d = e.getValue();
            TransferFailure f = failed.get(e.getKey());
            if (f != null) {
                keepForNow(d.file(), d.site(), "deletion failed (" + f.kind() + "): " + f.getMessage());
                continue;
            }
            deleted++;
            log.info("replica of {} deleted at {}: no rule wants it", d.name(), e.getKey());
            // gone at the site: the row goes too, unless a rule came to want the copy meanwhile (then it is made again)
            if (jdbc.update("DELETE FROM replica r WHERE file_id = ? AND site_id = ? AND NOT " + WANTED, d.file(), d.site()) == 0) {
                jdbc.update("UPDATE replica SET " + REMAKE + " WHERE file_id = ? AND site_id = ?", d.file(), d.site());
            }
        }
        return deleted;
    }

    /**
     * A copy whose deletion failed stays as it was and is tried again after the retry backoff: verified only when
     * its Adler32 is the catalog's (a done copy may carry the mover's Adler32 with none in the catalog to compare).
     */
    private void keepForNow(long file, long site, String reason) {
        jdbc.update("""
                UPDATE replica r SET state = CASE WHEN r.adler32 = (SELECT f.adler32 FROM file f WHERE f.id = r.file_id)
                                                  THEN 'verified' ELSE 'done' END, last_error = ?,
                       next_attempt_at = now() + make_interval(secs => ?), updated_at = now()
                 WHERE file_id = ? AND site_id = ? AND state = 'deleting'""",
                reason, props.retryBackoff().toMillis() / 1000.0, file, site);
    }

    /** Makes the destination's directory at its site (once per directory); a refusal counts as a failed attempt. */
    private boolean makeParent(Pending p, URI destination) {
        String path = destination.toString();
        String dir = path.substring(0, path.lastIndexOf('/'));
        if (madeDirectories.contains(dir)) return true;
        try {
            mover.makeDirectories(URI.create(dir));
            madeDirectories.add(dir);
            return true;
        } catch (TransferFailure e) {
            failNow(p, "cannot create " + dir + " (" + e.kind() + "): " + e.getMessage());
            return false;
        }
    }

    private void failNow(Pending p, String reason) {
        jdbc.update("""
                UPDATE replica r SET attempts = r.attempts + 1, state = CASE WHEN r.attempts + 1 >= ? THEN 'failed' ELSE 'pending' END,
                       last_error = ?, waiting_for = NULL, updated_at = now(),
                       next_attempt_at = now() + make_interval(secs => least(3600, ? * power(2, least(r.attempts, 12))))
                 WHERE file_id = ? AND site_id = ? AND state = 'pending'""",
                props.maxAttempts(), reason, props.retryBackoff().toMillis() / 1000.0, p.file(), p.site());
    }

    /** How often the pass deletes the replica events older than {@code history-keep}. */
    static final Duration PRUNE_HISTORY_EVERY = Duration.ofMinutes(10);
    private volatile long lastHistoryPrune = Long.MIN_VALUE;

    private void pruneHistoryInTurn() {
        long now = System.nanoTime();
        if (lastHistoryPrune != Long.MIN_VALUE && now - lastHistoryPrune < PRUNE_HISTORY_EVERY.toNanos()) return;
        lastHistoryPrune = now;
        pruneHistory();
    }

    /**
     * Deletes the replica events (V61) older than {@code history-keep}, and the names of files and sites removed
     * before then (V68: their events are as old); returns how many events.
     */
    public int pruneHistory() {
        double keep = props.historyKeep().toMillis() / 1000.0;
        jdbc.update("DELETE FROM replica_event_file WHERE removed_at < now() - make_interval(secs => ?)", keep);
        jdbc.update("DELETE FROM replica_event_site WHERE removed_at < now() - make_interval(secs => ?)", keep);
        return jdbc.update("DELETE FROM replica_event WHERE at < now() - make_interval(secs => ?)", keep);
    }

    /** A full recompute now and then, as a safety net for marks a trigger could not make (a file deleted whole). */
    static final Duration FULL_RECOMPUTE_EVERY = Duration.ofMinutes(10);
    private volatile long lastFullRecompute = Long.MIN_VALUE;
    /** The pass recomputes again no sooner than this (System.nanoTime()). */
    private volatile long nextRecompute = Long.MIN_VALUE;

    /**
     * {@link #recomputeStatus} from the pass, at most a tenth of the time: a marked dataset is aggregated whole,
     * so one of 10^6 files that gets a file at every pass took seconds at each (its figures now lag by ten times
     * that instead). The marks wait in their table meanwhile.
     */
    private void recomputeStatusInTurn() {
        long start = System.nanoTime();
        if (nextRecompute != Long.MIN_VALUE && start < nextRecompute) return;
        recomputeStatus();
        nextRecompute = start + 11 * (System.nanoTime() - start);
    }

    /**
     * Recomputes dataset_site_status for the (dataset, site) pairs active rules want replicas at: of the datasets
     * marked in {@code dataset_status_dirty} since the last pass (triggers mark them on every change to their
     * replicas, wants and rules), or of all every {@link #FULL_RECOMPUTE_EVERY} and at the first pass. The
     * others only turn STUCK when their progress is older than {@code stuck-after}. One transaction: marks taken
     * are not lost if this fails.
     */
    public void recomputeStatus() {
        long now = System.nanoTime();
        boolean full = lastFullRecompute == Long.MIN_VALUE || now - lastFullRecompute >= FULL_RECOMPUTE_EVERY.toNanos();
        Long[] marked = tx.execute(status -> {
            Long[] dirty = jdbc.queryForList("DELETE FROM dataset_status_dirty RETURNING dataset_id", Long.class).toArray(Long[]::new);
            if (full) {
                recompute("", "");
            } else if (dirty.length > 0) {
                recompute(" AND f.dataset_id = ANY (?)", " AND s.dataset_id = ANY (?)", (Object) dirty);
            }
            if (!full) {
                jdbc.update("""
                        UPDATE dataset_site_status SET state = 'STUCK', updated_at = now()
                         WHERE state = 'REPLICATING' AND last_progress_at < now() - make_interval(secs => ?)""",
                        props.stuckAfter().toMillis() / 1000.0);
            }
            return dirty;
        });
        if (full) lastFullRecompute = now;
        datasetsChanged.addAll(List.of(marked));
    }

    /** The aggregation of {@link #recomputeStatus}, for the files and status rows the conditions select. */
    private void recompute(String files, String statusRows, Object... dirty) {
        List<Object> args = new ArrayList<>(List.of(dirty));
        args.add(props.stuckAfter().toMillis() / 1000.0);
        jdbc.update("""
                WITH want AS (
                    SELECT DISTINCT f.dataset_id, x.file_id, x.site_id
                      FROM replication_rule_replica x JOIN replication_rule ru ON ru.id = x.rule_id AND ru.state = 'active'
                      JOIN file f ON f.id = x.file_id WHERE true""" + files + """
                ),
                agg AS (
                    SELECT w.dataset_id, w.site_id, count(*) AS total,
                           count(*) FILTER (WHERE r.state IN ('done', 'verified')) AS done,
                           count(*) FILTER (WHERE r.state = 'verified') AS verified,
                           count(*) FILTER (WHERE r.state = 'failed') AS failed,
                           sum(f.size_bytes) AS bytes_total,
                           coalesce(sum(f.size_bytes) FILTER (WHERE r.state IN ('done', 'verified')), 0) AS bytes_done,
                           (array_agg(coalesce(r.last_error, r.waiting_for) ORDER BY r.updated_at DESC)
                                FILTER (WHERE r.state NOT IN ('done', 'verified') AND coalesce(r.last_error, r.waiting_for) IS NOT NULL))[1] AS reason
                      FROM want w JOIN replica r ON r.file_id = w.file_id AND r.site_id = w.site_id JOIN file f ON f.id = w.file_id
                     GROUP BY w.dataset_id, w.site_id)
                INSERT INTO dataset_site_status AS s (dataset_id, site_id, files_total, files_done, files_verified, files_failed,
                                                     bytes_total, bytes_done, state, reason, last_progress_at, updated_at)
                SELECT dataset_id, site_id, total, done, verified, failed, bytes_total, bytes_done,
                       -- the clock starts when the site is first wanted: copies it held before (registered, or
                       -- made for an earlier rule) are no progress of this work, and their age made it STUCK at once
                       CASE WHEN done = total THEN 'OK' WHEN failed > 0 THEN 'STUCK' ELSE 'REPLICATING' END, reason, now(), now()
                  FROM agg
                ON CONFLICT (dataset_id, site_id) DO UPDATE SET
                       files_total = EXCLUDED.files_total, files_done = EXCLUDED.files_done,
                       files_verified = EXCLUDED.files_verified, files_failed = EXCLUDED.files_failed,
                       bytes_total = EXCLUDED.bytes_total, bytes_done = EXCLUDED.bytes_done, reason = EXCLUDED.reason,
                       -- progress: a replica done since; or new work after being complete (the clock starts now)
                       last_progress_at = CASE
                           WHEN s.files_done >= s.files_total AND EXCLUDED.files_done < EXCLUDED.files_total THEN now()
                           WHEN EXCLUDED.files_done > s.files_done THEN now()
                           ELSE s.last_progress_at END,
                       -- STUCK only on a clock the CASE above kept (s. is the old row): new work after being
                       -- complete restarted it, and judging the old one stored the work just started STUCK
                       state = CASE WHEN EXCLUDED.files_done >= EXCLUDED.files_total THEN 'OK'
                                    -- failed for good: made again only when an operator retries them
                                    WHEN EXCLUDED.files_failed > 0 THEN 'STUCK'
                                    WHEN s.last_progress_at < now() - make_interval(secs => ?)
                                         AND s.files_done < s.files_total
                                         AND EXCLUDED.files_done <= s.files_done THEN 'STUCK'
                                    ELSE 'REPLICATING' END,
                       updated_at = now()""", args.toArray());
        jdbc.update("""
                DELETE FROM dataset_site_status s WHERE NOT EXISTS (
                    SELECT 1 FROM replication_rule_replica x JOIN replication_rule ru ON ru.id = x.rule_id AND ru.state = 'active'
                      JOIN file f ON f.id = x.file_id WHERE f.dataset_id = s.dataset_id AND x.site_id = s.site_id)""" + statusRows,
                dirty);
    }

    private Map<Long, SiteRef> sites() {
        return sites(jdbc);
    }

    /** Every site with its attributes, by id. */
    static Map<Long, SiteRef> sites(JdbcTemplate jdbc) {
        Map<Long, String> names = new LinkedHashMap<>();
        jdbc.query("SELECT id, name FROM site", rs -> {
            names.put(rs.getLong(1), rs.getString(2));
        });
        Map<Long, Map<String, String>> attrs = new HashMap<>();
        jdbc.query("SELECT s.id, a.key, a.value #>> '{}' FROM site s, jsonb_each(s.attributes) a", rs -> {
            attrs.computeIfAbsent(rs.getLong(1), k -> new HashMap<>()).put(rs.getString(2), rs.getString(3));
        });
        Map<Long, SiteRef> out = new LinkedHashMap<>();
        names.forEach((id, n) -> out.put(id, new SiteRef(id, n, attrs.getOrDefault(id, Map.of()))));
        return out;
    }

    /** Each site's first enabled endpoint (its base directory URL). */
    private Map<Long, String> endpoints() {
        Map<Long, String> out = new HashMap<>();
        jdbc.query("SELECT DISTINCT ON (site_id) site_id, url FROM site_endpoint WHERE enabled ORDER BY site_id, id", rs -> {
            out.put(rs.getLong(1), rs.getString(2));
        });
        return out;
    }

    private ReplicaPlanner planner(Map<Long, SiteRef> sites) {
        SiteRef home = sites.values().stream().filter(s -> s.name().equals(props.homeSite())).findFirst()
                .orElse(new SiteRef(-1, props.homeSite(), Map.of()));
        List<ReplicaPlanner.Link> links = jdbc.query("SELECT name, side_a, side_b FROM replication_link ORDER BY name",
                (rs, i) -> new ReplicaPlanner.Link(rs.getString(1), SiteExpression.parse(rs.getString(2)), SiteExpression.parse(rs.getString(3))));
        return new ReplicaPlanner(home, links);
    }

    /** A file's URL at a site: the endpoint's base directory plus the file's name ({@link FileUrls#under}). */
    static URI url(String base, String name) {
        return FileUrls.under(base, name);
    }

    Duration passInterval() {
        return props.passInterval();
    }
}
