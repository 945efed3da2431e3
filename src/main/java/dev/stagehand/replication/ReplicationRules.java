package dev.stagehand.replication;

import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import dev.stagehand.recall.StageRequests;
import dev.stagehand.recall.StageRequests.FileChange;
import dev.stagehand.recall.StageRequests.RequestState;
import dev.stagehand.transfer.TransferQueue;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;
import org.springframework.transaction.annotation.Transactional;

/**
 * Replication rules, replicas, bottleneck links and dataset completeness: what the API and console call.
 * The {@link ReplicationEngine} does the work the rules ask for.
 */
@Component
public class ReplicationRules {

    /**
     * A new rule.
     *
     * @param dataset  dataset name (catalog)
     * @param copies   how many sites must hold a copy (1-100)
     * @param sites    site expression ({@link SiteExpression}) the copies' sites must match
     * @param source   preferred source sites (expression), or null for any
     * @param lifetime how long the rule holds; null: until deleted
     * @param schedule Quartz cron expression ("0 0 2 * * ?": nightly at 02:00); null: replicate continuously
     * @param owner    who asked (null: anonymous)
     */
    public record NewRule(String dataset, int copies, String sites, String source, Duration lifetime, String schedule,
                          String owner) {}

    public record Rule(long id, String dataset, int copies, String sites, String source, String schedule, String state,
                       String note, String owner, Instant expiresAt, Instant createdAt, List<String> chosenSites) {}

    /**
     * Completeness of a dataset at one site; {@code state} is OK, REPLICATING or STUCK (no replica done for
     * {@code stuck-after}, or one failed for good).
     */
    public record Completeness(String dataset, String site, long filesTotal, long filesDone, long filesVerified,
                               long filesFailed, long bytesTotal, long bytesDone, String state, String reason,
                               Instant lastProgressAt, Instant updatedAt) {
        public double percentDone() {
            return filesTotal == 0 ? 100.0 : 100.0 * filesDone / filesTotal;
        }
    }

    public record Replica(String file, String site, String state, String source, int attempts, String lastError,
                          String waitingFor, String adler32, Instant updatedAt, Instant doneAt) {}

    public record BottleneckLink(String name, String sideA, String sideB) {}

    /**
     * Outcome of declaring replicas lost or bad: how many will be made again, how many are lost for good (no rule wants
     * them), names not known at the site, and names whose copy is on its way from tape there now (left to arrive: that
     * copy writes the file at the site anew, and its Adler32 is checked when it ends).
     */
    public record Declared(int recreating, int dropped, List<String> unknown, List<String> underway) {}

    static final Duration MAX_LIFETIME = Duration.ofDays(36_500);

    private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(ReplicationRules.class);

    private static final Pattern WORD = Pattern.compile("[A-Za-z0-9_.:+-]{1,64}");

    private final JdbcTemplate jdbc;
    private final ReplicationSchedules schedules;
    private final ReplicationProperties props;
    private final TransferQueue transfers;
    private final StageRequests recalls;

    public ReplicationRules(JdbcTemplate jdbc, ReplicationSchedules schedules, ReplicationProperties props,
                            TransferQueue transfers, StageRequests recalls) {
        this.jdbc = jdbc;
        this.schedules = schedules;
        this.props = props;
        this.transfers = transfers;
        this.recalls = recalls;
    }

    /** Creates a rule; a scheduled one gets its Quartz job (created in the same transaction). */
    @Transactional
    public Rule create(NewRule r) {
        if (r.dataset() == null || r.dataset().isBlank()) throw ReplicationRejected.invalid("dataset", "required");
        if (r.copies() < 1 || r.copies() > 100) throw ReplicationRejected.invalid("copies", "must be between 1 and 100, got " + r.copies());
        SiteExpression sites = parse("sites", r.sites());
        if (r.source() != null) parse("source", r.source());
        if (r.lifetime() != null && (r.lifetime().isNegative() || r.lifetime().isZero()))
            throw ReplicationRejected.invalid("lifetime", "must be positive");
        // the database's timestamps end in 294276 AD: a longer one failed there (a 500)
        if (r.lifetime() != null && r.lifetime().compareTo(MAX_LIFETIME) > 0)
            throw ReplicationRejected.invalid("lifetime", "must be at most 100 years (P36500D)");
        if (r.schedule() != null) ReplicationSchedules.checkCron(r.schedule());
        String owner = r.owner() == null ? "anonymous" : r.owner();
        // the dataset's row locked (not against its files' inserts): two creates of one rule at once see each other
        List<Long> dataset = jdbc.queryForList("SELECT id FROM dataset WHERE name = ? FOR NO KEY UPDATE", Long.class, r.dataset());
        if (dataset.isEmpty()) throw ReplicationRejected.notFound("dataset", "no dataset " + r.dataset());
        // as Rucio (InvalidRSEExpression, InsufficientTargetRSEs): a rule no site can serve, most often a typo in
        // its expression, was accepted with a note nobody read. A rule made short later (a chosen site deleted)
        // still takes a site that appears
        long matching = ReplicationEngine.sites(jdbc).values().stream().filter(sites::matches).count();
        if (matching < r.copies())
            throw ReplicationRejected.invalid("sites", "site expression '" + r.sites().strip() + "' matches " + matching
                    + (matching == 1 ? " site" : " sites") + "; the rule asks for " + r.copies() + (r.copies() == 1 ? " copy" : " copies")
                    + ", each at a site of its own");
        // the same rule again (a client retrying a POST whose answer it lost): refused, as Rucio's DuplicateRule
        List<Long> same = jdbc.queryForList("""
                SELECT id FROM replication_rule WHERE dataset_id = ? AND state = 'active' AND copies = ? AND site_expression = ?
                   AND source_expression IS NOT DISTINCT FROM ? AND schedule IS NOT DISTINCT FROM ? AND owner = ? ORDER BY id""",
                Long.class, dataset.getFirst(), r.copies(), r.sites().strip(), r.source() == null ? null : r.source().strip(),
                r.schedule() == null ? null : r.schedule().strip(), owner);
        if (!same.isEmpty())
            throw ReplicationRejected.conflict("sites", "rule " + same.getFirst() + " of " + owner + " already asks for " + r.copies()
                    + " copies of " + r.dataset() + " at '" + r.sites().strip() + "'");
        long id = jdbc.queryForObject("""
                INSERT INTO replication_rule (dataset_id, copies, site_expression, source_expression, schedule, owner, expires_at)
                VALUES (?, ?, ?, ?, ?, ?, CASE WHEN ?::bigint IS NULL THEN NULL ELSE now() + make_interval(secs => ?::bigint) END)
                RETURNING id""", Long.class, dataset.getFirst(), r.copies(), r.sites().strip(),
                r.source() == null ? null : r.source().strip(), r.schedule() == null ? null : r.schedule().strip(), owner,
                r.lifetime() == null ? null : r.lifetime().toSeconds(), r.lifetime() == null ? null : r.lifetime().toSeconds());
        if (r.schedule() != null) schedules.schedule(id, r.schedule().strip());
        return get(id).orElseThrow();
    }

    private static SiteExpression parse(String field, String text) {
        try {
            return SiteExpression.parse(text);
        } catch (IllegalArgumentException e) {
            throw ReplicationRejected.invalid(field, e.getMessage());
        }
    }

    /** The experiment of a dataset: empty when the dataset is unknown, an empty string when it has none. */
    public Optional<String> experimentOf(String dataset) {
        return jdbc.query("SELECT coalesce(experiment, '') FROM dataset WHERE name = ?", (rs, i) -> rs.getString(1), dataset)
                .stream().findFirst();
    }

    /**
     * The experiment of each rule's dataset ('' when it has none), by rule id: one query where a list of rules or
     * schedules is filtered by the caller's experiments (it was one look-up per rule, every 2 s on the console). Of
     * the rules {@code ids} only: a site's schedules are a few of its rules.
     */
    public Map<Long, String> experimentByRule(java.util.Collection<Long> ids) {
        Map<Long, String> out = new java.util.HashMap<>();
        jdbc.query("SELECT r.id, coalesce(d.experiment, '') FROM replication_rule r JOIN dataset d ON d.id = r.dataset_id"
                        + " WHERE r.id = ANY(?)",
                rs -> {
                    out.put(rs.getLong(1), rs.getString(2));
                }, (Object) ids.toArray(Long[]::new));
        return out;
    }

    public Optional<Rule> get(long id) {
        return rules("WHERE r.id = ?", id).stream().findFirst();
    }

    /** A page of rules: {@code truncated} when there are more than it holds. */
    public record RulePage(List<Rule> rules, boolean truncated) {}

    /**
     * Rules on the datasets of {@code experiments} (null: every rule), oldest first, at most {@code limit}: filtered and
     * cut in the query. The console's datasets page read every rule (each with its chosen sites), and every rule's
     * experiment, at each 2 s refresh, to show one experiment's few.
     */
    public RulePage list(java.util.Collection<String> experiments, int limit) {
        return list(null, experiments, 0, limit);
    }

    /**
     * A page of the rules of {@code dataset} (null: any) on the datasets of {@code experiments} (null: every rule),
     * in id order after rule {@code after} (0: from the first), at most {@code limit}: filtered and cut in the query,
     * by the rules' key. The API read every rule and filtered by experiment in Java at each call.
     */
    public RulePage list(String dataset, java.util.Collection<String> experiments, long after, int limit) {
        String[] of = experiments == null ? null : experiments.toArray(String[]::new);
        List<Rule> rows = select("""
                WHERE r.id > ? AND (?::text IS NULL OR d.name = ?) AND (?::text[] IS NULL OR d.experiment = ANY (?::text[]))
                ORDER BY r.id LIMIT ?""", after, dataset, dataset, of, of, limit + 1);
        return rows.size() > limit ? new RulePage(List.copyOf(rows.subList(0, limit)), true) : new RulePage(rows, false);
    }

    private List<Rule> rules(String where, Object... args) {
        return select(where + " ORDER BY r.id", args);
    }

    private List<Rule> select(String whereAndOrder, Object... args) {
        return jdbc.query("""
                SELECT r.*, d.name AS dataset,
                       ARRAY(SELECT s.name FROM replication_rule_site rs JOIN site s ON s.id = rs.site_id
                              WHERE rs.rule_id = r.id ORDER BY s.name) AS chosen
                  FROM replication_rule r JOIN dataset d ON d.id = r.dataset_id""" + " " + whereAndOrder,
                (rs, i) -> new Rule(rs.getLong("id"), rs.getString("dataset"), rs.getInt("copies"),
                        rs.getString("site_expression"), rs.getString("source_expression"), rs.getString("schedule"),
                        rs.getString("state"), rs.getString("note"), rs.getString("owner"), instant(rs.getTimestamp("expires_at")),
                        instant(rs.getTimestamp("created_at")), List.of((String[]) rs.getArray("chosen").getArray())), args);
    }

    /**
     * Deletes a rule and its schedule. Its replicas stay (at the sites and in the records) and keep serving
     * other rules that want them; they just no longer hold files in the buffer for this rule. The copies on
     * their way that no other active rule wants are stopped, as Rucio does: their transfers are cancelled, and
     * so are their files in the recall requests made for them (a copy from tape), and they wait, wanted by no
     * rule (an operator deletes a rule to stop it; its queue of transfers and its recalls went on). A transfer
     * or recall that ended meanwhile is followed as any other.
     */
    @Transactional
    public boolean delete(long id) {
        schedules.unschedule(id);
        List<InFlight> stop = inFlightOnlyFor(jdbc, id);
        boolean gone = jdbc.update("DELETE FROM replication_rule WHERE id = ?", id) == 1;
        stop(jdbc, transfers, recalls, stop);
        jdbc.update("""
                DELETE FROM dataset_site_status s WHERE NOT EXISTS (
                    SELECT 1 FROM replication_rule r JOIN replication_rule_site rs ON rs.rule_id = r.id
                     WHERE r.dataset_id = s.dataset_id AND rs.site_id = s.site_id)""");
        return gone;
    }

    /**
     * A copy on its way: by a transfer of replication's own ({@code recall} null), or from tape by the recall
     * request {@code recall} (staging, or its transfer handed on by the recall side).
     */
    record InFlight(long file, long site, Long job, UUID recall, String name) {}

    private static final org.springframework.jdbc.core.RowMapper<InFlight> IN_FLIGHT = (rs, i) -> new InFlight(rs.getLong(1),
            rs.getLong(2), rs.getObject(3) == null ? null : rs.getLong(3), rs.getObject(4, UUID.class), rs.getString(5));

    /** The columns of {@link InFlight} from replica r and file f, for the copies on their way. */
    static final String IN_FLIGHT_COLUMNS = "r.file_id, r.site_id, r.transfer_job_id, r.stage_request_id, f.name";
    static final String IN_FLIGHT_STATE = """
            ((r.state = 'transferring' AND r.transfer_job_id IS NOT NULL AND r.stage_request_id IS NULL)
             OR (r.state IN ('staging', 'transferring') AND r.stage_request_id IS NOT NULL))""";

    /** The copies rule {@code ruleId} wants that are on their way and that no other active rule wants; locked. */
    static List<InFlight> inFlightOnlyFor(JdbcTemplate jdbc, long ruleId) {
        return jdbc.query("""
                SELECT %s FROM replication_rule_replica x
                  JOIN replica r ON r.file_id = x.file_id AND r.site_id = x.site_id JOIN file f ON f.id = r.file_id
                 WHERE x.rule_id = ? AND %s
                   AND NOT EXISTS (SELECT 1 FROM replication_rule_replica o JOIN replication_rule ru ON ru.id = o.rule_id
                                    WHERE o.file_id = r.file_id AND o.site_id = r.site_id AND ru.id <> x.rule_id AND ru.state = 'active')
                   AND NOT EXISTS (SELECT 1 FROM replication_rule ru JOIN replication_rule_site rs ON rs.rule_id = ru.id
                                     JOIN file w ON w.dataset_id = ru.dataset_id
                                    WHERE w.id = r.file_id AND rs.site_id = r.site_id AND ru.id <> x.rule_id AND ru.state = 'active')
                   FOR UPDATE OF r""".formatted(IN_FLIGHT_COLUMNS, IN_FLIGHT_STATE), IN_FLIGHT, ruleId);
    }

    /** The copies on their way to site {@code siteId}; locked. */
    static List<InFlight> inFlightTo(JdbcTemplate jdbc, long siteId) {
        return jdbc.query("SELECT " + IN_FLIGHT_COLUMNS + " FROM replica r JOIN file f ON f.id = r.file_id WHERE r.site_id = ? AND "
                + IN_FLIGHT_STATE + " FOR UPDATE OF r", IN_FLIGHT, siteId);
    }

    /**
     * Stops {@code copies}: their transfers are cancelled, their recall files too; each one stopped waits as
     * pending (a transfer or recall ended meanwhile is followed).
     */
    static void stop(JdbcTemplate jdbc, TransferQueue transfers, StageRequests recalls, List<InFlight> copies) {
        for (InFlight f : copies) {
            if (f.recall() != null) continue;
            if (!transfers.cancel(f.job())) continue; // ended: the pass follows it
            jdbc.update("""
                    UPDATE replica SET state = 'pending', source = NULL, transfer_job_id = NULL, waiting_for = NULL,
                           next_attempt_at = NULL, updated_at = now()
                     WHERE file_id = ? AND site_id = ? AND state = 'transferring' AND transfer_job_id = ?""", f.file(), f.site(), f.job());
        }
        for (InFlight f : cancelRecalls(jdbc, recalls, copies)) {
            jdbc.update("""
                    UPDATE replica SET state = 'pending', source = NULL, transfer_job_id = NULL, stage_request_id = NULL,
                           waiting_for = NULL, next_attempt_at = NULL, updated_at = now()
                     WHERE file_id = ? AND site_id = ? AND stage_request_id = ?""", f.file(), f.site(), f.recall());
        }
    }

    /**
     * Cancels the files of the recall requests that {@code copies} wait for (those with a recall); the recall
     * side then cancels a transfer it handed on for one. Returns those cancelled: not one whose recall or its
     * transfer ended meanwhile (the pass follows it), nor one of a request already finished or gone.
     */
    static List<InFlight> cancelRecalls(JdbcTemplate jdbc, StageRequests recalls, List<InFlight> copies) {
        Map<UUID, List<InFlight>> byRequest = new LinkedHashMap<>();
        for (InFlight f : copies) if (f.recall() != null) byRequest.computeIfAbsent(f.recall(), k -> new ArrayList<>()).add(f);
        List<InFlight> cancelled = new ArrayList<>();
        for (var e : byRequest.entrySet()) {
            // locked first, and only an open request's own files named: the cancel cannot refuse (its refusal
            // would roll back the caller's whole transaction)
            List<String> state = jdbc.queryForList("SELECT state FROM stage_request WHERE id = ? FOR UPDATE", String.class, e.getKey());
            if (state.isEmpty() || RequestState.ofDb(state.getFirst()).finished()) continue;
            Set<Long> held = Set.copyOf(jdbc.queryForList("SELECT file_id FROM stage_request_file WHERE request_id = ? AND file_id = ANY (?)",
                    Long.class, e.getKey(), e.getValue().stream().map(InFlight::file).toArray(Long[]::new)));
            // one whose transfer (handed on by the recall side) is done arrived: followed as any other
            Set<Long> arrived = Set.copyOf(jdbc.queryForList("SELECT id FROM transfer_job WHERE id = ANY (?) AND state = 'done'",
                    Long.class, (Object) e.getValue().stream().map(InFlight::job).filter(java.util.Objects::nonNull).toArray(Long[]::new)));
            List<InFlight> named = e.getValue().stream()
                    .filter(f -> held.contains(f.file()) && (f.job() == null || !arrived.contains(f.job()))).toList();
            if (named.isEmpty()) continue;
            FileChange change = recalls.cancel(e.getKey(), named.stream().map(InFlight::name).toList());
            Set<String> ended = change.unchanged().stream().map(StageRequests.Unchanged::path).collect(Collectors.toSet());
            named.stream().filter(f -> !ended.contains(f.name())).forEach(cancelled::add);
        }
        return cancelled;
    }

    /** Completeness of {@code dataset} at every site a rule wants it at, site by name. */
    public List<Completeness> completeness(String dataset) {
        requireDataset(dataset);
        return jdbc.query("""
                SELECT d.name AS dataset, s.name AS site, c.* FROM dataset_site_status c
                  JOIN dataset d ON d.id = c.dataset_id JOIN site s ON s.id = c.site_id
                 WHERE d.name = ? ORDER BY s.name""", this::completenessRow, dataset);
    }

    /** The first rows of the completeness matrix; {@code truncated}: more rows follow them. */
    public record Matrix(List<Completeness> rows, boolean truncated) {}

    /**
     * Completeness of every dataset at every site a rule wants it at (the console's replication matrix), by
     * dataset and site, at most {@code limit} rows; of the datasets of {@code experiments} only (null: all).
     * The experiments are filtered here, before the limit: filtered after it, a user's rows beyond the first
     * {@code limit} of all experiments were never shown.
     */
    public Matrix completenessAll(java.util.Collection<String> experiments, int limit) {
        String[] of = experiments == null ? null : experiments.toArray(String[]::new);
        List<Completeness> rows = jdbc.query("""
                SELECT d.name AS dataset, s.name AS site, c.* FROM dataset_site_status c
                  JOIN dataset d ON d.id = c.dataset_id JOIN site s ON s.id = c.site_id
                 WHERE ?::text[] IS NULL OR d.experiment = ANY (?::text[])
                 ORDER BY d.name, s.name LIMIT ?""", this::completenessRow, of, of, limit + 1);
        return rows.size() > limit ? new Matrix(List.copyOf(rows.subList(0, limit)), true) : new Matrix(rows, false);
    }

    private Completeness completenessRow(ResultSet rs, int i) throws SQLException {
        long total = rs.getLong("files_total");
        long done = rs.getLong("files_done");
        Instant progress = instant(rs.getTimestamp("last_progress_at"));
        String reason = rs.getString("reason");
        // the state is judged on read with this instance's stuck-after, so it is current between passes
        String state;
        long failed = rs.getLong("files_failed");
        if (done >= total) {
            state = "OK";
            reason = null;
        } else if (failed > 0) {
            // nothing makes these again until an operator retries them (Rucio's STUCK lock): no clock to wait for
            state = "STUCK";
            reason = failed + (failed == 1 ? " replica" : " replicas") + " failed for good (retry them)"
                    + (reason == null ? "" : "; last: " + reason);
        } else if (progress.plus(props.stuckAfter()).isBefore(Instant.now())) {
            state = "STUCK";
            reason = "no replica done since " + progress + (reason == null ? "" : "; last: " + reason);
        } else {
            state = "REPLICATING";
        }
        return new Completeness(rs.getString("dataset"), rs.getString("site"), total, done, rs.getLong("files_verified"),
                failed, rs.getLong("bytes_total"), rs.getLong("bytes_done"), state, reason, progress,
                instant(rs.getTimestamp("updated_at")));
    }

    /** Replicas of a dataset's files, optionally at one site and in one state, by file name. */
    public List<Replica> replicas(String dataset, String site, String state, int offset, int limit) {
        requireDataset(dataset);
        if (site != null) siteId(site);
        if (state != null && !REPLICA_STATES.contains(state))
            throw ReplicationRejected.invalid("state", "unknown replica state '" + state + "'; one of " + REPLICA_STATES);
        return jdbc.query("""
                SELECT f.name AS file, s.name AS site, r.* FROM replica r JOIN file f ON f.id = r.file_id
                  JOIN dataset d ON d.id = f.dataset_id JOIN site s ON s.id = r.site_id
                 WHERE d.name = ? AND (?::text IS NULL OR s.name = ?) AND (?::text IS NULL OR r.state = ?)
                 ORDER BY f.name, s.name OFFSET ? LIMIT ?""",
                (rs, i) -> new Replica(rs.getString("file"), rs.getString("site"), rs.getString("state"), rs.getString("source"),
                        rs.getInt("attempts"), rs.getString("last_error"), rs.getString("waiting_for"), rs.getString("adler32"),
                        instant(rs.getTimestamp("updated_at")), instant(rs.getTimestamp("done_at"))),
                dataset, site, site, state, state, offset, limit);
    }

    /**
     * A change of a replica (V61): its state {@code from} (null: it was made) {@code to} (null: it was removed), its
     * attempts after it, and the error that change recorded (a failed attempt's, a declaration's), if any.
     */
    public record ReplicaEvent(long id, String file, String site, Instant at, String from, String to, Integer attempts,
                               String error) {}

    /**
     * The events of a dataset's replicas, optionally at one site and of one file, newest first, at most {@code limit}.
     * Kept for {@code history-keep}. Files deleted and sites removed are named as they were (V68): their replicas'
     * removals, with the reason, and their earlier events; a removed site may be asked for by its name.
     */
    public List<ReplicaEvent> history(String dataset, String site, String file, int limit) {
        List<Object> args = new ArrayList<>(List.of(requireDataset(dataset)));
        StringBuilder where = new StringBuilder("e.dataset_id = ?");
        // the names' ids first (a live one, a removed one's: V68), then a query of this case's conditions only: under
        // "? IS NULL OR", a file's ids were a filter on a walk of all the dataset's events; now their index (V73)
        if (site != null) {
            Long[] ids = ids("SELECT id FROM site WHERE name = ? UNION SELECT site_id FROM replica_event_site WHERE name = ?", site);
            if (ids.length == 0) throw ReplicationRejected.notFound("site", "no site " + site);
            where.append(" AND e.site_id = ANY (?)");
            args.add(ids);
        }
        if (file != null) {
            Long[] ids = ids("SELECT id FROM file WHERE name = ? UNION SELECT file_id FROM replica_event_file WHERE name = ?", file);
            if (ids.length == 0) return List.of();
            where.append(" AND e.file_id = ANY (?)");
            args.add(ids);
        }
        args.add(limit);
        return jdbc.query("""
                SELECT e.*, coalesce(f.name, rf.name) AS file, coalesce(s.name, rs.name) AS site FROM replica_event e
                  LEFT JOIN file f ON f.id = e.file_id LEFT JOIN replica_event_file rf ON f.id IS NULL AND rf.file_id = e.file_id
                  LEFT JOIN site s ON s.id = e.site_id LEFT JOIN replica_event_site rs ON s.id IS NULL AND rs.site_id = e.site_id
                 WHERE\s""" + where + " ORDER BY e.id DESC LIMIT ?",
                (rs, i) -> new ReplicaEvent(rs.getLong("id"), rs.getString("file"), rs.getString("site"), instant(rs.getTimestamp("at")),
                        rs.getString("from_state"), rs.getString("to_state"), (Integer) rs.getObject("attempts"), rs.getString("error")),
                args.toArray());
    }

    private Long[] ids(String sql, String name) {
        return jdbc.queryForList(sql, Long.class, name, name).toArray(Long[]::new);
    }

    /**
     * Records that {@code files} already exist at {@code site} (e.g. the experiment's own storage), as verified
     * replicas: sources for copies elsewhere. Returns how many were recorded; unknown file names are an error.
     */
    @Transactional
    public int register(String site, List<String> files) {
        long siteId = siteId(site);
        List<String> unknown = unknownFiles(files);
        if (!unknown.isEmpty()) throw ReplicationRejected.invalid("files", "not in the catalog: " + String.join(", ", unknown));
        int registered = jdbc.update("""
                INSERT INTO replica (file_id, site_id, state, source, adler32, done_at)
                SELECT f.id, ?, 'verified', 'registered', f.adler32, now() FROM file f WHERE f.name = ANY (?)
                ON CONFLICT (file_id, site_id) DO UPDATE SET state = 'verified', source = 'registered', last_error = NULL,
                    waiting_for = NULL, adler32 = EXCLUDED.adler32, done_at = now(), updated_at = now()""",
                siteId, files.toArray(String[]::new));
        // copies elsewhere waiting for a source are looked at at the next pass, not at their next look
        jdbc.update("""
                UPDATE replica r SET next_attempt_at = NULL FROM file f
                 WHERE f.name = ANY (?) AND r.file_id = f.id AND r.state = 'pending' AND r.waiting_for IS NOT NULL""",
                (Object) files.toArray(String[]::new));
        return registered;
    }

    /**
     * Declares replicas of {@code files} at {@code site} lost or bad (corrupt): they stop being sources, and
     * each one a rule still wants goes back to pending, so the engine makes it again from another site, the
     * local copy or tape. A transfer of replication's own still running for one is cancelled. One on its way from
     * tape (staging, or transferring by the transfer its recall request handed on) is left to arrive and answered as
     * underway: nothing is at the site yet but what that copy writes anew. Made pending, it was sent a second time to
     * the same path; and the recall's transfer, cancelled from here, failed its recall request (and its tape read).
     */
    @Transactional
    public Declared declare(String site, List<String> files, String reason) {
        long siteId = siteId(site);
        if (files == null || files.isEmpty()) throw ReplicationRejected.invalid("files", "name at least one file");
        String why = "declared " + (reason == null || reason.isBlank() ? "lost" : reason.strip());
        String[] names = files.toArray(String[]::new);
        List<String> unknown = jdbc.queryForList("""
                SELECT n FROM unnest(?::text[]) n WHERE NOT EXISTS (
                    SELECT 1 FROM replica r JOIN file f ON f.id = r.file_id WHERE f.name = n AND r.site_id = ?)""",
                String.class, names, siteId);
        // locked: the pass does not move them (a staging one to transferring) between this look and the updates below
        List<String> underway = jdbc.queryForList("""
                SELECT f.name FROM replica r JOIN file f ON f.id = r.file_id
                 WHERE f.name = ANY (?) AND r.site_id = ? AND """ + FROM_TAPE + " ORDER BY f.name FOR UPDATE OF r",
                String.class, names, siteId);
        for (long job : jdbc.queryForList("""
                SELECT r.transfer_job_id FROM replica r JOIN file f ON f.id = r.file_id
                 WHERE f.name = ANY (?) AND r.site_id = ? AND r.state = 'transferring' AND r.transfer_job_id IS NOT NULL
                   AND NOT\s""" + FROM_TAPE, Long.class, names, siteId)) {
            transfers.cancel(job);
        }
        int recreating = jdbc.update("""
                UPDATE replica r SET state = 'pending', attempts = 0, last_error = ?, waiting_for = NULL, next_attempt_at = NULL,
                       adler32 = NULL, done_at = NULL, updated_at = now()
                  FROM file f WHERE f.id = r.file_id AND f.name = ANY (?) AND r.site_id = ? AND NOT\s""" + FROM_TAPE + """

                   AND EXISTS (SELECT 1 FROM replication_rule_replica x JOIN replication_rule ru ON ru.id = x.rule_id
                                WHERE x.file_id = r.file_id AND x.site_id = r.site_id AND ru.state = 'active')""",
                why, names, siteId);
        int dropped = jdbc.update("""
                UPDATE replica r SET state = 'lost', last_error = ?, waiting_for = NULL, adler32 = NULL, done_at = NULL, updated_at = now()
                  FROM file f WHERE f.id = r.file_id AND f.name = ANY (?) AND r.site_id = ? AND r.state <> 'pending' AND NOT\s"""
                + FROM_TAPE, why, names, siteId);
        return new Declared(recreating, dropped, unknown, underway);
    }

    /** Over replica {@code r}: its copy is on its way from tape (its recall request stages it, or sends it by a transfer). */
    private static final String FROM_TAPE = "(r.state = 'staging' OR (r.state = 'transferring' AND r.stage_request_id IS NOT NULL))";

    /**
     * Puts failed replicas (of a dataset, optionally at one site) back to pending with fresh attempts. Their last error
     * goes: it was the failure of the attempts given up, and kept on a replica queued again it showed as why the copy
     * is not made (the replicas list, the datasets page's "why"). The errors retried are logged; each stays in the
     * replica's history (its events, V61).
     */
    public int retryFailed(String dataset, String site) {
        requireDataset(dataset);
        if (site != null) siteId(site);
        List<String> errors = jdbc.queryForList("""
                UPDATE replica r SET state = 'pending', attempts = 0, next_attempt_at = NULL, last_error = NULL, waiting_for = NULL,
                       updated_at = now()
                  FROM (SELECT r.file_id, r.site_id, r.last_error FROM replica r JOIN file f ON f.id = r.file_id
                          JOIN dataset d ON d.id = f.dataset_id JOIN site s ON s.id = r.site_id
                         WHERE r.state = 'failed' AND d.name = ? AND (?::text IS NULL OR s.name = ?) FOR UPDATE OF r) o
                 WHERE r.file_id = o.file_id AND r.site_id = o.site_id AND r.state = 'failed'
                RETURNING coalesce(o.last_error, '(no error recorded)')""", String.class, dataset, site, site);
        if (!errors.isEmpty()) {
            Map<String, Long> byError = errors.stream().collect(Collectors.groupingBy(e -> e, java.util.TreeMap::new, Collectors.counting()));
            log.info("replication: {} failed replica(s) of dataset {}{} retried by an operator; their last errors: {}", errors.size(),
                    dataset, site == null ? "" : " at site " + site, byError.entrySet().stream().limit(5)
                            .map(e -> e.getValue() + " x " + e.getKey()).collect(Collectors.joining("; "))
                            + (byError.size() > 5 ? "; ..." : ""));
        }
        return errors.size();
    }

    /** Declares (or replaces) a bottleneck link between the sites matching {@code sideA} and those matching {@code sideB}. */
    public BottleneckLink putLink(String name, String sideA, String sideB) {
        if (name == null || !WORD.matcher(name).matches())
            throw ReplicationRejected.invalid("name", "a link name is 1-64 of A-Z a-z 0-9 _ . : + -");
        parse("sideA", sideA);
        parse("sideB", sideB);
        jdbc.update("""
                INSERT INTO replication_link (name, side_a, side_b) VALUES (?, ?, ?)
                ON CONFLICT (name) DO UPDATE SET side_a = EXCLUDED.side_a, side_b = EXCLUDED.side_b""",
                name, sideA.strip(), sideB.strip());
        return new BottleneckLink(name, sideA.strip(), sideB.strip());
    }

    public List<BottleneckLink> links() {
        return jdbc.query("SELECT name, side_a, side_b FROM replication_link ORDER BY name",
                (rs, i) -> new BottleneckLink(rs.getString(1), rs.getString(2), rs.getString(3)));
    }

    public boolean deleteLink(String name) {
        return jdbc.update("DELETE FROM replication_link WHERE name = ?", name) == 1;
    }

    /** Replica states, as the replica table's check constraint has them. */
    static final List<String> REPLICA_STATES = List.of("pending", "staging", "transferring", "done", "verified", "failed", "lost");

    private long requireDataset(String dataset) {
        List<Long> id = jdbc.queryForList("SELECT id FROM dataset WHERE name = ?", Long.class, dataset);
        if (id.isEmpty()) throw ReplicationRejected.notFound("dataset", "no dataset " + dataset);
        return id.getFirst();
    }

    private long siteId(String site) {
        List<Long> id = jdbc.queryForList("SELECT id FROM site WHERE name = ?", Long.class, site);
        if (id.isEmpty()) throw ReplicationRejected.notFound("site", "no site " + site);
        return id.getFirst();
    }

    private List<String> unknownFiles(List<String> files) {
        if (files == null || files.isEmpty()) throw ReplicationRejected.invalid("files", "name at least one file");
        return new ArrayList<>(jdbc.queryForList("SELECT n FROM unnest(?::text[]) n WHERE NOT EXISTS (SELECT 1 FROM file f WHERE f.name = n)",
                String.class, (Object) files.toArray(String[]::new)));
    }

    private static Instant instant(Timestamp t) {
        return t == null ? null : t.toInstant();
    }
}
