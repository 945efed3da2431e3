package dev.stagehand.bench;

import dev.stagehand.StagehandApplication;
import dev.stagehand.api.security.ApiRole;
import dev.stagehand.api.security.ApiUser;
import dev.stagehand.api.security.ExperimentAccess;
import dev.stagehand.api.security.StorageScopes;
import dev.stagehand.catalog.CatalogImporter;
import dev.stagehand.recall.StageRequests;
import dev.stagehand.recall.StageRequests.FileState;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.springframework.boot.SpringApplication;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * What a status poll of a large stage request costs in PostgreSQL, before V30 (every file counted, every path
 * read for a token's scope check) and now (running counts per state, the request's smallest and largest path),
 * on the same data: a request of {@code files} files (10^6: a whole-experiment recall) with files in several
 * states, and the WLCG-sized one of {@code wlcg} files whose poll returns every file. Also what the counting
 * triggers add to a submission and to bulk state changes. Usage: RequestPollBench [files] [wlcg].
 */
public final class RequestPollBench {

    private static final String TRIGGERS = "stage_request_file_inserted, stage_request_file_updated, stage_request_file_deleted";

    public static void main(String[] args) throws Exception {
        int files = args.length > 0 ? Integer.parseInt(args[0]) : 1_000_000;
        int wlcg = args.length > 1 ? Integer.parseInt(args[1]) : StageRequests.MAX_FILES;
        Path dump = BenchSupport.catalogFor(files);
        String[] spring = Arrays.copyOf(BenchSupport.springArgs(false), BenchSupport.springArgs(false).length + 1);
        spring[spring.length - 1] = "--stagehand.recall.enabled=false"; // nothing else changes the files while they are timed
        try (var ctx = SpringApplication.run(StagehandApplication.class, spring)) {
            JdbcTemplate jdbc = ctx.getBean(JdbcTemplate.class);
            StageRequests requests = ctx.getBean(StageRequests.class);
            BenchSupport.clean(jdbc);
            ctx.getBean(CatalogImporter.class).importFile(dump);
            jdbc.execute("VACUUM ANALYZE");

            // the counting triggers' share of a submission's insert: the same insert without them, then with them
            setTriggers(jdbc, false);
            UUID scratch = UUID.randomUUID();
            double insertWithout = BenchSupport.seconds(() -> request(jdbc, scratch, "ORDER BY name LIMIT " + files));
            jdbc.update("DELETE FROM stage_request WHERE id = ?", scratch);
            setTriggers(jdbc, true);
            UUID big = UUID.randomUUID();
            double insertWith = BenchSupport.seconds(() -> request(jdbc, big, "ORDER BY name LIMIT " + files));
            UUID small = UUID.randomUUID();
            request(jdbc, small, "ORDER BY name DESC LIMIT " + wlcg);

            // a bulk change of a tenth of the files: without the triggers (and back), then with them
            String claim = "UPDATE stage_request_file SET state = 'staging', started_at = now() WHERE request_id = '" + big
                    + "' AND ordinal <= " + files / 10;
            setTriggers(jdbc, false);
            double bulkWithout = BenchSupport.seconds(() -> jdbc.update(claim));
            jdbc.update("UPDATE stage_request_file SET state = 'queued', started_at = NULL WHERE request_id = ?", big);
            setTriggers(jdbc, true);
            double bulkWith = BenchSupport.seconds(() -> jdbc.update(claim));
            // files in every state, some released, some cancelled, as a recall under way has them
            jdbc.update("UPDATE stage_request_file SET state = 'on_disk' WHERE request_id = ? AND ordinal % 10 = 1", big);
            jdbc.update("UPDATE stage_request_file SET released = true WHERE request_id = ? AND ordinal % 20 = 1", big);
            jdbc.update("UPDATE stage_request_file SET state = 'failed', error = 'bench' WHERE request_id = ? AND ordinal % 97 = 0", big);
            jdbc.update("UPDATE stage_request_file SET state = 'cancelled' WHERE request_id = ? AND ordinal % 101 = 0 AND state = 'queued'", big);
            jdbc.update("UPDATE stage_request_file SET state = 'on_disk' WHERE request_id = ? AND ordinal % 3 = 0", small);
            jdbc.execute("VACUUM ANALYZE stage_request_file");
            for (UUID id : List.of(big, small)) {
                if (!before(jdbc, id).equals(requests.counts(id).byState())) throw new IllegalStateException("counts differ for " + id);
            }

            ApiUser scoped = new ApiUser("bench", ApiRole.VIEWER, Set.of(ApiUser.ALL_EXPERIMENTS), "jwt", null,
                    new ApiUser.Jwt("bench", "bench", List.of(), StorageScopes.parse("storage.read:/bench", "/")));
            double countBefore = BenchSupport.median5(() -> BenchSupport.seconds(() -> before(jdbc, big)));
            double countNow = BenchSupport.median5(() -> BenchSupport.seconds(() -> requests.counts(big)));
            double scopeBefore = BenchSupport.median5(() -> BenchSupport.seconds(() ->
                    ExperimentAccess.withinScopes(scoped, StorageScopes.Op.READ, null, () -> requests.paths(big))));
            double scopeNow = BenchSupport.median5(() -> BenchSupport.seconds(() ->
                    ExperimentAccess.withinScopes(scoped, StorageScopes.Op.READ, null, requests, big)));
            double page = BenchSupport.median5(() -> BenchSupport.seconds(() -> requests.files(big, files / 2, 1000)));
            double wlcgCountBefore = BenchSupport.median5(() -> BenchSupport.seconds(() -> before(jdbc, small)));
            double wlcgCountNow = BenchSupport.median5(() -> BenchSupport.seconds(() -> requests.counts(small)));
            double wlcgFiles = BenchSupport.median5(() -> BenchSupport.seconds(() -> requests.files(small, 0, StageRequests.MAX_FILES)));
            double backfill = BenchSupport.seconds(() -> jdbc.queryForList("SELECT request_id, state, count(*), count(*) "
                    + "FILTER (WHERE released) FROM stage_request_file GROUP BY request_id, state"));

            System.out.printf(Locale.ROOT, "%nstatus polls, %,d-file request (counts equal before and now; medians of 5, ms):%n", files);
            row("per-state counts", countBefore, countNow);
            row("token scope check (storage.read:/bench)", scopeBefore, scopeNow);
            row("native poll: counts + scope + page of 1,000", countBefore + scopeBefore + page, countNow + scopeNow + page);
            System.out.printf(Locale.ROOT, "%,d-file request (WLCG poll: every file):%n", wlcg);
            row("per-state counts", wlcgCountBefore, wlcgCountNow);
            row("WLCG poll: counts + every file", wlcgCountBefore + wlcgFiles, wlcgCountNow + wlcgFiles);
            System.out.printf(Locale.ROOT, "what the counting triggers cost (s): insert of %,d files %.2f without, %.2f with; "
                    + "update of %,d files %.2f without, %.2f with; V30's count of all %,d files %.2f%n", files, insertWithout,
                    insertWith, files / 10, bulkWithout, bulkWith, files + wlcg, backfill);
        }
    }

    /** The counts as every poll made them before V30: every file of the request read and grouped. */
    private static Map<FileState, Long> before(JdbcTemplate jdbc, UUID id) {
        Map<FileState, Long> counts = new EnumMap<>(FileState.class);
        for (FileState st : FileState.values()) counts.put(st, 0L);
        jdbc.query("SELECT state, count(*), count(*) FILTER (WHERE released) FROM stage_request_file WHERE request_id = ? GROUP BY state",
                rs -> { counts.put(FileState.ofDb(rs.getString(1)), rs.getLong(2)); }, id);
        Long absent = jdbc.queryForObject("SELECT count(*) FROM stage_request_absent WHERE request_id = ?", Long.class, id);
        counts.merge(FileState.FAILED, absent, Long::sum);
        return counts;
    }

    /** A request of the catalog files {@code pick} chooses, with the path bounds a submission records. */
    private static void request(JdbcTemplate jdbc, UUID id, String pick) {
        jdbc.update("INSERT INTO stage_request (id, owner, experiment, file_count) VALUES (?, 'bench', 'atlas', 1)", id);
        int n = jdbc.update("INSERT INTO stage_request_file (request_id, file_id, ordinal) "
                + "SELECT ?, id, row_number() OVER () FROM (SELECT id FROM file " + pick + ") p", id);
        // the bench's names are ASCII: byte order is Java's String order
        jdbc.update("""
                UPDATE stage_request r SET file_count = ?, first_path = b.lo, last_path = b.hi
                  FROM (SELECT min(f.name COLLATE "C") AS lo, max(f.name COLLATE "C") AS hi
                          FROM stage_request_file s JOIN file f ON f.id = s.file_id WHERE s.request_id = ?) b
                 WHERE r.id = ?""", n, id, id);
    }

    private static void setTriggers(JdbcTemplate jdbc, boolean on) {
        for (String t : TRIGGERS.split(", ")) {
            jdbc.execute("ALTER TABLE stage_request_file " + (on ? "ENABLE ALWAYS" : "DISABLE") + " TRIGGER " + t);
        }
    }

    private static void row(String what, double before, double now) {
        System.out.printf(Locale.ROOT, "  %-48s before %9.2f   now %7.2f%n", what, before * 1e3, now * 1e3);
    }
}
