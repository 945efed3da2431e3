package dev.stagehand.archive.internal;

import dev.stagehand.archive.ArchiveBuffer;
import dev.stagehand.archive.ArchiveProperties;
import dev.stagehand.archive.ArchiveRejected;
import dev.stagehand.platform.EntryError;
import dev.stagehand.archive.ArchiveRejected.Kind;
import dev.stagehand.archive.EvictionHold;
import dev.stagehand.archive.FileArchived;
import dev.stagehand.archive.NewArchiveFile;
import dev.stagehand.cache.Checksums;
import dev.stagehand.catalog.FileNames;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.LongStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.dao.DuplicateKeyException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The landing buffer on PostgreSQL: registration (checks, Adler32, catalog entry, admission against the
 * high-water mark under the {@code archive_buffer} row lock), status queries, and eviction of files every
 * {@link EvictionHold} released.
 */
public final class JdbcArchiveBuffer implements ArchiveBuffer {

    private static final Logger log = LoggerFactory.getLogger(JdbcArchiveBuffer.class);
    private static final int EVICTION_CHUNK = 2000;

    private final JdbcTemplate jdbc;
    private final TransactionTemplate tx;
    private final ArchiveProperties props;
    private final long volumeCapacity;
    private final List<EvictionHold> holds;
    private final java.time.Clock clock;

    public JdbcArchiveBuffer(JdbcTemplate jdbc, TransactionTemplate tx, ArchiveProperties props, long volumeCapacity,
                             List<EvictionHold> holds) {
        this(jdbc, tx, props, volumeCapacity, holds, java.time.Clock.systemUTC());
    }

    /** @param clock stamps registrations: a file family's age (a flush trigger) is measured on it */
    public JdbcArchiveBuffer(JdbcTemplate jdbc, TransactionTemplate tx, ArchiveProperties props, long volumeCapacity,
                             List<EvictionHold> holds, java.time.Clock clock) {
        this.clock = clock;
        this.jdbc = jdbc;
        this.tx = tx;
        this.props = props;
        this.volumeCapacity = volumeCapacity;
        this.holds = List.copyOf(holds);
    }

    /** The landing area as a real path (created when missing). */
    public Path landing() {
        try {
            Files.createDirectories(props.landing());
            return props.landing().toRealPath();
        } catch (IOException e) {
            throw new IllegalStateException("landing area " + props.landing() + " is not usable: " + e, e);
        }
    }

    // ------------------------------------------------------------------ registration

    /** A registration entry that passed its checks. */
    private record Checked(int index, String given, Path path, long size, String adler32, String dataset,
                           String experiment, String name, String storageClass, int copies, String family, String givenSum,
                           Instant modified) {

        Checked withSum(String sum, Instant modified) {
            return new Checked(index, given, path, size, sum, dataset, experiment, name, storageClass, copies, family, givenSum, modified);
        }
    }

    @Override
    public List<ArchiveFileStatus> register(List<NewArchiveFile> files) {
        if (files == null || files.isEmpty())
            throw new ArchiveRejected(Kind.INVALID, "files: required, at least one file",
                    List.of(EntryError.field("files", "required: a list of at least one file")));
        if (files.size() > props.maxFilesPerCall())
            throw new ArchiveRejected(Kind.TOO_LARGE, "at most " + props.maxFilesPerCall() + " files per call, got " + files.size(),
                    List.of(EntryError.field("files", files.size() + " files; at most " + props.maxFilesPerCall())));
        Path landing = landing();
        List<EntryError> errors = new ArrayList<>();
        List<Checked> checked = new ArrayList<>();
        List<Missing> missing = new ArrayList<>();
        Set<String> names = new HashSet<>(), paths = new HashSet<>();
        for (int i = 0; i < files.size(); i++) {
            Checked c = check(i, files.get(i), landing, errors, missing);
            if (c == null) continue;
            if (!paths.add(c.path.toString())) errors.add(EntryError.file(i, c.given, "path listed twice in this call"));
            else if (!names.add(c.name)) errors.add(EntryError.file(i, c.given, "file name " + c.name + " listed twice in this call"));
            else checked.add(c);
        }
        Map<Integer, Long> evicted = evicted(missing, errors);
        if (!errors.isEmpty()) {
            // refused anyway: only the checksums the caller gave are verified, so every error is reported at once
            for (Checked c : checked) if (c.givenSum != null) checksum(c, errors);
            errors.sort(java.util.Comparator.comparing(e -> e.index() == null ? -1 : e.index()));
            throw new ArchiveRejected(Kind.INVALID, describe(errors), errors);
        }
        Long[] ids = new Long[files.size()];
        evicted.forEach((i, id) -> ids[i] = id);
        if (checked.isEmpty()) return statuses(Arrays.asList(ids));
        precheck(checked);
        List<Checked> summed = new ArrayList<>(checked.size());
        for (Checked c : checked) {
            Checked x = checksum(c, errors);
            if (x != null) summed.add(x);
        }
        if (!errors.isEmpty()) throw new ArchiveRejected(Kind.INVALID, describe(errors), errors);
        try {
            List<Long> admitted = tx.execute(s -> admit(summed));
            for (int k = 0; k < summed.size(); k++) ids[summed.get(k).index] = admitted.get(k);
            return statuses(Arrays.asList(ids));
        } catch (DuplicateKeyException e) { // a catalog import or another registration took a name meanwhile
            throw new ArchiveRejected(Kind.CONFLICT, "a file name or path was registered concurrently; retry",
                    List.of(EntryError.field("files", String.valueOf(e.getMostSpecificCause().getMessage()))));
        }
    }

    /** An entry whose file is not in the landing area: perhaps a file registered before and evicted since. */
    private record Missing(int index, String given, String name, String path, Long size, String adler32) {}

    /**
     * The entries of {@code missing} that repeat the registration of a file archived and evicted since (same name,
     * path and size, and checksum when given), by index: answered with its status, as any registration repeated (a
     * producer whose first call's answer was lost). The others are "no such file" in {@code errors}.
     */
    private Map<Integer, Long> evicted(List<Missing> missing, List<EntryError> errors) {
        Map<Integer, Long> out = new HashMap<>();
        if (missing.isEmpty()) return out;
        record Was(long id, String path, long size, String adler32) {}
        Map<String, Was> byName = new HashMap<>();
        jdbc.query("""
                SELECT f.name, a.file_id, a.path, a.size_bytes, a.adler32 FROM file f JOIN archive_file a ON a.file_id = f.id
                 WHERE f.name = ANY(?) AND a.state = 'evicted'""",
                rs -> { byName.put(rs.getString(1), new Was(rs.getLong(2), rs.getString(3), rs.getLong(4), trim(rs.getString(5)))); },
                (Object) missing.stream().map(Missing::name).toArray(String[]::new));
        for (Missing m : missing) {
            Was w = byName.get(m.name);
            String sum = null;
            try {
                sum = m.adler32 == null ? null : Checksums.normalise(m.adler32);
            } catch (IllegalArgumentException e) {
                w = null;
            }
            if (w != null && w.path.equals(m.path) && m.size != null && w.size == m.size && (sum == null || sum.equals(w.adler32)))
                out.put(m.index, w.id);
            else errors.add(new EntryError(m.index, m.given, "path", "no such file"));
        }
        return out;
    }

    private Checked check(int i, NewArchiveFile f, Path landing, List<EntryError> errors, List<Missing> missing) {
        if (f == null) {
            errors.add(EntryError.file(i, null, "expected a file object, got null"));
            return null;
        }
        String given = f.path();
        int before = errors.size();
        if (given == null || given.isBlank()) {
            errors.add(new EntryError(i, given, "path", "required: where the file is in the landing area"));
            return null;
        }
        if (FileNames.hasControl(given)) {
            errors.add(new EntryError(i, null, "path", "contains a control character"));
            return null;
        }
        Path p;
        try {
            Path raw = Path.of(given);
            p = (raw.isAbsolute() ? raw : landing.resolve(raw)).normalize();
        } catch (java.nio.file.InvalidPathException e) {
            errors.add(new EntryError(i, given, "path", "not a valid path: " + e.getReason()));
            return null;
        }
        if (!Files.exists(p, LinkOption.NOFOLLOW_LINKS)) {
            if (p.startsWith(landing) && !p.equals(landing) && !FileNames.hasControl(String.valueOf(f.name())))
                missing.add(new Missing(i, given, f.name() != null ? f.name() : "/" + landing.relativize(p).toString().replace('\\', '/'),
                        p.toString(), f.sizeBytes(), f.adler32()));
            else errors.add(new EntryError(i, given, "path", "no such file"));
            return null;
        }
        Path real;
        try {
            real = p.toRealPath();
        } catch (IOException e) {
            errors.add(new EntryError(i, given, "path", "cannot resolve: " + e.getMessage()));
            return null;
        }
        if (!real.startsWith(landing) || real.equals(landing)) {
            errors.add(new EntryError(i, given, "path", "not inside the landing area " + landing));
            return null;
        }
        if (!Files.isRegularFile(real)) {
            errors.add(new EntryError(i, given, "path", "not a regular file"));
            return null;
        }
        String name = f.name() != null ? f.name() : "/" + landing.relativize(real).toString().replace('\\', '/');
        String nameProblem = FileNames.problem(name);
        if (nameProblem != null) errors.add(new EntryError(i, given, "name", nameProblem));
        String dataset = f.dataset();
        if (dataset == null || dataset.isBlank()) errors.add(new EntryError(i, given, "dataset", "required: the dataset the file belongs to"));
        else if (FileNames.hasControl(dataset) || dataset.length() > 1024)
            errors.add(new EntryError(i, given, "dataset", "contains a control character or is longer than 1024 characters"));
        if (f.experiment() != null && (f.experiment().isBlank() || FileNames.hasControl(f.experiment())))
            errors.add(new EntryError(i, given, "experiment", "empty or contains a control character"));
        String sc = f.storageClass() == null ? props.defaultStorageClass() : f.storageClass();
        Integer copies = props.storageClasses().get(sc);
        if (copies == null) errors.add(new EntryError(i, given, "storageClass", "unknown storage class '" + sc
                + "'; known: " + new TreeMap<>(props.storageClasses()).keySet()));
        String givenSum = null;
        if (f.adler32() != null) {
            try {
                givenSum = Checksums.normalise(f.adler32());
            } catch (IllegalArgumentException e) {
                errors.add(new EntryError(i, given, "adler32", e.getMessage()));
            }
        }
        long size;
        try {
            size = Files.size(real);
        } catch (IOException e) {
            errors.add(new EntryError(i, given, "path", "cannot read its size: " + e.getMessage()));
            return null;
        }
        if (f.sizeBytes() == null) errors.add(new EntryError(i, given, "size", "required: the file's size in bytes"));
        else if (f.sizeBytes() != size)
            errors.add(new EntryError(i, given, "size", "given " + f.sizeBytes() + " bytes, the file has " + size));
        if (size > volumeCapacity)
            errors.add(new EntryError(i, given, "size", size + " bytes do not fit on one volume (" + volumeCapacity + " bytes)"));
        if (size > props.highWaterBytes())
            errors.add(new EntryError(i, given, "size", size + " bytes are more than the buffer's high-water mark ("
                    + props.highWaterBytes() + " bytes)"));
        if (errors.size() > before) return null;
        return new Checked(i, given, real, size, null, dataset, f.experiment(), name, sc, copies,
                FlushPlanner.family(dataset, props.families()), givenSum, null);
    }

    /** Reads the file's bytes for its Adler32 (streamed); a given checksum must match. */
    private Checked checksum(Checked c, List<EntryError> errors) {
        String sum;
        Instant modified;
        try {
            modified = modified(c.path);
            sum = Checksums.adler32Of(c.path);
            if (Files.size(c.path) != c.size || !modified(c.path).equals(modified)) {
                errors.add(new EntryError(c.index, c.given, "path", "the file changed while it was checksummed: is it still being written?"));
                return null;
            }
        } catch (IOException e) {
            errors.add(new EntryError(c.index, c.given, "path", "cannot read: " + e.getMessage()));
            return null;
        }
        if (c.givenSum != null && !c.givenSum.equals(sum)) {
            errors.add(new EntryError(c.index, c.given, "adler32", "checksum mismatch: given " + c.givenSum + ", the file's bytes give " + sum));
            return null;
        }
        return c.withSum(sum, modified);
    }

    /** A file's modification time as the database keeps it (microseconds): eviction checks it is still the registered file. */
    static Instant modified(Path p) throws IOException {
        return Files.getLastModifiedTime(p).toInstant().truncatedTo(java.time.temporal.ChronoUnit.MICROS);
    }

    /** Refuses at once, before any file is read, a call the buffer clearly cannot take (checked again under the lock). */
    private void precheck(List<Checked> files) {
        foldTotals(jdbc); // registrations alone change the buffer when no round runs (archive disabled)
        List<String> known = jdbc.queryForList("SELECT path FROM archive_file WHERE path = ANY(?)", String.class,
                (Object) files.stream().map(c -> c.path.toString()).toArray(String[]::new));
        Set<String> k = new HashSet<>(known);
        long incoming = files.stream().filter(c -> !k.contains(c.path.toString())).mapToLong(Checked::size).sum();
        if (incoming > 0) admissible(usedBytes(), incoming, files.size());
    }

    private void admissible(long used, long incoming, int n) {
        if (used + incoming > props.highWaterBytes()) {
            throw new ArchiveRejected(Kind.BUFFER_FULL, String.format(
                    "the archive buffer holds %d of %d bytes; these %d files (%d bytes) would take it past its high-water mark (%d bytes). "
                            + "Nothing was registered; retry later (files are flushed to tape and evicted meanwhile)",
                    used, props.capacityBytes(), n, incoming, props.highWaterBytes()),
                    List.of(EntryError.field("files", "buffer above its high-water mark")), props.retryAfter());
        }
    }

    /** In one transaction under the buffer lock: conflicts, admission, then the catalog and queue rows. */
    private List<Long> admit(List<Checked> files) {
        jdbc.queryForObject("SELECT id FROM archive_buffer WHERE id = 1 FOR UPDATE", Integer.class);
        record Existing(long id, long size, String adler, String path, String state, boolean tapeFault) {}
        Map<String, Existing> byName = new HashMap<>();
        jdbc.query("""
                SELECT f.name, f.id, f.size_bytes, f.adler32, a.path, a.state,
                       EXISTS (SELECT 1 FROM archive_copy c WHERE c.file_id = f.id AND c.mismatches >= ?)
                  FROM file f LEFT JOIN archive_file a ON a.file_id = f.id
                 WHERE f.name = ANY(?)""", rs -> {
            byName.put(rs.getString(1), new Existing(rs.getLong(2), rs.getLong(3), trim(rs.getString(4)), rs.getString(5),
                    rs.getString(6), rs.getBoolean(7)));
        }, ArchiveFlusher.MAX_MISMATCHES, files.stream().map(Checked::name).toArray(String[]::new));
        Map<String, String> nameByPath = new HashMap<>();
        // an evicted file's path is free for the next file landed there (V47)
        jdbc.query("SELECT a.path, f.name FROM archive_file a JOIN file f ON f.id = a.file_id WHERE a.path = ANY(?) AND a.state <> 'evicted'",
                rs -> { nameByPath.put(rs.getString(1), rs.getString(2)); },
                (Object) files.stream().map(c -> c.path.toString()).toArray(String[]::new));
        List<EntryError> errors = new ArrayList<>();
        List<Long> ids = new ArrayList<>(files.size());
        List<Checked> fresh = new ArrayList<>();
        List<Integer> freshAt = new ArrayList<>();
        List<Checked> landedAgain = new ArrayList<>();
        List<Long> landedAgainIds = new ArrayList<>();
        for (Checked c : files) {
            Existing e = byName.get(c.name);
            if (e != null) {
                if (c.path.toString().equals(e.path) && e.size == c.size && c.adler32.equals(e.adler)) {
                    ids.add(e.id); // the same registration again: answered, not repeated
                    // failed because its buffer file was deleted or changed ("register it anew"): the registered bytes
                    // are back, so it is written again. One whose tape copies kept failing their checksum (the drive's
                    // fault, each closed a volume) waits for an operator's retry
                    if ("failed".equals(e.state) && !e.tapeFault) {
                        landedAgain.add(c);
                        landedAgainIds.add(e.id);
                    }
                } else {
                    errors.add(EntryError.file(c.index, c.given, "a file named " + c.name + " is already in the catalog"
                            + (e.path == null ? " (not from the landing buffer)" : " with other content or another buffer path")
                            + ("failed".equals(e.state) || "queued".equals(e.state) ? "; it is not on tape yet (" + e.state
                            + "): delete it (DELETE /api/v1/archive/files/" + e.id + ") to register it anew" : "")));
                }
                continue;
            }
            String other = nameByPath.get(c.path.toString());
            if (other != null) {
                errors.add(EntryError.file(c.index, c.given, "this buffer file is already registered as " + other));
                continue;
            }
            freshAt.add(ids.size());
            ids.add(null);
            fresh.add(c);
        }
        if (!errors.isEmpty()) throw new ArchiveRejected(Kind.CONFLICT, describe(errors), errors);
        for (int i = 0; i < landedAgain.size(); i++) {
            if (queueAgain(landedAgainIds.get(i), landedAgain.get(i).modified))
                log.info("archive: {} landed again with its registered bytes: queued for tape again", landedAgain.get(i).name);
        }
        if (fresh.isEmpty()) return ids;
        long incoming = fresh.stream().mapToLong(Checked::size).sum();
        long used = usedBytes();
        admissible(used, incoming, fresh.size());
        Map<String, Long> datasets = datasets(fresh, errors);
        if (!errors.isEmpty()) throw new ArchiveRejected(Kind.INVALID, describe(errors), errors);
        int n = fresh.size();
        String[] names = new String[n], sums = new String[n], exps = new String[n], paths = new String[n], fams = new String[n], classes = new String[n];
        Long[] sizes = new Long[n], dsIds = new Long[n];
        String[] modified = new String[n]; // ISO-8601 instants, read as timestamptz
        Integer[] copies = new Integer[n];
        Map<String, String> dsExperiment = new HashMap<>();
        jdbc.query("SELECT name, experiment FROM dataset WHERE name = ANY(?)", rs -> { dsExperiment.put(rs.getString(1), rs.getString(2)); },
                (Object) datasets.keySet().toArray(String[]::new));
        for (int i = 0; i < n; i++) {
            Checked c = fresh.get(i);
            names[i] = c.name;
            sums[i] = c.adler32;
            sizes[i] = c.size;
            dsIds[i] = datasets.get(c.dataset);
            exps[i] = c.experiment != null ? c.experiment : dsExperiment.get(c.dataset);
            paths[i] = c.path.toString();
            fams[i] = c.family;
            classes[i] = c.storageClass;
            copies[i] = c.copies;
            modified[i] = c.modified.toString();
        }
        Map<String, Long> idByName = new HashMap<>();
        jdbc.query("""
                INSERT INTO file (name, size_bytes, adler32, dataset_id, experiment)
                SELECT * FROM unnest(?::text[], ?::bigint[], ?::text[], ?::bigint[], ?::text[])
                RETURNING name, id""", rs -> { idByName.put(rs.getString(1), rs.getLong(2)); },
                names, sizes, sums, dsIds, exps);
        Long[] fileIds = new Long[n];
        for (int i = 0; i < n; i++) {
            fileIds[i] = idByName.get(names[i]);
            ids.set(freshAt.get(i), fileIds[i]);
        }
        Timestamp now = Timestamp.from(clock.instant());
        jdbc.update("""
                INSERT INTO archive_file (file_id, path, size_bytes, adler32, family, storage_class, copies, modified_at, registered_at)
                SELECT u.*, ? FROM unnest(?::bigint[], ?::text[], ?::bigint[], ?::text[], ?::text[], ?::text[], ?::smallint[],
                                          ?::timestamptz[]) AS u""",
                now, fileIds, paths, sizes, sums, fams, classes, copies, modified);
        // one row per tape copy, in registration order: the sequence is the family's write order; the copy
        // carries its file's size and registration time for the family queue's totals and oldest copy (V28)
        jdbc.update("""
                INSERT INTO archive_copy (file_id, copy_no, family, not_before, size_bytes, registered_at)
                SELECT u.id, c.n, u.fam, ?, u.size, ? FROM unnest(?::bigint[], ?::int[], ?::text[], ?::bigint[])
                       WITH ORDINALITY AS u(id, copies, fam, size, ord)
                 CROSS JOIN LATERAL generate_series(1, u.copies) AS c(n)
                 ORDER BY u.ord, c.n""", now, now, fileIds, copies, fams, sizes);
        return ids;
    }

    /** Dataset ids by name, creating new ones; an experiment that contradicts an existing dataset is an error. */
    private Map<String, Long> datasets(List<Checked> files, List<EntryError> errors) {
        Map<String, Long> ids = new LinkedHashMap<>();
        Map<String, String> wanted = new LinkedHashMap<>();
        // a new dataset takes the first experiment named for it in the call, else the default
        for (Checked c : files) if (c.experiment != null) wanted.putIfAbsent(c.dataset, c.experiment);
        for (Checked c : files) wanted.putIfAbsent(c.dataset, props.defaultExperiment());
        for (var e : wanted.entrySet()) {
            jdbc.update("INSERT INTO dataset (name, experiment) VALUES (?, ?) ON CONFLICT (name) DO NOTHING", e.getKey(), e.getValue());
        }
        Map<String, String> exps = new HashMap<>();
        jdbc.query("SELECT name, id, experiment FROM dataset WHERE name = ANY(?)", rs -> {
            ids.put(rs.getString(1), rs.getLong(2));
            exps.put(rs.getString(1), rs.getString(3));
        }, (Object) wanted.keySet().toArray(String[]::new));
        for (Checked c : files) {
            if (c.experiment != null && !c.experiment.equals(exps.get(c.dataset)))
                errors.add(new EntryError(c.index, c.given, "experiment", "dataset " + c.dataset + " belongs to experiment "
                        + exps.get(c.dataset) + ", not " + c.experiment));
        }
        return ids;
    }

    /** Bytes that can still be registered before the buffer reaches its high-water mark (negative above it). */
    long headroom() {
        return props.highWaterBytes() - usedBytes();
    }

    long usedBytes() {
        return usedBytes(jdbc);
    }

    /**
     * Bytes of the files in the buffer: every state but evicted, from the totals per state (V29) rather than
     * summed over the files (218 ms at 2x10^6 of them). Asked at every registration, flush poll and eviction round.
     */
    static long usedBytes(JdbcTemplate jdbc) {
        return jdbc.queryForObject("SELECT coalesce(sum(bytes), 0) FROM archive_buffer_totals WHERE state <> 'evicted'", Long.class);
    }

    /**
     * Folds the changes writers appended into the totals per state, so a read adds up only those since the last
     * fold. Called outside any transaction: its locks on the totals end with its own statement.
     */
    public static void foldTotals(JdbcTemplate jdbc) {
        jdbc.query("SELECT archive_buffer_fold_changes()", rs -> {});
    }

    private static String describe(List<EntryError> errors) {
        return errors.size() == 1 ? "1 file refused: " + errors.get(0).reason() : errors.size() + " files refused; nothing was registered";
    }

    private static String trim(String s) {
        return s == null ? null : s.trim();
    }

    // ------------------------------------------------------------------ queries

    private static final String STATUS_SQL = """
            SELECT a.file_id, f.name, a.path, a.size_bytes, a.adler32, d.name AS dataset, a.family, a.storage_class, a.state,
                   a.copies, a.registered_at, a.archived_at,
                   (SELECT coalesce(sum(c.attempts), 0) FROM archive_copy c WHERE c.file_id = a.file_id) AS attempts,
                   (SELECT c.error FROM archive_copy c WHERE c.file_id = a.file_id AND c.error IS NOT NULL
                     ORDER BY c.copy_no LIMIT 1) AS error
              FROM archive_file a JOIN file f ON f.id = a.file_id LEFT JOIN dataset d ON d.id = f.dataset_id
            """;

    private List<ArchiveFileStatus> statuses(List<Long> ids) {
        Map<Long, List<WrittenCopy>> copies = new HashMap<>();
        Long[] arr = ids.toArray(Long[]::new);
        jdbc.query("""
                SELECT c.file_id, c.copy_no, v.label, s.offset_bytes, s.fseq, s.verified FROM archive_copy c
                  JOIN segment s ON s.file_id = c.file_id AND s.volume_id = c.volume_id JOIN volume v ON v.id = c.volume_id
                 WHERE c.file_id = ANY(?) AND c.state = 'done' ORDER BY c.file_id, c.copy_no""", rs -> {
            copies.computeIfAbsent(rs.getLong(1), k -> new ArrayList<>()).add(new WrittenCopy(rs.getInt(2), rs.getString(3),
                    rs.getLong(4), (Integer) rs.getObject(5), rs.getBoolean(6)));
        }, (Object) arr);
        Map<Long, ArchiveFileStatus> byId = new HashMap<>();
        jdbc.query(STATUS_SQL + " WHERE a.file_id = ANY(?)", rs -> {
            ArchiveFileStatus s = status(rs, copies.getOrDefault(rs.getLong(1), List.of()));
            byId.put(s.fileId(), s);
        }, (Object) arr);
        List<ArchiveFileStatus> out = new ArrayList<>(ids.size());
        for (Long id : ids) out.add(byId.get(id));
        return out;
    }

    private static ArchiveFileStatus status(ResultSet rs, List<WrittenCopy> copies) throws SQLException {
        Timestamp archived = rs.getTimestamp("archived_at");
        return new ArchiveFileStatus(rs.getLong("file_id"), rs.getString("name"), rs.getString("path"), rs.getLong("size_bytes"),
                trim(rs.getString("adler32")), rs.getString("dataset"), rs.getString("family"), rs.getString("storage_class"),
                rs.getString("state"), rs.getInt("copies"), copies, rs.getInt("attempts"), rs.getString("error"),
                rs.getTimestamp("registered_at").toInstant(), archived == null ? null : archived.toInstant());
    }

    @Override
    public Optional<ArchiveFileStatus> file(long fileId) {
        List<ArchiveFileStatus> s = statuses(List.of(fileId));
        return Optional.ofNullable(s.get(0));
    }

    /**
     * By name, else by path (the file there now, else the last evicted from it): each along its index (an OR over the
     * join read both tables whole: 1.4 s at 10^6 files).
     */
    @Override
    public Optional<ArchiveFileStatus> fileByName(String nameOrPath) {
        List<Long> ids = jdbc.queryForList("""
                SELECT file_id FROM (SELECT a.file_id, 1 AS k, false AS gone, a.registered_at FROM file f
                                       JOIN archive_file a ON a.file_id = f.id WHERE f.name = ?
                                     UNION ALL
                                     SELECT file_id, 2, state = 'evicted', registered_at FROM archive_file WHERE path = ?) x
                 ORDER BY k, gone, registered_at DESC LIMIT 1""",
                Long.class, nameOrPath, nameOrPath);
        return ids.isEmpty() ? Optional.empty() : file(ids.get(0));
    }

    @Override
    public Optional<Path> locate(long fileId) {
        List<String> p = jdbc.queryForList("SELECT path FROM archive_file WHERE file_id = ? AND state <> 'evicted'", String.class, fileId);
        if (p.isEmpty()) return Optional.empty();
        Path path = Path.of(p.get(0));
        return Files.isRegularFile(path) ? Optional.of(path) : Optional.empty();
    }

    @Override
    public java.util.Set<String> inBuffer(java.util.Collection<String> names) {
        if (names.isEmpty()) return java.util.Set.of();
        return new java.util.HashSet<>(jdbc.queryForList("""
                SELECT f.name FROM file f JOIN archive_file a ON a.file_id = f.id
                 WHERE f.name = ANY(?) AND a.state IN ('queued', 'writing', 'archived', 'evictable')""",
                String.class, (Object) names.toArray(String[]::new)));
    }

    @Override
    public List<FileArchived> archivedSince(Instant since, int limit) {
        return jdbc.query("""
                SELECT a.file_id, f.dataset_id, f.name, a.path, a.size_bytes, a.adler32, a.archived_at
                  FROM archive_file a JOIN file f ON f.id = a.file_id
                 WHERE a.archived_at >= ? ORDER BY a.archived_at, a.file_id LIMIT ?""",
                (rs, i) -> archived(rs), Timestamp.from(since), limit);
    }

    static FileArchived archived(ResultSet rs) throws SQLException {
        return new FileArchived(rs.getLong("file_id"), rs.getLong("dataset_id"), rs.getString("name"), Path.of(rs.getString("path")),
                rs.getLong("size_bytes"), trim(rs.getString("adler32")), rs.getTimestamp("archived_at").toInstant());
    }

    /** Files and bytes per state from the totals (V29): not grouped over every file ever registered at each call. */
    @Override
    public BufferUsage usage() {
        Map<String, Long> files = new TreeMap<>(), bytes = new TreeMap<>();
        for (String s : List.of("queued", "writing", "archived", "evictable", "evicted", "failed")) {
            files.put(s, 0L);
            bytes.put(s, 0L);
        }
        jdbc.query("SELECT state, files, bytes FROM archive_buffer_totals", rs -> {
            files.put(rs.getString(1), rs.getLong(2));
            bytes.put(rs.getString(1), rs.getLong(3));
        });
        long used = bytes.entrySet().stream().filter(e -> !e.getKey().equals("evicted")).mapToLong(Map.Entry::getValue).sum();
        return new BufferUsage(props.capacityBytes(), used, props.highWaterBytes(), props.lowWaterBytes(), files, bytes);
    }

    @Override
    public List<UnverifiedCopy> unverifiedCopies(Set<String> experiments, int limit) {
        String[] exps = experiments == null ? null : experiments.toArray(String[]::new);
        // along segment_unverified_idx (V53): the few copies not confirmed, not every segment
        return jdbc.query("""
                SELECT f.name, v.label, s.offset_bytes, s.fseq, f.adler32, s.state FROM segment s
                  JOIN volume v ON v.id = s.volume_id JOIN file f ON f.id = s.file_id
                 WHERE NOT s.verified AND (?::text[] IS NULL OR f.experiment = ANY (?::text[]))
                 ORDER BY v.label, s.offset_bytes LIMIT ?""",
                (rs, i) -> new UnverifiedCopy(rs.getString(1), rs.getString(2), rs.getLong(3), (Integer) rs.getObject(4),
                        rs.getString(5), rs.getString(6)), exps, exps, limit);
    }

    @Override
    public List<FamilyVolume> volumes(String family, Set<String> experiments) {
        String[] exps = experiments == null ? null : experiments.toArray(String[]::new);
        return jdbc.query("""
                SELECT av.family, av.copy_no, v.label, av.state, av.live_files, av.files, av.end_of_data FROM archive_volume av
                  JOIN volume v ON v.id = av.volume_id
                 WHERE av.family IS NOT NULL AND (?::text IS NULL OR av.family = ?)
                   AND (?::text[] IS NULL OR EXISTS (SELECT 1 FROM archive_file a JOIN file f ON f.id = a.file_id
                                                      WHERE a.family = av.family AND f.experiment = ANY (?::text[])))
                 ORDER BY av.family, av.opened_at, v.label""",
                (rs, i) -> new FamilyVolume(rs.getString(1), rs.getInt(2), rs.getString(3), rs.getString(4), rs.getInt(5),
                        rs.getInt(6), rs.getLong(7), volumeCapacity), family, family, exps, exps);
    }

    /**
     * The queued copies from the family totals (V28) and each family's oldest along its index; the copies being
     * written are counted, they are the claims in flight (their partial index). The whole queue was summed at
     * each call.
     */
    @Override
    public List<FamilyQueue> queues() {
        return jdbc.query("""
                WITH w AS (
                  SELECT family, copy_no, count(*) AS writing, min(registered_at) AS oldest FROM archive_copy
                   WHERE state = 'writing' GROUP BY family, copy_no),
                q AS (
                  SELECT coalesce(t.family, w.family) AS family, coalesce(t.copy_no, w.copy_no) AS copy_no,
                         coalesce(t.files, 0) AS files, coalesce(t.bytes, 0) AS bytes, coalesce(w.writing, 0) AS writing,
                         least(h.oldest, w.oldest) AS oldest
                    FROM archive_family_queue t FULL JOIN w ON w.family = t.family AND w.copy_no = t.copy_no
                    LEFT JOIN LATERAL (SELECT c.registered_at AS oldest FROM archive_copy c
                                        WHERE c.family = t.family AND c.copy_no = t.copy_no AND c.state = 'queued'
                                        ORDER BY c.registered_at LIMIT 1) h ON true)
                SELECT q.*, o.label, o.writer
                  FROM q LEFT JOIN LATERAL (
                         SELECT v.label, CASE WHEN av.lease_until > now() THEN av.claimed_by END AS writer
                           FROM archive_volume av JOIN volume v ON v.id = av.volume_id
                          WHERE av.family = q.family AND av.copy_no = q.copy_no AND av.state = 'open'
                          ORDER BY av.opened_at DESC LIMIT 1) o ON true
                 ORDER BY q.oldest, q.family, q.copy_no""",
                (rs, i) -> new FamilyQueue(rs.getString("family"), rs.getInt("copy_no"), rs.getLong("files"), rs.getLong("bytes"),
                        rs.getLong("writing"), rs.getTimestamp("oldest").toInstant(), rs.getString("label"), rs.getString("writer")));
    }

    @Override
    public ArchiveFileStatus retry(long fileId) {
        ArchiveFileStatus f = file(fileId).orElseThrow(() -> new ArchiveRejected(Kind.NOT_FOUND, "no archived file with id " + fileId,
                List.of(EntryError.field("id", "no archived file with id " + fileId))));
        if (!f.state().equals("failed")) throw notFailed(f);
        String now;
        try {
            now = Checksums.adler32Of(Path.of(f.path())); // read before any lock: it may be large
        } catch (IOException e) {
            now = "unreadable (" + e.getMessage() + ")";
        }
        if (!now.equals(f.adler32())) {
            throw new ArchiveRejected(Kind.CONFLICT, f.name() + ": the buffer file no longer has the registered bytes (Adler32 now "
                    + now + ", registered " + f.adler32() + "); writing it again cannot help: delete it (DELETE /api/v1/archive/files/"
                    + fileId + ") and register it anew",
                    List.of(EntryError.file(0, f.name(), "buffer file changed after registration")));
        }
        tx.executeWithoutResult(s -> {
            if (!queueAgain(fileId, null)) throw notFailed(file(fileId).orElse(f));
        });
        log.info("archive: {} queued for tape again by an operator's retry", f.name());
        return file(fileId).orElseThrow();
    }

    /**
     * A failed file's copies not yet on tape are queued again, attempts counted from zero; false when it is not failed.
     * {@code modified}: the buffer file's modification time now, when it was landed again (eviction checks it).
     */
    private boolean queueAgain(long fileId, Instant modified) {
        // the copies first, then the file, in the order the flusher and a delete take them: the other order could
        // deadlock with a delete of the same file (one of them aborted, a 500 to its client)
        jdbc.queryForList("SELECT copy_no FROM archive_copy WHERE file_id = ? ORDER BY copy_no FOR UPDATE", Integer.class, fileId);
        List<String> state = jdbc.queryForList("SELECT state FROM archive_file WHERE file_id = ? FOR UPDATE", String.class, fileId);
        if (state.isEmpty() || !state.get(0).equals("failed")) return false;
        jdbc.update("""
                UPDATE archive_copy SET state = 'queued', attempts = 0, mismatches = 0, error = NULL,
                       claimed_by = NULL, lease_until = NULL, volume_id = NULL
                 WHERE file_id = ? AND state = 'failed'""", fileId);
        jdbc.update("UPDATE archive_file SET state = 'queued', modified_at = coalesce(?::timestamptz, modified_at), updated_at = now() WHERE file_id = ?",
                modified == null ? null : Timestamp.from(modified), fileId);
        return true;
    }

    /**
     * The copies are locked first, then the file, as the flusher's claims, requeues and records take them: a claim that
     * took a copy first is waited for and then seen ('writing': refused), one that comes later skips the locked copies.
     */
    @Override
    public ArchiveFileStatus delete(long fileId) {
        ArchiveFileStatus f = file(fileId).orElseThrow(() -> noSuchFile(fileId));
        List<String> gone;
        ArchiveFileStatus[] was = {f};
        try {
            gone = tx.execute(s -> {
                List<String> copies = jdbc.queryForList("SELECT state FROM archive_copy WHERE file_id = ? ORDER BY copy_no FOR UPDATE",
                        String.class, fileId);
                List<String> state = jdbc.queryForList("SELECT state FROM archive_file WHERE file_id = ? FOR UPDATE", String.class, fileId);
                if (state.isEmpty()) throw noSuchFile(fileId);
                ArchiveFileStatus now = was[0] = file(fileId).orElse(f);
                if (copies.contains("writing") || state.get(0).equals("writing"))
                    throw new ArchiveRejected(Kind.CONFLICT, f.name() + " is being written to tape now; delete it once the write "
                            + "has ended (it is then archived, queued again or failed)", List.of(EntryError.field("state", "writing")));
                if (!state.get(0).equals("queued") && !state.get(0).equals("failed"))
                    throw new ArchiveRejected(Kind.CONFLICT, f.name() + " is " + state.get(0) + ": every tape copy is written; only a "
                            + "file not yet on tape (queued or failed) can be deleted from the archive buffer",
                            List.of(EntryError.field("state", state.get(0))));
                // queued again after it was archived: a copy a read found bad is being made again (from the buffer, or read
                // back from its good copy). Its producer was told it is archived, and its good copies are on tape: not a cancel
                if (now.archivedAt() != null)
                    throw new ArchiveRejected(Kind.CONFLICT, f.name() + " was archived at " + now.archivedAt() + " and is "
                            + now.state() + " only to make a bad tape copy again: not deleted (only a file not yet on tape can be)",
                            List.of(EntryError.field("state", "archived before")));
                // locked: the rows are read and moved as they are (a pinned file is not released meanwhile)
                jdbc.query("SELECT 1 FROM stage_request_file WHERE file_id = ? ORDER BY request_id FOR UPDATE", rs -> {}, fileId);
                // wanted: the request still works on the file (its row not ended yet), or the file is being staged or
                // sent, or is on disk and not released (the client's pin: a WLCG client reads it within its disk lifetime).
                // A row that ended failed or cancelled wants nothing more of the file, though its request is still open
                // for its other files: the failed file not on tape is the one an operator cleans up, and the request
                // ends, failed, with its other files (the row keeps its outcome in stage_request_absent, below)
                List<String> wanting = jdbc.queryForList("""
                        SELECT srf.request_id::text || CASE WHEN srf.state <> 'on_disk' OR r.state IN ('submitted', 'active')
                                                            THEN ' (still open)' ELSE ' (the file pinned on disk for it, not released)' END
                          FROM stage_request_file srf JOIN stage_request r ON r.id = srf.request_id
                         WHERE srf.file_id = ? AND ((r.state IN ('submitted', 'active') AND srf.state NOT IN ('failed', 'cancelled'))
                               OR srf.state IN ('queued', 'staging', 'transferring') OR (srf.state = 'on_disk' AND NOT srf.released))
                         ORDER BY srf.request_id""", String.class, fileId);
                if (!wanting.isEmpty())
                    throw new ArchiveRejected(Kind.CONFLICT, f.name() + " is wanted by stage request " + wanting.get(0)
                            + (wanting.size() > 1 ? " and " + (wanting.size() - 1) + " more" : "") + ": not deleted; cancel the "
                            + "request or release the file first (finished requests' history does not hold it)",
                            List.of(EntryError.field("id", "wanted by a stage request")));
                // the requests keep the file in their history under its name, with what it ended with (V59): finished ones,
                // and open ones whose row of it ended failed or cancelled
                int history = jdbc.update("""
                        INSERT INTO stage_request_absent (request_id, ordinal, path, state, error, released, started_at, finished_at)
                        SELECT srf.request_id, srf.ordinal, fl.name, srf.state, srf.error, srf.released, srf.started_at, srf.finished_at
                          FROM stage_request_file srf JOIN file fl ON fl.id = srf.file_id WHERE srf.file_id = ?""", fileId);
                if (history > 0) jdbc.update("DELETE FROM stage_request_file WHERE file_id = ?", fileId);
                List<String> onTape = jdbc.queryForList("""
                        SELECT v.label FROM segment s JOIN volume v ON v.id = s.volume_id WHERE s.file_id = ? ORDER BY v.label""",
                        String.class, fileId);
                // the queue rows first (their trigger keeps the family totals), then the file's: nothing of it is left
                jdbc.update("DELETE FROM archive_copy WHERE file_id = ?", fileId);
                jdbc.update("DELETE FROM archive_file WHERE file_id = ?", fileId);
                jdbc.update("DELETE FROM file WHERE id = ?", fileId);
                return onTape.isEmpty() ? List.of(now.state()) : java.util.stream.Stream.concat(java.util.stream.Stream.of(now.state()),
                        onTape.stream()).toList();
            });
        } catch (org.springframework.dao.DataIntegrityViolationException e) { // something else in the catalog still refers to it
            throw new ArchiveRejected(Kind.CONFLICT, f.name() + " is still referred to in the catalog: not deleted ("
                    + e.getMostSpecificCause().getMessage() + ")", List.of(EntryError.field("id", "still referred to")));
        }
        log.info("archive: {} ({}, {} bytes) deleted from the archive buffer before it was on tape{}; its buffer file {} is left in place",
                f.name(), gone.get(0), f.sizeBytes(), gone.size() > 1 ? " (its copy on " + gone.subList(1, gone.size())
                        + " is dead space there now)" : "", f.path());
        return was[0];
    }

    private static ArchiveRejected noSuchFile(long fileId) {
        return new ArchiveRejected(Kind.NOT_FOUND, "no archived file with id " + fileId,
                List.of(EntryError.field("id", "no archived file with id " + fileId)));
    }

    private static ArchiveRejected notFailed(ArchiveFileStatus f) {
        return new ArchiveRejected(Kind.CONFLICT, f.name() + " is " + f.state() + "; only a failed file can be retried",
                List.of(EntryError.field("state", f.state())));
    }

    /** Along the index of the copies that failed and are not written (V33), not through every copy ever written. */
    @Override
    public List<WriteFailure> failures(int limit) {
        return jdbc.query("""
                SELECT c.file_id, f.name, c.family, c.copy_no, c.attempts, c.error, c.not_before
                  FROM archive_copy c JOIN file f ON f.id = c.file_id
                 WHERE c.state <> 'done' AND c.attempts > 0 ORDER BY c.not_before DESC, c.file_id LIMIT ?""",
                (rs, i) -> new WriteFailure(rs.getLong(1), rs.getString(2), rs.getString(3), rs.getInt(4), rs.getInt(5),
                        rs.getString(6), rs.getTimestamp(7).toInstant()), limit);
    }

    // ------------------------------------------------------------------ eviction

    /**
     * Bytes of the landed file the watcher waits to register (0: none). Eviction frees room for it below the
     * low-water mark when it needs more than high-water minus low-water: otherwise such a file, and the landing
     * queue behind it, would wait for ever. A hint the watcher renews at every scan: nothing is lost with it.
     */
    private volatile long waiting;

    /** The watcher's next landed file needs {@code bytes} below the high-water mark (0: it waits for nothing). */
    void waitingFor(long bytes) {
        waiting = Math.max(0, bytes);
    }

    /**
     * Archived files every hold releases become evictable; then, while the buffer is above its low-water
     * mark (or above what a waiting landed file needs, when that is lower), evictable files are deleted oldest
     * archived first. Returns how many files were deleted.
     */
    public synchronized int evict() {
        foldTotals(jdbc);
        rewriteBadCopies();
        release();
        long excess = usedBytes() - Math.min(props.lowWaterBytes(), props.highWaterBytes() - waiting);
        int deleted = 0;
        while (excess > 0) {
            record Victim(long id, String path, long size, String adler32, Timestamp modified) {}
            // oldest archived first; only files whose every wanted copy is on tape (a last check against the catalog)
            List<Victim> candidates = jdbc.query("""
                    SELECT a.file_id, a.path, a.size_bytes, a.adler32, a.modified_at FROM archive_file a
                     WHERE a.state = 'evictable' AND a.file_id <> ALL(?)
                       AND (SELECT count(*) FROM archive_copy c JOIN segment sg ON sg.file_id = c.file_id AND sg.volume_id = c.volume_id
                             WHERE c.file_id = a.file_id AND c.state = 'done' AND sg.state = 'ok') >= a.copies
                     ORDER BY a.archived_at, a.file_id LIMIT ?""",
                    (rs, i) -> new Victim(rs.getLong(1), rs.getString(2), rs.getLong(3), trim(rs.getString(4)), rs.getTimestamp(5)), skipped.toArray(Long[]::new),
                    EVICTION_CHUNK);
            if (candidates.isEmpty()) break;
            // the holds have the last word at deletion time too (another instance may have released with other holds)
            Set<Long> allowed = allowed(candidates.stream().map(Victim::id).toList());
            List<Victim> take = new ArrayList<>();
            long sum = 0;
            for (Victim v : candidates) {
                if (!allowed.contains(v.id)) {
                    skipped.add(v.id);
                    continue;
                }
                if (sum >= excess) break;
                take.add(v);
                sum += v.size;
            }
            if (take.isEmpty()) continue;
            List<Long> gone = tx.execute(s -> {
                List<Long> locked = jdbc.queryForList("""
                        SELECT file_id FROM archive_file WHERE file_id = ANY(?) AND state = 'evictable' FOR UPDATE SKIP LOCKED""",
                        Long.class, (Object) take.stream().map(Victim::id).toArray(Long[]::new));
                jdbc.update("UPDATE archive_file SET state = 'evicted', evicted_at = now(), updated_at = now() WHERE file_id = ANY(?)",
                        (Object) locked.toArray(Long[]::new));
                return locked;
            });
            Set<Long> goneSet = new HashSet<>(gone);
            for (Victim v : take) {
                if (!goneSet.contains(v.id)) {
                    skipped.add(v.id);
                    continue;
                }
                try {
                    Path p = Path.of(v.path);
                    // only the bytes that were registered (and are on tape): a file written over them since (the same
                    // name landed again, refused registration while this one was here) is not ours to delete. Its
                    // bytes are read only when it was touched: the same bytes landed again go as before
                    if (v.modified != null && Files.exists(p) && (Files.size(p) != v.size
                            || !modified(p).equals(v.modified.toInstant()) && !Checksums.adler32Of(p).equals(v.adler32)))
                        log.warn("archive: {} was written over since it was registered: its new bytes are left in place", p);
                    else Files.deleteIfExists(p);
                } catch (IOException e) {
                    log.warn("archive: cannot delete evicted buffer file {}: {}", v.path, e.toString());
                }
                excess -= v.size;
                deleted++;
            }
        }
        skipped.clear();
        if (deleted > 0) log.info("archive: evicted {} files from the buffer", deleted);
        return deleted;
    }

    private final List<Long> skipped = new ArrayList<>();

    /**
     * Tape copies a read has since found bad (a recall's checksum refused the segment: suspect, or lost) while their
     * file is still in the buffer, whose bytes are then the only good ones: queued to be written again from them.
     * Eviction wants every copy's segment ok, so such a file stayed evictable for ever, holding buffer space, and
     * nothing made the copy again. Returns how many copies were queued.
     */
    int rewriteBadCopies() {
        return tx.execute(s -> {
            List<Long> files = jdbc.queryForList("""
                    UPDATE archive_copy c SET state = 'queued', volume_id = NULL, claimed_by = NULL, lease_until = NULL,
                           not_before = now(), error = 'its copy on ' || v.label || ' is no longer good (segment ' || sg.state
                                                      || ': a read found it bad, or the library''s end of data moved'
                                                      || ' before it): written again from the buffer'
                      FROM segment sg JOIN volume v ON v.id = sg.volume_id, archive_file a
                     WHERE sg.state <> 'ok' AND sg.file_id = c.file_id AND sg.volume_id = c.volume_id AND c.state = 'done'
                       AND a.file_id = c.file_id AND a.state IN ('archived', 'evictable')
                    RETURNING c.file_id""", Long.class);
            if (files.isEmpty()) return 0;
            jdbc.update("UPDATE archive_file SET state = 'queued', updated_at = now() WHERE file_id = ANY(?) AND state IN ('archived', 'evictable')",
                    (Object) files.stream().distinct().toArray(Long[]::new));
            log.warn("archive: {} tape cop{} found bad since written (by a read, or past the library's end of data), written again from the buffer", files.size(),
                    files.size() == 1 ? "y" : "ies");
            return files.size();
        });
    }

    private Set<Long> allowed(List<Long> ids) {
        Set<Long> free = new HashSet<>(ids);
        for (EvictionHold h : holds) {
            if (free.isEmpty()) break;
            Collection<Long> ok = h.mayEvict(List.copyOf(free));
            free.retainAll(ok == null ? Set.of() : new HashSet<>(ok));
        }
        return free;
    }

    /**
     * Every archived file, read once per round and streamed (a cursor needs a transaction). Read a sorted
     * chunk at a time, each chunk read every archived file whenever the statistics were older than the buffer
     * (the state index and a sort: 82 s a round at 10^6 archived files), or walked past every evicted file.
     */
    private long[] archivedFiles() {
        return tx.execute(s -> jdbc.query(con -> {
            PreparedStatement ps = con.prepareStatement("SELECT file_id FROM archive_file WHERE state = 'archived'");
            ps.setFetchSize(EVICTION_CHUNK);
            return ps;
        }, rs -> {
            LongStream.Builder ids = LongStream.builder();
            while (rs.next()) ids.add(rs.getLong(1));
            return ids.build().toArray();
        }));
    }

    /**
     * Asks the holds about archived files and marks those all of them release as evictable. Every archived
     * file is asked at every round: a hold may let a file go at any time, and the file is then evictable at
     * the next round (the holds' own work is the bulk of a round: 1.1 s at 10^6 held files).
     */
    int release() {
        long[] archived = archivedFiles();
        LongStream.Builder released = LongStream.builder();
        for (int from = 0; from < archived.length; from += EVICTION_CHUNK) {
            List<Long> ids = Arrays.stream(archived, from, Math.min(archived.length, from + EVICTION_CHUNK)).boxed().toList();
            allowed(ids).forEach(released::add);
        }
        // one update for the round: per chunk, each could walk every archived file too (the state index)
        long[] free = released.build().toArray();
        if (free.length == 0) return 0;
        return jdbc.update("UPDATE archive_file SET state = 'evictable', updated_at = now() WHERE file_id = ANY(?) AND state = 'archived'",
                (Object) free);
    }
}
