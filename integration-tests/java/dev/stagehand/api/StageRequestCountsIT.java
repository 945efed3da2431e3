package dev.stagehand.api;

import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.ItCatalog;
import dev.stagehand.catalog.CatalogImporter;
import dev.stagehand.recall.StageRequestRejected;
import dev.stagehand.recall.StageRequests;
import dev.stagehand.recall.StageRequests.FileState;
import dev.stagehand.recall.StageRequests.NewStageRequest;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * A request's per-state counts (V30) are running counts kept by triggers: they must stay exactly what counting
 * every file of the request gives, whatever changes the files (submission, the scheduler's single and bulk
 * statements, release, cancellation, delete, rollbacks, concurrent transactions, replica mode, TRUNCATE), and
 * both APIs' polls answer them.
 */
// a database of its own: no other context's scheduler changes these files, and TRUNCATE locks no one else
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {"stagehand.db.local-database=stagehand_request_counts", "stagehand.recall.enabled=false",
        "stagehand.transfer.queue.enabled=false"})
class StageRequestCountsIT {

    @Autowired JdbcTemplate jdbc;
    @Autowired TransactionTemplate tx;
    @Autowired StageRequests requests;
    @Autowired CatalogImporter importer;
    @Autowired dev.stagehand.api.security.ApiTokens tokens;
    @LocalServerPort int port;

    /** The counts as they were made before V30: every file of the request read (absent files are failed ones). */
    Map<FileState, Long> truth(UUID id) {
        Map<FileState, Long> counts = new EnumMap<>(FileState.class);
        for (FileState st : FileState.values()) counts.put(st, 0L);
        jdbc.query("SELECT state, count(*) FROM stage_request_file WHERE request_id = ? GROUP BY state",
                rs -> { counts.put(FileState.ofDb(rs.getString(1)), rs.getLong(2)); }, id);
        counts.merge(FileState.FAILED, jdbc.queryForObject("SELECT count(*) FROM stage_request_absent WHERE request_id = ?",
                Long.class, id), Long::sum);
        return counts;
    }

    void assertExact(UUID... ids) {
        for (UUID id : ids) {
            var counts = requests.counts(id);
            assertThat(counts.byState()).as("request %s", id).isEqualTo(truth(id));
            assertThat(counts.released()).isEqualTo(jdbc.queryForObject(
                    "SELECT count(*) FROM stage_request_file WHERE request_id = ? AND released", Long.class, id));
        }
    }

    UUID submit(List<String> files) {
        return requests.submit("it", new NewStageRequest(null, files, null, null, null, "atlas")).request().id();
    }

    Long[] ids(List<String> names) {
        return jdbc.queryForList("SELECT id FROM file WHERE name = ANY(?)", Long.class, (Object) names.toArray(String[]::new))
                .toArray(Long[]::new);
    }

    @Test
    void everyKindOfChangeKeepsTheCountsExact() {
        ItCatalog cat = ItCatalog.load(importer, 3000);
        UUID a = submit(cat.files.subList(0, 2000));
        List<String> withAbsent = new ArrayList<>(cat.files.subList(1500, 3000));
        withAbsent.add(cat.prefix + "/not-in-the-catalog");
        UUID b = requests.submitFailingAbsent("it", new NewStageRequest(null, withAbsent, null, null, null, "atlas"), Set.of())
                .request().id();
        assertExact(a, b);
        assertThat(requests.counts(a).byState().get(FileState.QUEUED)).isEqualTo(2000);
        assertThat(requests.counts(b).byState().get(FileState.FAILED)).isEqualTo(1);

        // the scheduler's statements: a bulk claim of files both requests hold, then files one at a time
        jdbc.update("UPDATE stage_request_file SET state = 'staging' WHERE file_id = ANY(?) AND state = 'queued'",
                (Object) ids(cat.files.subList(1000, 2500)));
        assertExact(a, b);
        for (String f : cat.files.subList(1000, 1030)) {
            jdbc.update("UPDATE stage_request_file SET state = 'on_disk', finished_at = now() WHERE file_id = ? AND state = 'staging'",
                    ids(List.of(f))[0]);
        }
        jdbc.update("UPDATE stage_request_file SET state = 'transferring' WHERE request_id = ? AND state = 'on_disk'", a);
        jdbc.update("UPDATE stage_request_file SET state = 'done' WHERE request_id = ? AND state = 'transferring' AND ordinal % 2 = 0", a);
        jdbc.update("UPDATE stage_request_file SET state = 'failed', error = 'x' WHERE file_id = ANY(?) AND state = 'staging'",
                (Object) ids(cat.files.subList(2400, 2500)));
        jdbc.update("UPDATE stage_request_file SET error = 'y', finished_at = now() WHERE request_id = ?", b); // no state change
        assertExact(a, b);

        // a change rolled back leaves them as they were
        tx.executeWithoutResult(s -> {
            jdbc.update("UPDATE stage_request_file SET state = 'done', released = true WHERE request_id = ?", a);
            s.setRollbackOnly();
        });
        assertExact(a, b);

        requests.release(a, cat.files.subList(0, 10));
        requests.release(b, null);
        assertExact(a, b);
        requests.cancel(a, cat.files.subList(5, 1500));
        assertExact(a, b);
        requests.cancel(b, null);
        assertExact(a, b);
        assertThat(requests.counts(b).byState().get(FileState.CANCELLED)).isEqualTo(truth(b).get(FileState.CANCELLED)).isPositive();

        requests.delete(a);
        assertThat(jdbc.queryForObject("SELECT count(*) FROM stage_request_count WHERE request_id = ?", Long.class, a)).isZero();
        assertThat(requests.counts(a).byState().values()).containsOnly(0L);
        assertExact(b);
    }

    /** Both APIs' polls: the native counts and every WLCG file state are the files' as they are now. */
    @Test
    void pollsAnswerTheFilesAsTheyAreAfterBulkChangesAndCancellation() {
        ApiClient api = ApiClient.admin(port, tokens);
        ItCatalog cat = ItCatalog.load(importer, 30);
        String id = api.post("/api/v1/stage", ApiClient.json(Map.of("files",
                cat.files.stream().map(f -> Map.of("path", f)).toList()))).json().get("requestId").stringValue();
        UUID uuid = UUID.fromString(id);
        assertPolls(api, uuid, cat.files);
        // the scheduler's bulk claim, files landing and failing, a client's release
        jdbc.update("UPDATE stage_request_file SET state = 'staging', started_at = now() WHERE request_id = ? AND ordinal <= 20", uuid);
        jdbc.update("UPDATE stage_request_file SET state = 'on_disk', finished_at = now() WHERE request_id = ? AND ordinal <= 8", uuid);
        jdbc.update("UPDATE stage_request_file SET state = 'failed', error = 'bad', finished_at = now() "
                + "WHERE request_id = ? AND ordinal IN (9, 10)", uuid);
        assertThat(api.post("/api/v1/release/" + id, ApiClient.json(Map.of("paths", cat.files.subList(0, 3)))).status()).isEqualTo(200);
        assertPolls(api, uuid, cat.files);
        assertThat(api.post("/api/v1/stage/" + id + "/cancel", ApiClient.json(Map.of("paths", cat.files.subList(20, 25))))
                .status()).isEqualTo(200);
        assertPolls(api, uuid, cat.files);
        assertThat(api.post("/api/v1/requests/" + id + "/cancel", null).status()).isEqualTo(200);
        Map<String, Long> counts = assertPolls(api, uuid, cat.files);
        assertThat(counts).containsEntry("cancelled", 20L).containsEntry("on_disk", 8L).containsEntry("failed", 2L);
    }

    /** The native poll's counts and released equal the truth, the WLCG poll's files the rows; returns the counts. */
    Map<String, Long> assertPolls(ApiClient api, UUID id, List<String> files) {
        ApiClient.Answer nat = api.get("/api/v1/requests/" + id + "?fileLimit=1");
        assertThat(nat.status()).as(nat.body()).isEqualTo(200);
        Map<String, Long> counts = new LinkedHashMap<>();
        nat.json().get("counts").properties().forEach(e -> counts.put(e.getKey(), e.getValue().longValue()));
        Map<String, Long> expected = new LinkedHashMap<>();
        truth(id).forEach((st, n) -> expected.put(st.dbName(), n));
        assertThat(counts).isEqualTo(expected);
        assertThat(nat.json().get("released").longValue()).isEqualTo(jdbc.queryForObject(
                "SELECT count(*) FROM stage_request_file WHERE request_id = ? AND released", Long.class, id));
        ApiClient.Answer wlcg = api.get("/api/v1/stage/" + id);
        assertThat(wlcg.status()).as(wlcg.body()).isEqualTo(200);
        List<Map<String, Object>> rows = jdbc.queryForList("""
                SELECT f.name, s.state, s.error FROM stage_request_file s JOIN file f ON f.id = s.file_id
                 WHERE s.request_id = ? ORDER BY s.ordinal""", id);
        assertThat(wlcg.json().get("files").size()).isEqualTo(files.size());
        for (int i = 0; i < files.size(); i++) {
            var f = wlcg.json().get("files").get(i);
            assertThat(f.get("path").stringValue()).isEqualTo(rows.get(i).get("name"));
            String expectedState = switch ((String) rows.get(i).get("state")) {
                case "queued" -> "SUBMITTED";
                case "staging" -> "STARTED";
                case "failed" -> "FAILED";
                case "cancelled" -> "CANCELLED";
                default -> "COMPLETED";
            };
            assertThat(f.get("state").stringValue()).as(f.toString()).isEqualTo(expectedState);
            // a cancelled file has no error of its own; the WLCG answer gives it one (FTS3 would poll it on without)
            Object expectedError = "cancelled".equals(rows.get(i).get("state")) && rows.get(i).get("error") == null
                    ? "staging cancelled" : rows.get(i).get("error");
            assertThat(f.has("error") ? f.get("error").stringValue() : null).isEqualTo(expectedError);
        }
        return counts;
    }

    /**
     * Several instances at once: each thread changes its own files (as each instance's scheduler does its own
     * claims) of the same requests, in single statements, bulk or not, and through release and cancel of named
     * files (the request's row locked first). No transaction deadlocks on the counts, and they end exact.
     */
    @Test
    void concurrentTransactionsKeepTheCountsExact() throws Exception {
        ItCatalog cat = ItCatalog.load(importer, 800);
        List<UUID> reqs = List.of(submit(cat.files.subList(0, 500)), submit(cat.files.subList(300, 800)), submit(cat.files));
        String[] states = {"queued", "staging", "on_disk", "transferring", "done", "failed"};
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Future<?>> work = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                int thread = t;
                work.add(pool.submit(() -> {
                    Random r = new Random(thread);
                    List<String> mine = new ArrayList<>();
                    for (int i = thread; i < cat.files.size(); i += 4) mine.add(cat.files.get(i));
                    Long[] ids = ids(mine);
                    for (int i = 0; i < 150; i++) {
                        String to = states[r.nextInt(states.length)];
                        UUID req = reqs.get(r.nextInt(reqs.size()));
                        switch (r.nextInt(5)) {
                            case 0 -> jdbc.update("UPDATE stage_request_file SET state = ? WHERE file_id = ANY(?) AND state <> 'cancelled'",
                                    to, ids); // a bulk change across the requests
                            case 1 -> jdbc.update("UPDATE stage_request_file SET state = ?, released = ? WHERE file_id = ?",
                                    to, r.nextBoolean(), ids[r.nextInt(ids.length)]);
                            case 2 -> tx.executeWithoutResult(s -> {
                                jdbc.update("UPDATE stage_request_file SET state = ? WHERE request_id = ? AND file_id = ANY(?)", to, req, ids);
                                if (r.nextBoolean()) s.setRollbackOnly();
                            });
                            case 3 -> {
                                List<String> named = mine.stream().filter(f -> r.nextInt(8) == 0).toList();
                                List<String> held = requests.paths(req).stream().filter(named::contains).toList();
                                if (!held.isEmpty()) requests.release(req, held);
                            }
                            default -> {
                                List<String> held = requests.paths(req).stream().filter(mine::contains).limit(3).toList();
                                try {
                                    requests.cancel(req, held);
                                } catch (StageRequestRejected e) {
                                    // the request ended: a finished request cannot be cancelled
                                }
                            }
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : work) f.get(); // a deadlock or a refused change would fail here
        } finally {
            pool.shutdownNow();
        }
        assertExact(reqs.toArray(UUID[]::new));
    }

    /**
     * Paths that bypass ordinary triggers still count: session_replication_role = replica (the catalog import's
     * bulk checks), and a TRUNCATE (a bench's clean-up) empties the counts with the files.
     */
    @Test
    void theCountsHoldUnderReplicaRoleAndTruncate() {
        ItCatalog cat = ItCatalog.load(importer, 20);
        UUID id = submit(cat.files);
        tx.executeWithoutResult(s -> {
            jdbc.execute("SET LOCAL session_replication_role = replica");
            jdbc.update("UPDATE stage_request_file SET state = 'on_disk', released = true WHERE request_id = ? AND ordinal <= 5", id);
            assertExact(id);
            s.setRollbackOnly();
        });
        assertExact(id);
        tx.executeWithoutResult(s -> {
            jdbc.execute("TRUNCATE stage_request_file");
            assertThat(jdbc.queryForObject("SELECT count(*) FROM stage_request_count", Long.class)).isZero();
            assertExact(id);
            s.setRollbackOnly();
        });
        assertExact(id);
    }
}
