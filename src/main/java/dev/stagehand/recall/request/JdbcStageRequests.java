package dev.stagehand.recall.request;

import dev.stagehand.cache.CacheEntry;
import dev.stagehand.cache.DiskCache;
import dev.stagehand.catalog.FileNames;
import dev.stagehand.recall.StageRequestRejected;
import dev.stagehand.platform.EntryError;
import dev.stagehand.recall.StageRequestRejected.Kind;
import dev.stagehand.recall.StageRequests;
import dev.stagehand.transfer.FileUrls;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.regex.Pattern;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.RowMapper;
import org.springframework.stereotype.Service;
import org.springframework.transaction.support.TransactionTemplate;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.json.JsonMapper;

/**
 * {@link StageRequests} on PostgreSQL. Submission checks everything it can without the database first,
 * then resolves all names with one {@code unnest(...) WITH ORDINALITY} query (unknown names found by the
 * same query) and inserts the files with one {@code INSERT ... SELECT} from an id array.
 */
@Service
class JdbcStageRequests implements StageRequests {

    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9._+-]{1,64}");
    private static final Pattern OWNER = Pattern.compile("[A-Za-z0-9._@+=-]{1,128}");
    private static final int MAX_CLIENT_ID = 200;
    private static final int MAX_DESTINATION = 2048;
    private static final String SUMMARY_COLUMNS = "r.id, r.client_request_id, r.owner, r.experiment, r.priority, "
            + "r.destination, r.disk_lifetime_s, r.state, r.file_count, r.created_at, r.started_at, r.completed_at, "
            + "r.eta_at, r.eta_unknown";

    private final JdbcTemplate jdbc;
    private final TransactionTemplate tx;
    private final StageRequestProperties props;
    private final RequestSettlement settlement;
    private final DiskCache cache;

    private final ApplicationEventPublisher events;
    JdbcStageRequests(JdbcTemplate jdbc, TransactionTemplate tx, StageRequestProperties props, RequestSettlement settlement,
                      DiskCache cache, ApplicationEventPublisher events) {
        this.events = events;
        this.jdbc = jdbc;
        this.cache = cache;
        this.tx = tx;
        this.props = props;
        this.settlement = settlement;
    }

    // ---- submit --------------------------------------------------------------------------------------

    @Override
    public List<EntryError> check(String owner, NewStageRequest req) {
        List<EntryError> errors = new ArrayList<>();
        checkFields(owner, req, errors);
        if (req.files() != null && req.files().size() <= MAX_FILES) {
            checkNames(req.files(), errors);
            checkSendable(req.destination(), req.files(), errors);
        }
        return errors;
    }

    @Override
    public Submission submit(String owner, NewStageRequest req) {
        return submit(owner, req, null);
    }

    @Override
    public Submission submitFailingAbsent(String owner, NewStageRequest req, Set<String> absent) {
        return submit(owner, req, Objects.requireNonNull(absent));
    }

    /** {@code absent} null: a file not in the catalog refuses the request; else such files, and those in it, fail alone. */
    private Submission submit(String owner, NewStageRequest req, Set<String> absent) {
        List<EntryError> errors = new ArrayList<>();
        checkFields(owner, req, errors);
        List<String> files = req.files();
        if (files == null) {
            errors.add(EntryError.field("files", "required: a list of logical file names"));
        } else if (files.isEmpty()) {
            errors.add(EntryError.field("files", "empty: name at least one file"));
        } else if (files.size() > MAX_FILES) {
            throw new StageRequestRejected(Kind.TOO_LARGE, "a request may name at most " + MAX_FILES + " files, this one names "
                    + files.size(), List.of(EntryError.field("files", files.size() + " files; at most " + MAX_FILES)));
        } else {
            checkNames(files, errors);
            checkSendable(req.destination(), files, errors);
        }
        if (!errors.isEmpty()) throw invalid(errors);
        String fingerprint = fingerprint(req);
        Submission done = tx.execute(status -> {
            if (req.clientRequestId() != null) {
                Optional<Submission> earlier = earlier(owner, req.clientRequestId(), fingerprint);
                if (earlier.isPresent()) return earlier.get();
            }
            long[] ids = resolve(files, errors);
            List<Integer> missing = new ArrayList<>(); // 0-based positions recorded as absent
            if (absent != null) {
                for (EntryError e : errors) missing.add(e.index());
                errors.clear();
                for (int i = 0; i < files.size(); i++) {
                    if (ids[i] != 0 && absent.contains(files.get(i))) {
                        missing.add(i);
                        ids[i] = 0; // not inserted as a file to stage
                    }
                }
                missing.sort(null);
            }
            if (!errors.isEmpty()) throw invalid(errors);
            UUID id = UUID.randomUUID();
            int priority = req.priority() == null ? 0 : req.priority();
            long lifetime = req.diskLifetimeSeconds() == null ? props.defaultDiskLifetimeSeconds() : req.diskLifetimeSeconds();
            List<UUID> inserted = jdbc.query("""
                    INSERT INTO stage_request (id, client_request_id, owner, experiment, priority, destination,
                                               disk_lifetime_s, file_count, content_sha256, first_path, last_path, overwrite)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (owner, client_request_id) DO NOTHING RETURNING id""",
                    (rs, i) -> rs.getObject(1, UUID.class),
                    id, req.clientRequestId(), owner, req.experiment(), priority, req.destination(), lifetime,
                    files.size(), fingerprint, Collections.min(files), Collections.max(files),
                    req.overwrite() && req.destination() != null);
            if (inserted.isEmpty()) {
                // Another call with the same client id committed meanwhile: answer as a retry would be answered.
                return earlier(owner, req.clientRequestId(), fingerprint).orElseThrow();
            }
            String[] meta = req.targetedMetadata() == null ? new String[ids.length] : req.targetedMetadata().toArray(String[]::new);
            jdbc.update(con -> {
                var ps = con.prepareStatement("INSERT INTO stage_request_file (request_id, file_id, ordinal, targeted_metadata) "
                        + "SELECT ?, t.id, t.ord, t.meta::jsonb FROM unnest(?::bigint[], ?::text[]) WITH ORDINALITY AS t(id, meta, ord) "
                        + "WHERE t.id <> 0"); // 0: absent (no catalog id)
                ps.setObject(1, id);
                ps.setObject(2, ids);
                ps.setArray(3, con.createArrayOf("text", meta));
                return ps;
            });
            if (!missing.isEmpty()) {
                jdbc.update(con -> {
                    var ps = con.prepareStatement("INSERT INTO stage_request_absent (request_id, ordinal, path) "
                            + "SELECT ?, t.ord, t.path FROM unnest(?::integer[], ?::text[]) AS t(ord, path)");
                    ps.setObject(1, id);
                    ps.setArray(2, con.createArrayOf("integer", missing.stream().map(i -> i + 1).toArray()));
                    ps.setArray(3, con.createArrayOf("text", missing.stream().map(files::get).toArray()));
                    return ps;
                });
                settlement.settle(id); // failed at once when nothing of it is left to stage
            }
            return new Submission(summary(id).orElseThrow(), true);
        });
        if (done != null && done.created()) {
            // committed: the scheduler of this instance may take it now rather than at its next poll
            events.publishEvent(new RequestSubmitted(done.request().id()));
        }
        return done;
    }

    private void checkFields(String owner, NewStageRequest req, List<EntryError> errors) {
        if (owner == null || !OWNER.matcher(owner).matches())
            errors.add(EntryError.field("owner", "expected 1-128 of A-Z a-z 0-9 . _ @ + = -"));
        String cid = req.clientRequestId();
        if (cid != null && (cid.isEmpty() || cid.length() > MAX_CLIENT_ID || FileNames.hasControl(cid)))
            errors.add(EntryError.field("clientRequestId", "1-" + MAX_CLIENT_ID + " characters without control characters"));
        if (req.priority() != null && Math.abs((long) req.priority()) > props.maxPriority())
            errors.add(EntryError.field("priority", "must be between " + -props.maxPriority() + " and " + props.maxPriority()
                    + ", got " + req.priority()));
        Long life = req.diskLifetimeSeconds();
        if (life != null && (life <= 0 || life > props.maxDiskLifetimeSeconds()))
            errors.add(EntryError.field("diskLifetimeSeconds", "must be between 1 and " + props.maxDiskLifetimeSeconds()
                    + " seconds, got " + life));
        String dest = req.destination();
        if (dest != null) {
            String why = destinationProblem(dest);
            if (why != null) errors.add(EntryError.field("destination", why));
        }
        if (req.experiment() != null && !NAME.matcher(req.experiment()).matches())
            errors.add(EntryError.field("experiment", "expected 1-64 of A-Z a-z 0-9 . _ + -"));
        checkTargetedMetadata(req, errors);
    }

    private static void checkTargetedMetadata(NewStageRequest req, List<EntryError> errors) {
        List<String> meta = req.targetedMetadata();
        if (meta == null) return;
        List<String> files = req.files();
        if (files == null || meta.size() != files.size()) {
            errors.add(EntryError.field("targetedMetadata", "one entry (or null) per file: " + meta.size() + " entries for "
                    + (files == null ? 0 : files.size()) + " files"));
            return;
        }
        for (int i = 0; i < meta.size(); i++) {
            String m = meta.get(i);
            if (m == null) continue;
            if (m.length() > MAX_TARGETED_METADATA_CHARS) {
                errors.add(new EntryError(i, files.get(i), "targetedMetadata", "at most " + MAX_TARGETED_METADATA_CHARS
                        + " characters of JSON for this site, got " + m.length()));
                continue;
            }
            boolean object;
            try {
                object = JsonMapper.shared().readTree(m).isObject();
            } catch (JacksonException e) {
                object = false;
            }
            if (!object) errors.add(new EntryError(i, files.get(i), "targetedMetadata", "expected a JSON object"));
        }
    }

    private static String destinationProblem(String dest) {
        if (dest.isEmpty() || dest.length() > MAX_DESTINATION || FileNames.hasControl(dest))
            return "1-" + MAX_DESTINATION + " characters without control characters";
        try {
            URI uri = new URI(dest);
            if (!uri.isAbsolute() || uri.getPath() == null || uri.getPath().isEmpty())
                return "expected an absolute URL such as gsiftp://host:2811/path";
            // the movers speak GridFTP only: another scheme would fail only after the tape reads
            if (!"gsiftp".equalsIgnoreCase(uri.getScheme()) && !"ftp".equalsIgnoreCase(uri.getScheme()))
                return "expected a gsiftp:// or ftp:// URL (the movers speak GridFTP), got " + uri.getScheme() + "://";
            // the movers send the decoded path: an encoded line break would end their command line
            if (FileNames.hasControl(uri.getPath())) return "no control characters in the path, encoded or not";
            String clearText = FileUrls.nameProblem(uri.getScheme(), uri.getPath());
            if (clearText != null) return clearText;
            if (uri.getPort() == 0 || uri.getPort() > 65535) return "port " + uri.getPort() + " out of range 1-65535";
            return FileUrls.hostsProblem(uri.getRawAuthority());
        } catch (URISyntaxException e) {
            return "not a URL: " + e.getReason();
        }
    }

    /**
     * Names the movers cannot send to {@code destination} (non-ASCII over ftp://, {@link FileUrls#nameProblem}):
     * refused now. Before, such a request was taken, its files read from tape, and each failed at its transfer.
     */
    private static void checkSendable(String destination, List<String> files, List<EntryError> errors) {
        if (destination == null || destination.indexOf(':') < 0) return;
        String scheme = destination.substring(0, destination.indexOf(':'));
        for (int i = 0; i < files.size(); i++) {
            String why = FileUrls.nameProblem(scheme, files.get(i));
            if (why != null) errors.add(EntryError.file(i, files.get(i), why));
        }
    }

    /** Path rules and duplicates; errors name each offending entry by index and path. */
    private static void checkNames(List<String> files, List<EntryError> errors) {
        Map<String, Integer> seen = new HashMap<>(files.size() * 2);
        for (int i = 0; i < files.size(); i++) {
            String path = files.get(i);
            String why = FileNames.problem(path);
            if (why != null) {
                errors.add(EntryError.file(i, path, why));
                continue;
            }
            Integer first = seen.putIfAbsent(path, i);
            if (first != null) errors.add(EntryError.file(i, path, "duplicate of entry " + first));
        }
    }

    /** Catalog ids of {@code files}, in order; adds an error for every name not in the catalog. */
    private long[] resolve(List<String> files, List<EntryError> errors) {
        long[] ids = new long[files.size()];
        jdbc.query(con -> {
            var ps = con.prepareStatement("SELECT t.ord, f.id FROM unnest(?::text[]) WITH ORDINALITY AS t(name, ord) "
                    + "LEFT JOIN file f ON f.name = t.name");
            ps.setArray(1, con.createArrayOf("text", files.toArray()));
            return ps;
        }, rs -> {
            int i = rs.getInt(1) - 1;
            long id = rs.getLong(2);
            if (rs.wasNull()) errors.add(EntryError.file(i, files.get(i), "not in the catalog"));
            else ids[i] = id;
        });
        errors.sort((a, b) -> Integer.compare(a.index(), b.index()));
        return ids;
    }

    private Optional<Submission> earlier(String owner, String clientRequestId, String fingerprint) {
        List<String[]> rows = jdbc.query("SELECT id::text, content_sha256 FROM stage_request WHERE owner = ? AND client_request_id = ?",
                (rs, i) -> new String[] {rs.getString(1), rs.getString(2)}, owner, clientRequestId);
        if (rows.isEmpty()) return Optional.empty();
        if (!Objects.equals(rows.getFirst()[1], fingerprint)) {
            throw new StageRequestRejected(Kind.CONFLICT, "clientRequestId '" + clientRequestId + "' was used by request "
                    + rows.getFirst()[0] + " with different content",
                    List.of(EntryError.field("clientRequestId", "already used for request " + rows.getFirst()[0]
                            + " with different files or options")));
        }
        return Optional.of(new Submission(summary(UUID.fromString(rows.getFirst()[0])).orElseThrow(), false));
    }

    /** SHA-256 over what the client sent; the same content always gives the same value. */
    static String fingerprint(NewStageRequest req) {
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            String head = String.join("\u0000", String.valueOf(req.priority()), String.valueOf(req.diskLifetimeSeconds()),
                    String.valueOf(req.destination()), String.valueOf(req.experiment()));
            md.update(head.getBytes(StandardCharsets.UTF_8));
            for (String f : req.files()) {
                md.update((byte) '\n');
                md.update(f.getBytes(StandardCharsets.UTF_8));
            }
            if (req.targetedMetadata() != null) { // absent from older fingerprints, which stay valid
                for (String m : req.targetedMetadata()) {
                    md.update((byte) 0);
                    md.update(String.valueOf(m).getBytes(StandardCharsets.UTF_8));
                }
            }
            if (req.overwrite()) md.update("\u0001overwrite".getBytes(StandardCharsets.UTF_8)); // likewise
            return HexFormat.of().formatHex(md.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static StageRequestRejected invalid(List<EntryError> errors) {
        long files = errors.stream().filter(e -> e.index() != null).count();
        String msg = files > 0
                ? files + " of the named files cannot be staged" + (files < errors.size() ? ", and other fields are wrong" : "")
                : "the request is not valid";
        return new StageRequestRejected(Kind.INVALID, msg, errors);
    }

    // ---- reads ---------------------------------------------------------------------------------------

    @Override
    public Optional<StageRequestSummary> summary(UUID id) {
        return jdbc.query("SELECT " + SUMMARY_COLUMNS + " FROM stage_request r WHERE r.id = ?", SUMMARY, id).stream().findFirst();
    }

    @Override
    public Optional<StageRequestDetail> get(UUID id, int fileOffset, int fileLimit) {
        return tx.execute(status -> summary(id).map(s -> {
            FileCounts counts = counts(id);
            return new StageRequestDetail(s, counts.byState(), counts.released(), files(id, fileOffset, fileLimit),
                    fileOffset, fileLimit);
        }));
    }

    @Override
    public FileCounts counts(UUID id) {
        Map<FileState, Long> counts = new EnumMap<>(FileState.class);
        for (FileState st : FileState.values()) counts.put(st, 0L);
        long[] released = {0};
        // kept per state by V30's triggers (one row per state holding files); absent files fail at submission, so
        // they are counted on their own table's key, as many rows as there are of them, with files deleted from the
        // catalog after their request ended (V59) by the state they ended in
        jdbc.query("""
                SELECT state, files, released FROM stage_request_count WHERE request_id = ?
                UNION ALL
                SELECT coalesce(state, 'failed'), count(*), count(*) FILTER (WHERE released) FROM stage_request_absent
                 WHERE request_id = ? GROUP BY 1""", rs -> {
            counts.merge(FileState.ofDb(rs.getString(1)), rs.getLong(2), Long::sum);
            released[0] += rs.getLong(3);
        }, id, id);
        return new FileCounts(counts, released[0]);
    }

    @Override
    public Optional<PathRange> pathRange(UUID id) {
        return jdbc.query("SELECT first_path, last_path FROM stage_request WHERE id = ? AND first_path IS NOT NULL",
                (rs, i) -> new PathRange(rs.getString(1), rs.getString(2)), id).stream().findFirst();
    }

    @Override
    public List<RequestFile> files(UUID id, int fileOffset, int fileLimit) {
        record Row(long fileId, RequestFile file) {}
        // places 1..file_count run through both tables (V27): the page is a range of places on their indexes,
        // so it costs its own size whatever the request's; absent files are failed files in their place (id 0)
        long first = (long) fileOffset + 1, last = (long) fileOffset + fileLimit;
        List<Row> rows = jdbc.query("""
                SELECT f.name, srf.state, srf.error, srf.released, srf.started_at, srf.finished_at, f.id, srf.ordinal
                  FROM stage_request_file srf JOIN file f ON f.id = srf.file_id
                 WHERE srf.request_id = ? AND srf.ordinal BETWEEN ? AND ?
                UNION ALL
                SELECT a.path, coalesce(a.state, 'failed'), CASE WHEN a.state IS NULL THEN ? ELSE a.error END, a.released,
                       CASE WHEN a.state IS NULL THEN r.created_at ELSE a.started_at END,
                       CASE WHEN a.state IS NULL THEN r.created_at ELSE a.finished_at END, 0, a.ordinal
                  FROM stage_request_absent a JOIN stage_request r ON r.id = a.request_id
                 WHERE a.request_id = ? AND a.ordinal BETWEEN ? AND ?
                ORDER BY 8""",
                (rs, i) -> new Row(rs.getLong(7), new RequestFile(rs.getString(1), FileState.ofDb(rs.getString(2)),
                        rs.getString(3), rs.getBoolean(4), instant(rs, 5), instant(rs, 6), false)),
                id, first, last, ABSENT_FILE, id, first, last);
        // staged once is not on disk for ever: a copy may since have been evicted or discarded (corrupt)
        List<Long> staged = rows.stream().filter(r -> r.file().state().staged()).map(Row::fileId).toList();
        Map<Long, CacheEntry> live = staged.isEmpty() ? Map.of() : cache.lookup(staged);
        return rows.stream().map(r -> {
            CacheEntry e = live.get(r.fileId());
            RequestFile f = r.file();
            return e != null && e.cached() ? new RequestFile(f.path(), f.state(), f.error(), f.released(), f.startedAt(),
                    f.finishedAt(), true) : f;
        }).toList();
    }

    @Override
    public List<String> paths(UUID id) {
        return jdbc.query("""
                SELECT f.name, srf.ordinal, srf.file_id FROM stage_request_file srf JOIN file f ON f.id = srf.file_id
                 WHERE srf.request_id = ?
                UNION ALL
                SELECT path, ordinal, 0 FROM stage_request_absent WHERE request_id = ?
                ORDER BY 2, 3""", (rs, i) -> rs.getString(1), id, id);
    }

    @Override
    public RequestPage list(RequestQuery q) {
        StringBuilder where = new StringBuilder(" WHERE true");
        List<Object> args = new ArrayList<>();
        if (q.state() != null) {
            where.append(" AND r.state = ?");
            args.add(q.state().dbName());
        }
        if (q.experiment() != null) {
            where.append(" AND r.experiment = ?");
            args.add(q.experiment());
        }
        if (q.experiments() != null) {
            where.append(" AND r.experiment = ANY (?)");
            args.add(q.experiments().toArray(String[]::new));
        }
        if (q.owner() != null) {
            where.append(" AND r.owner = ?");
            args.add(q.owner());
        }
        if (q.createdSince() != null) {
            where.append(" AND r.created_at >= ?");
            args.add(Timestamp.from(q.createdSince()));
        }
        return tx.execute(status -> {
            Long total = jdbc.queryForObject("SELECT count(*) FROM stage_request r" + where, Long.class, args.toArray());
            List<Object> pageArgs = new ArrayList<>(args);
            pageArgs.add(q.offset());
            pageArgs.add(q.limit());
            List<StageRequestSummary> items = jdbc.query("SELECT " + SUMMARY_COLUMNS + " FROM stage_request r" + where
                    + " ORDER BY r.created_at DESC, r.id OFFSET ? LIMIT ?", SUMMARY, pageArgs.toArray());
            return new RequestPage(items, total == null ? 0 : total, q.offset(), q.limit());
        });
    }

    // ---- cancel and release --------------------------------------------------------------------------

    @Override
    public FileChange cancel(UUID id, List<String> files) {
        return tx.execute(status -> {
            RequestState state = lockRequest(id);
            if (state.finished()) {
                throw new StageRequestRejected(Kind.CONFLICT, "request " + id + " is already " + state.dbName()
                        + "; a finished request cannot be cancelled", List.of(EntryError.field("state", state.dbName())));
            }
            if (files == null) {
                long changed = jdbc.update("UPDATE stage_request_file srf SET state = 'cancelled', finished_at = now() "
                        + "FROM stage_request r WHERE r.id = srf.request_id AND srf.request_id = ? AND " + RequestSettlement.OPEN_FILE, id);
                settlement.cancel(id);
                cache.releaseAll(id.toString()); // nothing of a cancelled request needs to stay on disk
                return new FileChange(id, RequestState.CANCELLED, changed, List.of());
            }
            Named named = named(id, files);
            List<Unchanged> ended = unchanged(id, named, "NOT " + RequestSettlement.OPEN_FILE);
            List<Long> cancelled = jdbc.query(con -> {
                var ps = con.prepareStatement("UPDATE stage_request_file srf SET state = 'cancelled', finished_at = now() "
                        + "FROM stage_request r WHERE r.id = srf.request_id AND srf.request_id = ? AND srf.file_id = ANY (?) AND "
                        + RequestSettlement.OPEN_FILE + " RETURNING srf.file_id");
                ps.setObject(1, id);
                ps.setObject(2, named.ids());
                return ps;
            }, (rs, i) -> rs.getLong(1));
            long changed = cancelled.size();
            cache.release(cancelled, id.toString());
            settlement.settle(id);
            return new FileChange(id, lockRequest(id), changed, ended);
        });
    }

    @Override
    public FileChange release(UUID id, List<String> files) {
        return tx.execute(status -> {
            lockRequest(id);
            if (files == null) {
                long changed = jdbc.update("UPDATE stage_request_file SET released = true WHERE request_id = ? AND NOT released", id);
                cache.releaseAll(id.toString());
                return new FileChange(id, lockRequest(id), changed, List.of());
            }
            Named named = named(id, files);
            List<Unchanged> already = unchanged(id, named, "srf.released");
            long changed = jdbc.update(con -> {
                var ps = con.prepareStatement("UPDATE stage_request_file SET released = true "
                        + "WHERE request_id = ? AND file_id = ANY (?) AND NOT released");
                ps.setObject(1, id);
                ps.setObject(2, named.ids());
                return ps;
            });
            List<Long> ids = new ArrayList<>(named.ids().length);
            for (long f : named.ids()) if (f != 0) ids.add(f);
            cache.release(ids, id.toString()); // served at once: no lock shared with staging
            return new FileChange(id, lockRequest(id), changed, already);
        });
    }

    @Override
    public long releaseOwned(String owner, List<String> files) {
        List<EntryError> errors = new ArrayList<>();
        if (files.isEmpty()) errors.add(EntryError.field("files", "empty: name at least one file"));
        else if (files.size() > MAX_FILES) errors.add(EntryError.field("files", files.size() + " files; at most " + MAX_FILES));
        else checkNames(files, errors);
        if (!errors.isEmpty()) throw invalid(errors);
        return tx.execute(status -> {
            // the owner's requests holding a named file not yet released, locked as release locks one (in id order)
            List<UUID> holding = jdbc.query(con -> {
                var ps = con.prepareStatement("SELECT id FROM stage_request WHERE owner = ? AND id IN ("
                        + "SELECT srf.request_id FROM stage_request_file srf JOIN file f ON f.id = srf.file_id "
                        + "WHERE f.name = ANY (?) AND NOT srf.released) ORDER BY id FOR UPDATE");
                ps.setString(1, owner);
                ps.setArray(2, con.createArrayOf("text", files.toArray()));
                return ps;
            }, (rs, i) -> rs.getObject(1, UUID.class));
            if (holding.isEmpty()) return 0L;
            // their named files released in one statement, then each request's pins on them
            Map<UUID, List<Long>> released = new java.util.LinkedHashMap<>();
            jdbc.query(con -> {
                var ps = con.prepareStatement("UPDATE stage_request_file srf SET released = true FROM file f "
                        + "WHERE f.id = srf.file_id AND srf.request_id = ANY (?) AND f.name = ANY (?) AND NOT srf.released "
                        + "RETURNING srf.request_id, srf.file_id");
                ps.setArray(1, con.createArrayOf("uuid", holding.toArray()));
                ps.setArray(2, con.createArrayOf("text", files.toArray()));
                return ps;
            }, rs -> { released.computeIfAbsent(rs.getObject(1, UUID.class), k -> new ArrayList<>()).add(rs.getLong(2)); });
            long changed = 0;
            for (var e : released.entrySet()) {
                cache.release(e.getValue(), e.getKey().toString());
                changed += e.getValue().size();
            }
            return changed;
        });
    }

    @Override
    public void delete(UUID id) {
        tx.executeWithoutResult(status -> {
            lockRequest(id);
            jdbc.update("DELETE FROM stage_request WHERE id = ?", id); // its files go with it (ON DELETE CASCADE)
            cache.releaseAll(id.toString());
        });
    }

    @Override
    public Load load(String owner) {
        // the open requests' queued and staging files from their running counts (V30): exact at every call, and
        // read per open request, not per file (counting the files took 0.15 s with 10^6 open, so it was throttled)
        return jdbc.queryForObject("""
                SELECT count(*), count(*) FILTER (WHERE r.owner = ?),
                       coalesce(sum(o.files), 0), coalesce(sum(o.files) FILTER (WHERE r.owner = ?), 0)
                  FROM stage_request r
                  LEFT JOIN LATERAL (SELECT sum(c.files) AS files FROM stage_request_count c
                                      WHERE c.request_id = r.id AND c.state IN ('queued', 'staging')) o ON true
                 WHERE r.state IN ('submitted', 'active')""",
                (rs, i) -> new Load(rs.getLong(1), rs.getLong(3), rs.getLong(2), rs.getLong(4)), owner, owner);
    }

    /** Locks the request row (cancel, release and the scheduler's settling serialise on it). */
    @Override
    public StageRequestSummary changePriority(UUID id, int priority) {
        if (Math.abs((long) priority) > props.maxPriority()) {
            throw new StageRequestRejected(Kind.INVALID, "priority must be between " + -props.maxPriority() + " and "
                    + props.maxPriority() + ", got " + priority, List.of(EntryError.field("priority",
                    "must be between " + -props.maxPriority() + " and " + props.maxPriority() + ", got " + priority)));
        }
        return tx.execute(status -> {
            RequestState state = lockRequest(id);
            if (state.finished()) {
                throw new StageRequestRejected(Kind.CONFLICT, "request " + id + " is already " + state.dbName()
                        + "; the priority of a finished request cannot change", List.of(EntryError.field("state", state.dbName())));
            }
            jdbc.update("UPDATE stage_request SET priority = ? WHERE id = ?", priority, id);
            return summary(id).orElseThrow();
        });
    }

    private RequestState lockRequest(UUID id) {
        List<String> s = jdbc.queryForList("SELECT state FROM stage_request WHERE id = ? FOR UPDATE", String.class, id);
        if (s.isEmpty()) throw new StageRequestRejected(Kind.NOT_FOUND, "no request " + id, List.of(EntryError.field("id", "no request " + id)));
        return RequestState.ofDb(s.getFirst());
    }

    /** Named files: catalog ids (0 for a file absent from the catalog at submission) in the order named. */
    private record Named(List<String> files, long[] ids) {}

    /** Catalog ids of the named files, all of which must belong to the request; otherwise INVALID naming each. */
    private Named named(UUID id, List<String> files) {
        List<EntryError> errors = new ArrayList<>();
        if (files.isEmpty()) errors.add(EntryError.field("files", "empty: name at least one file, or omit the list for all"));
        else if (files.size() > MAX_FILES) errors.add(EntryError.field("files", files.size() + " files; at most " + MAX_FILES));
        else checkNames(files, errors);
        if (!errors.isEmpty()) throw invalid(errors);
        long[] ids = new long[files.size()];
        jdbc.query(con -> {
            var ps = con.prepareStatement("SELECT t.ord, coalesce(srf.file_id, CASE WHEN a.path IS NOT NULL THEN 0 END) "
                    + "FROM unnest(?::text[]) WITH ORDINALITY AS t(name, ord) "
                    + "LEFT JOIN file f ON f.name = t.name "
                    + "LEFT JOIN stage_request_file srf ON srf.file_id = f.id AND srf.request_id = ? "
                    + "LEFT JOIN stage_request_absent a ON a.request_id = ? AND a.path = t.name");
            ps.setArray(1, con.createArrayOf("text", files.toArray()));
            ps.setObject(2, id);
            ps.setObject(3, id);
            return ps;
        }, rs -> {
            int i = rs.getInt(1) - 1;
            long fid = rs.getLong(2);
            if (rs.wasNull()) errors.add(EntryError.file(i, files.get(i), "not part of request " + id));
            else ids[i] = fid;
        });
        if (!errors.isEmpty()) {
            errors.sort((a, b) -> Integer.compare(a.index(), b.index()));
            throw invalid(errors);
        }
        return new Named(files, ids);
    }

    /**
     * Named files matching {@code condition} (they were left as they were), in the order named. Files absent
     * from the catalog at submission ended failed then: left as they were by any cancel or release.
     */
    private List<Unchanged> unchanged(UUID id, Named named, String condition) {
        List<Unchanged> present = jdbc.query(con -> {
            var ps = con.prepareStatement("SELECT f.name, srf.state FROM unnest(?::bigint[]) WITH ORDINALITY AS t(id, ord) "
                    + "JOIN stage_request_file srf ON srf.request_id = ? AND srf.file_id = t.id JOIN file f ON f.id = t.id "
                    + "JOIN stage_request r ON r.id = srf.request_id "
                    + "WHERE " + condition + " ORDER BY t.ord");
            ps.setObject(1, named.ids());
            ps.setObject(2, id);
            return ps;
        }, (rs, i) -> new Unchanged(rs.getString(1), FileState.ofDb(rs.getString(2))));
        if (Arrays.stream(named.ids()).allMatch(f -> f != 0)) return present;
        Map<String, Unchanged> byName = new HashMap<>();
        present.forEach(u -> byName.put(u.path(), u));
        // a file deleted from the catalog after the request ended (V59) is left in the state it ended in
        Map<String, FileState> absent = new HashMap<>();
        jdbc.query("SELECT path, coalesce(state, 'failed') FROM stage_request_absent WHERE request_id = ? AND path = ANY(?)",
                rs -> { absent.put(rs.getString(1), FileState.ofDb(rs.getString(2))); }, id, named.files().toArray(String[]::new));
        List<Unchanged> all = new ArrayList<>();
        for (int i = 0; i < named.ids().length; i++) {
            String name = named.files().get(i);
            if (named.ids()[i] == 0) all.add(new Unchanged(name, absent.getOrDefault(name, FileState.FAILED)));
            else if (byName.containsKey(name)) all.add(byName.get(name));
        }
        return all;
    }

    private static final RowMapper<StageRequestSummary> SUMMARY = (rs, i) -> new StageRequestSummary(
            rs.getObject(1, UUID.class), rs.getString(2), rs.getString(3), rs.getString(4), rs.getInt(5), rs.getString(6),
            rs.getLong(7), RequestState.ofDb(rs.getString(8)), rs.getInt(9), instant(rs, 10), instant(rs, 11), instant(rs, 12),
            RequestState.ofDb(rs.getString(8)).finished() ? null : instant(rs, 13),
            RequestState.ofDb(rs.getString(8)).finished() ? null : rs.getString(14));

    private static Instant instant(ResultSet rs, int col) throws SQLException {
        Timestamp t = rs.getTimestamp(col);
        return t == null ? null : t.toInstant();
    }
}
