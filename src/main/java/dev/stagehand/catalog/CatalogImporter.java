package dev.stagehand.catalog;

import dev.stagehand.catalog.CatalogImportRejected.RowError;
import dev.stagehand.catalog.importer.DumpReader;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.GZIPInputStream;
import javax.sql.DataSource;
import org.postgresql.PGConnection;
import org.postgresql.copy.CopyIn;
import org.springframework.stereotype.Service;

/**
 * Bulk-loads tape locations from an HSM dump (CSV, optionally gzip) into dataset, file, volume and segment.
 *
 * <p>All in one transaction: rows are checked while they stream through {@code COPY} into a temporary
 * staging table; checks that need the whole dump (one size per file, one offset per file and volume, one
 * experiment per dataset, agreement with what the catalog already holds) run in SQL; then set-based
 * {@code INSERT ... ON CONFLICT DO NOTHING} fills the real tables, so importing the same dump again changes
 * nothing. Any error rolls everything back.
 */
@Service
public class CatalogImporter {

    public static final int MAX_REPORTED_ERRORS = 20;
    private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(CatalogImporter.class);

    private final DataSource dataSource;

    public CatalogImporter(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    /** Imports a dump file (gzip recognised by its magic bytes). */
    public ImportSummary importFile(Path file) {
        try (InputStream in = Files.newInputStream(file)) {
            return importStream(in, file.toString());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file + ": " + e.getMessage(), e);
        }
    }

    /**
     * Imports a dump read from {@code in} (plain or gzip).
     *
     * @throws CatalogImportRejected when any row is malformed or contradicts another; nothing is committed
     */
    public ImportSummary importStream(InputStream raw, String source) {
        long t0 = System.nanoTime();
        try (Connection c = dataSource.getConnection()) {
            boolean autoCommit = c.getAutoCommit();
            c.setAutoCommit(false);
            try {
                ImportSummary summary = load(c, maybeGunzip(raw), source, t0);
                c.commit();
                return summary;
            } catch (RuntimeException | IOException | SQLException e) {
                c.rollback();
                throw e;
            } finally {
                c.setAutoCommit(autoCommit);
            }
        } catch (SQLException e) {
            throw new IllegalStateException("catalog import of " + source + " failed in the database: " + e.getMessage(), e);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + source + ": " + e.getMessage(), e);
        }
    }

    private ImportSummary load(Connection c, InputStream in, String source, long t0) throws SQLException, IOException {
        StringBuilder phases = new StringBuilder();
        try (Statement st = c.createStatement()) {
            st.execute("SET LOCAL work_mem = '256MB'");
            st.execute("CREATE TEMP TABLE catalog_stage (line bigint, file text, volume text, offset_bytes bigint, "
                    + "size_bytes bigint, experiment text, dataset text, adler32 text, fseq integer, library text, "
                    + "media_type text) ON COMMIT DROP");
        }
        CopyIn copy = c.unwrap(PGConnection.class).getCopyAPI()
                .copyIn("COPY catalog_stage (" + DumpReader.COPY_COLUMNS + ") FROM STDIN (FORMAT text)");
        DumpReader.Result read;
        try {
            read = new DumpReader(MAX_REPORTED_ERRORS).read(in, (bytes, len) -> {
                try {
                    copy.writeToCopy(bytes, 0, len);
                } catch (SQLException e) {
                    throw new IOException(e);
                }
            });
        } catch (IOException | RuntimeException e) {
            if (copy.isActive()) copy.cancelCopy(); // leave the connection usable for the rollback
            throw e;
        }
        if (read.errorCount() > 0) {
            if (copy.isActive()) copy.cancelCopy();
            throw new CatalogImportRejected(source, read.errors(), read.errorCount());
        }
        copy.endCopy();
        phases.append(String.format("read+copy %.1f s", (System.nanoTime() - t0) / 1e9));

        try (Statement st = c.createStatement()) {
            // One row per (file, volume), the first by line that has a checksum if any has (the rows agree on
            // the rest or are refused below); kept for the inserts below. Taking the first row alone dropped a
            // checksum given only on a later row of the copy: the file was stored without one, and its first read
            // from tape was recorded as its checksum, whatever it delivered.
            st.execute("CREATE TEMP TABLE catalog_segment ON COMMIT DROP AS "
                    + "SELECT DISTINCT ON (file, volume) * FROM catalog_stage ORDER BY file, volume, (adler32 IS NULL), line");
            st.execute("ANALYZE catalog_stage");
            st.execute("ANALYZE catalog_segment");
            mark(phases, "dedup", t0);
            List<RowError> errors = new ArrayList<>();
            long count = consistencyErrors(st, errors);
            mark(phases, "checks", t0);
            if (count > 0) throw new CatalogImportRejected(source, errors, count);

            boolean bulk = bulkReferencesAllowed(st);
            if (bulk) lockReferencedRows(st);
            long datasets = scalar(st, "SELECT count(DISTINCT dataset) FROM catalog_segment");
            long newDatasets = st.executeUpdate("INSERT INTO dataset (name, experiment) "
                    + "SELECT DISTINCT ON (dataset) dataset, experiment FROM catalog_segment WHERE dataset IS NOT NULL "
                    + "ORDER BY dataset, line ON CONFLICT (name) DO NOTHING");
            long volumes = scalar(st, "SELECT count(DISTINCT volume) FROM catalog_segment");
            long newVolumes = st.executeUpdate("INSERT INTO volume (label, library, media_type) "
                    + "SELECT DISTINCT ON (volume) volume, coalesce(library, 'default'), coalesce(media_type, 'LTO-9') "
                    + "FROM catalog_segment ORDER BY volume, (library IS NULL), line ON CONFLICT (label) DO NOTHING");
            long files = scalar(st, "SELECT count(DISTINCT file) FROM catalog_segment");
            long newFiles = st.executeUpdate("INSERT INTO file (name, size_bytes, adler32, dataset_id, experiment) "
                    + "SELECT DISTINCT ON (s.file) s.file, s.size_bytes, s.adler32, d.id, s.experiment "
                    + "FROM catalog_segment s LEFT JOIN dataset d ON d.name = s.dataset "
                    + "ORDER BY s.file, (s.adler32 IS NULL), s.line ON CONFLICT (name) DO NOTHING");
            // A later dump may know a checksum or a dataset an earlier one did not (one that differs was refused).
            st.executeUpdate("UPDATE file f SET adler32 = s.adler32 FROM catalog_segment s "
                    + "WHERE f.name = s.file AND f.adler32 IS NULL AND s.adler32 IS NOT NULL");
            st.executeUpdate("UPDATE file f SET dataset_id = d.id FROM catalog_segment s JOIN dataset d ON d.name = s.dataset "
                    + "WHERE f.name = s.file AND f.dataset_id IS NULL");
            long segments = scalar(st, "SELECT count(*) FROM catalog_segment");
            long newSegments = st.executeUpdate("INSERT INTO segment (file_id, volume_id, offset_bytes, fseq) "
                    + "SELECT f.id, v.id, s.offset_bytes, s.fseq FROM catalog_segment s "
                    + "JOIN file f ON f.name = s.file JOIN volume v ON v.label = s.volume "
                    + "ON CONFLICT (file_id, volume_id) DO NOTHING");
            mark(phases, "inserts", t0);
            if (bulk) st.execute("SET LOCAL session_replication_role = origin");
            log.info("catalog import of {}: {}{}", source, phases, bulk ? " (set-based reference checks)" : "");
            double seconds = (System.nanoTime() - t0) / 1e9;
            return new ImportSummary(source, read.rows(), files, newFiles, segments, newSegments, volumes, newVolumes,
                    datasets, newDatasets, read.ignoredColumns(), seconds);
        }
    }

    /**
     * Rows that contradict an earlier row of the dump or the catalog. Each row is compared with the first
     * row (by line) of its file, of its file and volume, and of its dataset, and with the stored file,
     * segment and dataset.
     */
    private static long consistencyErrors(Statement st, List<RowError> errors) throws SQLException {
        String sql = """
                WITH firsts AS (
                  SELECT s.line, s.file, s.volume, s.size_bytes, s.offset_bytes, s.experiment, s.dataset, s.adler32,
                         first_value(s.line)         OVER wf AS f_line,
                         first_value(s.size_bytes)   OVER wf AS f_size,
                         first_value(s.experiment)   OVER wf AS f_experiment,
                         first_value(s.dataset)      OVER wf AS f_dataset,
                         first_value(s.line)         OVER wv AS v_line,
                         first_value(s.offset_bytes) OVER wv AS v_offset
                  FROM catalog_stage s
                  WINDOW wf AS (PARTITION BY s.file ORDER BY s.volume, s.line),
                         wv AS (PARTITION BY s.file, s.volume ORDER BY s.line)
                ), adler AS (
                  SELECT file, min(adler32) AS a FROM catalog_stage WHERE adler32 IS NOT NULL GROUP BY file
                ), ds AS (
                  SELECT DISTINCT ON (dataset) dataset, experiment, line FROM catalog_stage
                  WHERE dataset IS NOT NULL ORDER BY dataset, line
                ), problems AS (
                  SELECT line, format('file %s: size %s differs from %s on line %s', file, size_bytes, f_size, f_line) AS reason
                    FROM firsts WHERE size_bytes <> f_size
                  UNION ALL
                  SELECT line, format('file %s: experiment %s differs from %s on line %s', file, experiment, f_experiment, f_line)
                    FROM firsts WHERE experiment <> f_experiment
                  UNION ALL
                  SELECT line, format('file %s: dataset %s differs from %s on line %s', file, coalesce(dataset, '(none)'),
                         coalesce(f_dataset, '(none)'), f_line)
                    FROM firsts WHERE dataset IS DISTINCT FROM f_dataset
                  UNION ALL
                  SELECT line, format('file %s on volume %s: offset %s differs from %s on line %s', file, volume, offset_bytes, v_offset, v_line)
                    FROM firsts WHERE offset_bytes <> v_offset
                  UNION ALL
                  -- two files cannot start at one position of a volume (a read there would deliver the other's
                  -- bytes); an empty file takes no room, so the next file may start where it is
                  SELECT line, format('file %s on volume %s: offset %s is that of file %s on line %s', file, volume,
                         offset_bytes, p_file, p_line)
                    FROM (SELECT s.line, s.file, s.volume, s.offset_bytes,
                                 first_value(s.file) OVER wp AS p_file, first_value(s.line) OVER wp AS p_line
                            FROM catalog_segment s WHERE s.size_bytes > 0
                          WINDOW wp AS (PARTITION BY s.volume, s.offset_bytes ORDER BY s.line)) same_position
                   WHERE file <> p_file
                  UNION ALL
                  SELECT s.line, format('file %s on volume %s: offset %s is that of file %s in the catalog', s.file, s.volume,
                         s.offset_bytes, f.name)
                    FROM catalog_segment s JOIN volume v ON v.label = s.volume
                    JOIN segment g ON g.volume_id = v.id AND g.offset_bytes = s.offset_bytes
                    JOIN file f ON f.id = g.file_id
                   WHERE f.name <> s.file AND f.size_bytes > 0 AND s.size_bytes > 0
                  UNION ALL
                  SELECT s.line, format('file %s: adler32 %s differs from %s elsewhere in the dump', s.file, s.adler32, a.a)
                    FROM catalog_stage s JOIN adler a ON a.file = s.file WHERE s.adler32 <> a.a
                  UNION ALL
                  SELECT s.line, format('dataset %s: experiment %s differs from %s on line %s', s.dataset, s.experiment, ds.experiment, ds.line)
                    FROM catalog_stage s JOIN ds ON ds.dataset = s.dataset WHERE s.experiment <> ds.experiment
                  UNION ALL
                  SELECT line, reason FROM (
                    SELECT s.line, unnest(ARRAY[
                      CASE WHEN f.size_bytes <> s.size_bytes
                        THEN format('file %s: size %s differs from the catalog (%s)', s.file, s.size_bytes, f.size_bytes) END,
                      CASE WHEN f.adler32 <> s.adler32
                        THEN format('file %s: adler32 %s differs from the catalog (%s)', s.file, s.adler32, f.adler32) END,
                      CASE WHEN f.experiment <> s.experiment
                        THEN format('file %s: experiment %s differs from the catalog (%s)', s.file, s.experiment, f.experiment) END,
                      CASE WHEN g.offset_bytes <> s.offset_bytes
                        THEN format('file %s on volume %s: offset %s differs from the catalog (%s)', s.file, s.volume, s.offset_bytes, g.offset_bytes) END,
                      CASE WHEN fd.name <> s.dataset
                        THEN format('file %s: dataset %s differs from the catalog (%s)', s.file, s.dataset, fd.name) END
                    ]) AS reason
                    FROM catalog_segment s JOIN file f ON f.name = s.file
                    LEFT JOIN volume v ON v.label = s.volume
                    LEFT JOIN segment g ON g.file_id = f.id AND g.volume_id = v.id
                    LEFT JOIN dataset fd ON fd.id = f.dataset_id
                    WHERE f.size_bytes <> s.size_bytes OR f.adler32 <> s.adler32 OR f.experiment <> s.experiment
                       OR g.offset_bytes <> s.offset_bytes OR fd.name <> s.dataset
                  ) catalog_checks WHERE reason IS NOT NULL
                  UNION ALL
                  SELECT s.line, format('dataset %s: experiment %s differs from the catalog (%s)', s.dataset, s.experiment, d.experiment)
                    FROM ds s JOIN dataset d ON d.name = s.dataset WHERE d.experiment <> s.experiment
                )
                SELECT line, reason, count(*) OVER () AS total FROM problems ORDER BY line, reason
                """ + " LIMIT " + MAX_REPORTED_ERRORS;
        long total = 0;
        try (ResultSet rs = st.executeQuery(sql)) {
            while (rs.next()) {
                errors.add(new RowError(rs.getLong(1), rs.getString(2)));
                total = rs.getLong(3);
            }
        }
        return total;
    }

    /**
     * Foreign keys are checked by PostgreSQL one inserted row at a time (a query and a row lock per row),
     * which is 80% of the time of a million-row import. The rows inserted here reference only ids taken by
     * inner joins from the referenced tables in this same transaction, so they cannot dangle, provided the
     * pre-existing referenced rows cannot be deleted before commit: {@link #lockReferencedRows} takes the
     * same key-share locks the per-row checks would, in three set-based statements. This needs
     * {@code session_replication_role = replica}, which only a superuser may set (so: the embedded
     * cluster, not a shared production database) and which would also silence ordinary triggers, so it is
     * used only when these tables have none. Otherwise the import takes the normal, slower path.
     */
    private static boolean bulkReferencesAllowed(Statement st) throws SQLException {
        boolean superuser = scalar(st, "SELECT count(*) FROM pg_roles WHERE rolname = current_user AND rolsuper") > 0;
        // triggers replica mode would skip (ENABLE ALWAYS ones, such as replication's mark of datasets that got
        // files, still fire)
        long userTriggers = scalar(st, "SELECT count(*) FROM pg_trigger WHERE NOT tgisinternal AND tgenabled = 'O' AND tgrelid IN "
                + "('dataset'::regclass, 'file'::regclass, 'volume'::regclass, 'segment'::regclass)");
        if (!superuser || userTriggers > 0) return false;
        st.execute("SET LOCAL session_replication_role = replica");
        return true;
    }

    /** Key-share locks on the existing rows new rows will reference (the locks the per-row checks take). */
    private static void lockReferencedRows(Statement st) throws SQLException {
        st.execute("SELECT count(*) FROM (SELECT 1 FROM dataset d WHERE d.name IN (SELECT dataset FROM catalog_segment) "
                + "FOR KEY SHARE) l");
        st.execute("SELECT count(*) FROM (SELECT 1 FROM volume v WHERE v.label IN (SELECT volume FROM catalog_segment) "
                + "FOR KEY SHARE) l");
        // existing files that get a new copy (files new in this import are invisible to others until commit)
        st.execute("SELECT count(*) FROM (SELECT 1 FROM file f JOIN catalog_segment s ON s.file = f.name "
                + "LEFT JOIN volume v ON v.label = s.volume "
                + "WHERE NOT EXISTS (SELECT 1 FROM segment g WHERE g.file_id = f.id AND g.volume_id = v.id) "
                + "FOR KEY SHARE OF f) l");
    }

    private static void mark(StringBuilder phases, String name, long t0) {
        phases.append(String.format(", %s until %.1f s", name, (System.nanoTime() - t0) / 1e9));
    }

    private static long scalar(Statement st, String sql) throws SQLException {
        try (ResultSet rs = st.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static InputStream maybeGunzip(InputStream raw) throws IOException {
        BufferedInputStream in = new BufferedInputStream(raw, 1 << 16);
        in.mark(2);
        int b1 = in.read(), b2 = in.read();
        in.reset();
        return (b1 == 0x1f && b2 == 0x8b) ? new GZIPInputStream(in, 1 << 16) : in;
    }
}
