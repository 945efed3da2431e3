package dev.stagehand.bench;

import dev.stagehand.archive.ArchiveBuffer.BufferUsage;
import dev.stagehand.archive.ArchiveBuffer.FamilyQueue;
import dev.stagehand.archive.internal.JdbcArchiveBuffer;
import java.util.List;
import java.util.Map;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The archive buffer's figures at scale: B files in the buffer (half queued, the rest archived or evictable, a
 * few being written or failed) over F families, and E evicted before them. Times the sums the service ran
 * before V29 (their SQL as it was) against the kept totals the buffer reads now, checks both give the same
 * figures, and prices the totals' upkeep: a bulk update with and without the trigger, a read with 1,000
 * changes not yet folded, and the fold.
 *   bench/archive-buffer.sh [files-in-buffer] [evicted] [families]   (defaults 2000000 1000000 20)
 */
public final class ArchiveBufferBench {

    /** The buffer's use as every poll, registration and eviction round summed it before V29. */
    static final String USED_BEFORE = """
            SELECT coalesce(sum(size_bytes), 0) FROM archive_file
             WHERE state IN ('queued', 'writing', 'archived', 'evictable', 'failed')""";
    /** The API's and the console's files and bytes per state before V29. */
    static final String USAGE_BEFORE = "SELECT state, count(*), coalesce(sum(size_bytes), 0) FROM archive_file GROUP BY state";
    /** The console's queues before V29 (without the open volume each appends to, the same in both). */
    static final String QUEUES_BEFORE = """
            SELECT c.family, c.copy_no, count(*) FILTER (WHERE c.state = 'queued') AS files,
                   coalesce(sum(a.size_bytes) FILTER (WHERE c.state = 'queued'), 0) AS bytes,
                   count(*) FILTER (WHERE c.state = 'writing') AS writing, min(a.registered_at) AS oldest
              FROM archive_copy c JOIN archive_file a ON a.file_id = c.file_id
             WHERE c.state IN ('queued', 'writing') GROUP BY c.family, c.copy_no
             ORDER BY oldest, c.family, c.copy_no""";

    public static void main(String[] args) {
        long buffered = (long) ArchiveBench.arg(args, 0, 2_000_000);
        long evicted = (long) ArchiveBench.arg(args, 1, 1_000_000);
        int families = (int) ArchiveBench.arg(args, 2, 20);
        try (ConfigurableApplicationContext ctx = BenchSupport.withoutRounds()) {
            JdbcTemplate jdbc = ctx.getBean(JdbcTemplate.class);
            JdbcArchiveBuffer buffer = ctx.getBean(JdbcArchiveBuffer.class);
            BenchSupport.clean(jdbc);
            double setUp = BenchSupport.seconds(() -> fill(jdbc, buffered, evicted, families));

            double usedBefore = BenchSupport.median5(() -> BenchSupport.seconds(() -> jdbc.queryForObject(USED_BEFORE, Long.class)));
            double usageBefore = BenchSupport.median5(() -> BenchSupport.seconds(() -> jdbc.queryForList(USAGE_BEFORE)));
            double queuesBefore = BenchSupport.median5(() -> BenchSupport.seconds(() -> jdbc.queryForList(QUEUES_BEFORE)));
            double usageAfter = BenchSupport.median5(() -> BenchSupport.seconds(buffer::usage));
            double queuesAfter = BenchSupport.median5(() -> BenchSupport.seconds(buffer::queues));
            same(jdbc, buffer);

            // upkeep: a bulk statement over a tenth of the buffer, the trigger on and off
            long bulkFiles = jdbc.queryForObject("SELECT count(*) FROM archive_file WHERE state = 'evictable'", Long.class);
            double[] bulk = BenchSupport.withAndWithoutTrigger(jdbc, "archive_file", "archive_file_updated",
                    "UPDATE archive_file SET updated_at = now() WHERE state = 'evictable'");
            // 1,000 single-file changes (as the flusher's writes) read before a fold, then folded
            List<Long> ids = jdbc.queryForList("SELECT file_id FROM archive_file WHERE state = 'archived' LIMIT 1000", Long.class);
            for (long id : ids) jdbc.update("UPDATE archive_file SET state = 'evictable' WHERE file_id = ?", id);
            long pending = jdbc.queryForObject("SELECT count(*) FROM archive_buffer_change", Long.class);
            double unfolded = BenchSupport.seconds(buffer::usage);
            double fold = BenchSupport.seconds(() -> JdbcArchiveBuffer.foldTotals(jdbc));
            same(jdbc, buffer);
            // the catalog's delete of 10,000 queued files, cascaded to their buffer rows: one change row per file?
            double cascade = BenchSupport.seconds(() -> jdbc.update(
                    "DELETE FROM file WHERE id IN (SELECT file_id FROM archive_file WHERE state = 'queued' ORDER BY file_id LIMIT 10000)"));
            long cascaded = jdbc.queryForObject("SELECT count(*) FROM archive_buffer_change", Long.class);
            same(jdbc, buffer);

            long queued = jdbc.queryForObject("SELECT count(*) FROM archive_copy WHERE state = 'queued'", Long.class);
            System.out.printf("archive buffer: %,d files in it (%,d queued copies, %d families), %,d evicted before (set-up %.0f s)%n",
                    buffered, queued, families, evicted, setUp);
            System.out.printf("  used bytes    summed over the buffer (before) %8.1f ms%n", usedBefore * 1e3);
            System.out.printf("  per state     grouped over every file (before) %7.1f ms   kept totals (now) %7.2f ms%n",
                    usageBefore * 1e3, usageAfter * 1e3);
            System.out.printf("  queues        summed over the queue (before)   %7.1f ms   kept totals (now) %7.2f ms%n",
                    queuesBefore * 1e3, queuesAfter * 1e3);
            System.out.printf("  a bulk update of %,d files: trigger on %.3f s, off %.3f s%n", bulkFiles, bulk[0], bulk[1]);
            System.out.printf("  %,d change rows not folded: read %.2f ms; folding them %.1f ms%n",
                    pending, unfolded * 1e3, fold * 1e3);
            System.out.printf("  a cascaded delete of 10,000 queued files: %.3f s, %,d change rows%n", cascade, cascaded);
        }
    }

    /**
     * Catalog rows by SQL: the evicted files first, then the buffer (even files queued, one in ten of them with
     * two copies; of the odd, one in 500 writing, one in 500 failed, one in 5 evictable, the rest archived).
     */
    static void fill(JdbcTemplate jdbc, long buffered, long evicted, int families) {
        jdbc.update("""
                INSERT INTO file (name, size_bytes, adler32, experiment)
                SELECT '/ab/f' || g, 1000000 + g % 1000, '00000001', 'bench' FROM generate_series(0, ? - 1) g""", buffered + evicted);
        jdbc.update("""
                INSERT INTO archive_file (file_id, path, size_bytes, adler32, family, storage_class, copies, state, registered_at, archived_at)
                SELECT f.id, '/landing' || f.name, f.size_bytes, f.adler32, 'ab' || (s.k % ?), s.sc, s.copies, s.state,
                       now() - interval '1 day' + s.n * interval '1 ms', CASE WHEN s.state IN ('archived', 'evictable', 'evicted') THEN now() END
                  FROM file f, LATERAL (SELECT substr(f.name, 6)::bigint AS n, substr(f.name, 6)::bigint - ? AS k) x,
                       LATERAL (SELECT x.n, x.k,
                                       CASE WHEN x.k < 0 THEN 'evicted' WHEN x.k % 2 = 0 THEN 'queued'
                                            WHEN x.k % 1000 = 1 THEN 'writing' WHEN x.k % 1000 = 3 THEN 'failed'
                                            WHEN x.k % 10 IN (5, 9) THEN 'evictable' ELSE 'archived' END AS state,
                                       CASE WHEN x.k % 20 = 0 THEN 'dual' ELSE 'single' END AS sc,
                                       CASE WHEN x.k % 20 = 0 THEN 2 ELSE 1 END AS copies) s""", families, evicted);
        jdbc.update("""
                INSERT INTO archive_copy (file_id, copy_no, family, state, claimed_by, size_bytes, registered_at)
                SELECT a.file_id, c.n, a.family,
                       CASE a.state WHEN 'queued' THEN 'queued' WHEN 'writing' THEN 'writing' WHEN 'failed' THEN 'failed' ELSE 'done' END,
                       CASE WHEN a.state = 'writing' THEN 'bench' END, a.size_bytes, a.registered_at
                  FROM archive_file a CROSS JOIN LATERAL generate_series(1, a.copies) c(n) ORDER BY a.file_id, c.n""");
        JdbcArchiveBuffer.foldTotals(jdbc);
        jdbc.execute("VACUUM ANALYZE");
    }

    /** The kept totals give what the sums gave. */
    static void same(JdbcTemplate jdbc, JdbcArchiveBuffer buffer) {
        BufferUsage u = buffer.usage();
        long used = jdbc.queryForObject(USED_BEFORE, Long.class);
        if (u.usedBytes() != used) throw new IllegalStateException("used bytes " + u.usedBytes() + ", summed " + used);
        for (Map<String, Object> r : jdbc.queryForList(USAGE_BEFORE)) {
            String state = (String) r.get("state");
            if (u.files().get(state) != ((Number) r.get("count")).longValue()
                    || u.bytes().get(state) != ((Number) r.get("coalesce")).longValue())
                throw new IllegalStateException(state + ": " + u.files().get(state) + " files " + u.bytes().get(state) + " bytes, summed " + r);
        }
        List<String> summed = jdbc.query(QUEUES_BEFORE, (rs, i) -> rs.getString(1) + '/' + rs.getInt(2) + ' ' + rs.getLong(3) + ' '
                + rs.getLong(4) + ' ' + rs.getLong(5) + ' ' + rs.getTimestamp(6).toInstant());
        List<String> kept = buffer.queues().stream().map(ArchiveBufferBench::line).toList();
        if (!kept.equals(summed)) throw new IllegalStateException("queues differ:\n" + kept + "\n" + summed);
    }

    static String line(FamilyQueue q) {
        return q.family() + '/' + q.copy() + ' ' + q.files() + ' ' + q.bytes() + ' ' + q.writing() + ' ' + q.oldest();
    }
}
