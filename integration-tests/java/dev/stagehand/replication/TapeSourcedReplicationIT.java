package dev.stagehand.replication;

import static dev.stagehand.ItWait.await;
import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.ItDb;
import dev.stagehand.replication.ReplicationRules.NewRule;
import dev.stagehand.replication.ReplicationRules.Replica;
import dev.stagehand.tape.SimulatedContent;
import dev.stagehand.transfer.GridFtpScratch;
import dev.stagehand.transfer.GridFtpServer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * Files only on tape are replicated through the recall path (simulated library on a scaled clock, disk
 * cache, transfer hand-off) to a GridFTP site, verified; replicas declared lost or bad there (a corrupt file left at
 * its path, written over) come back from tape.
 */
@DirtiesContext // its own context: closed afterwards, so the suite's contexts stay within the database's connections
@SpringBootTest(properties = {"stagehand.tape.clock=scaled", "stagehand.tape.scale=1000", "stagehand.recall.poll-interval=200ms",
        "stagehand.replication.pass-interval=200ms", "stagehand.transfer.queue.poll-interval=100ms",
        "stagehand.transfer.mover.backoff=100ms", "stagehand.cache.housekeeping-interval=2s"})
class TapeSourcedReplicationIT {

    static final long SIZE = 1_500_000;
    static GridFtpScratch scratch;
    static Path root;
    static GridFtpServer server;

    @DynamicPropertySource
    static void paths(DynamicPropertyRegistry r) throws Exception {
        scratch = GridFtpScratch.create("stagehand-tape-repl-it");
        root = scratch.root;
        r.add("stagehand.tape.sim.root", () -> root.resolve("tape").toString());
        r.add("stagehand.tape.library", () -> "repl-it");
        r.add("stagehand.cache.directories[0].path", () -> root.resolve("cache").toString());
        r.add("stagehand.cache.directories[0].capacity", () -> "1GB");
        r.add("stagehand.cache.directories[0].create-missing", () -> "true");
        server = scratch.anonymous("server");
    }

    @AfterAll
    static void stop() throws Exception {
        if (scratch != null) scratch.close();
    }

    @Autowired JdbcTemplate jdbc;
    @Autowired Sites sites;
    @Autowired ReplicationRules rules;
    @Autowired ReplicationEngine engine;

    final String tag = UUID.randomUUID().toString().substring(0, 8);

    @BeforeEach
    void setUp() {
        engine.takeLead();
        // work other classes left open must not compete for this test's drives
        ItDb.cancelOpenRequests(jdbc);
    }

    /** Dataset {@code ds} of {@code n} files on one new volume only (label prefix {@code volumePrefix}): name to id. */
    Map<String, Long> onTapeOnly(String ds, String volumePrefix, int n) {
        long dsId = jdbc.queryForObject("INSERT INTO dataset (name, experiment) VALUES (?, 'phenix') RETURNING id", Long.class, ds);
        String volume = volumePrefix + tag.substring(0, 4).toUpperCase();
        jdbc.update("INSERT INTO volume (label) VALUES (?)", volume);
        Map<String, Long> files = new java.util.LinkedHashMap<>();
        for (int i = 0; i < n; i++) {
            String name = "/" + ds + "/f" + i;
            long id = jdbc.queryForObject("INSERT INTO file (name, size_bytes, adler32, dataset_id, experiment) VALUES (?, ?, ?, ?, 'phenix') RETURNING id",
                    Long.class, name, SIZE, SimulatedContent.adler32Hex(name, SIZE), dsId);
            jdbc.update("INSERT INTO segment (file_id, volume_id, offset_bytes) SELECT ?, id, ? FROM volume WHERE label = ?",
                    id, (i + 1) * 3_000_000_000L, volume);
            files.put(name, id);
        }
        return files;
    }

    @Test
    void filesOnlyOnTapeAreRecalledAndReplicatedAndALostReplicaComesBackFromTape() throws Exception {
        Path dest = root.resolve("site-" + tag);
        GridFtpServer.openUp(dest);
        sites.put("TAPE-DEST-" + tag, Map.of("kind", "t-" + tag), List.of(server.url(dest)));
        String ds = "taped-" + tag;
        List<String> names = new ArrayList<>(onTapeOnly(ds, "RT", 3).keySet());
        long rule = rules.create(new NewRule(ds, 1, "kind=t-" + tag, null, null, null, "it")).id();
        try {
            await("replicated from tape", Duration.ofSeconds(240),
                    () -> rules.replicas(ds, null, "verified", 0, 10).size() == 3);
            List<Replica> replicas = rules.replicas(ds, null, null, 0, 10);
            assertThat(replicas).allSatisfy(r -> {
                assertThat(r.source()).isEqualTo("tape");
                assertThat(r.state()).isEqualTo("verified");
            });
            for (String n : names) {
                Path copy = dest.resolve(n.substring(1));
                assertThat(Files.size(copy)).isEqualTo(SIZE);
                java.util.zip.Adler32 a = new java.util.zip.Adler32();
                a.update(Files.readAllBytes(copy));
                assertThat(a.getValue()).isEqualTo(SimulatedContent.adler32(n, SIZE));
            }
            await("completeness OK", Duration.ofSeconds(10),
                    () -> rules.completeness(ds).getFirst().state().equals("OK"));

            // one copy is gone from the site, another is cut short there (still at its path): both come back from
            // tape, the short one written over (before, its transfer kept it and failed DESTINATION_EXISTS for good)
            String lost = names.get(1);
            Files.delete(dest.resolve(lost.substring(1)));
            String truncated = names.get(2);
            Path cut = dest.resolve(truncated.substring(1));
            Files.write(cut, java.util.Arrays.copyOf(Files.readAllBytes(cut), (int) SIZE / 3));
            assertThat(rules.declare("TAPE-DEST-" + tag, List.of(lost, truncated), "bad: truncated").recreating()).isEqualTo(2);
            await("lost and truncated replicas back from tape, or failed", Duration.ofSeconds(240),
                    () -> rules.replicas(ds, null, "failed", 0, 10).size() > 0
                            || rules.replicas(ds, null, "verified", 0, 10).size() == 3 && Files.exists(dest.resolve(lost.substring(1))));
            assertThat(rules.replicas(ds, null, null, 0, 10)).allSatisfy(r ->
                    assertThat(r.state()).as(r.file() + ": " + r.lastError()).isEqualTo("verified"));
            for (String n : List.of(lost, truncated)) {
                Path copy = dest.resolve(n.substring(1));
                assertThat(Files.size(copy)).isEqualTo(SIZE);
                java.util.zip.Adler32 a = new java.util.zip.Adler32();
                a.update(Files.readAllBytes(copy));
                assertThat(a.getValue()).as(n).isEqualTo(SimulatedContent.adler32(n, SIZE));
            }
            assertThat(rules.replicas(ds, null, null, 0, 10)).filteredOn(r -> r.file().equals(lost) || r.file().equals(truncated))
                    .hasSize(2).allSatisfy(r -> assertThat(r.source()).isEqualTo("tape"));
        } finally {
            rules.delete(rule);
        }
    }

    /**
     * The recall request and the replicas it serves commit together. Here marking the replicas fails (a trigger
     * refuses it) for a while: no recall may be left behind by those passes (before, each pass left one request
     * whose replicas stayed pending, so the files were recalled and sent again by the next). Once marking works,
     * the files are recalled by exactly one request and replicated.
     */
    @Test
    void aRecallIsNotLeftBehindWhenItsReplicasCannotBeMarked() throws Exception {
        Path dest = root.resolve("atomic-" + tag);
        GridFtpServer.openUp(dest);
        long site = sites.put("ATOMIC-" + tag, Map.of("kind", "a-" + tag), List.of(server.url(dest))).id();
        String ds = "atomic-" + tag;
        List<Long> ids = new ArrayList<>(onTapeOnly(ds, "RA", 2).values());
        String refuse = "it_refuse_staging_" + tag.replace("-", "_");
        // a sequence counts the refusals: it is not rolled back with the refused transaction
        jdbc.execute("CREATE SEQUENCE " + refuse);
        jdbc.execute("CREATE FUNCTION " + refuse + "() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                + "IF NEW.state = 'staging' AND NEW.site_id = " + site + " THEN PERFORM nextval('" + refuse + "'); "
                + "RAISE EXCEPTION 'refused by the test'; END IF; RETURN NEW; END $$");
        jdbc.execute("CREATE TRIGGER " + refuse + " BEFORE UPDATE ON replica FOR EACH ROW EXECUTE FUNCTION " + refuse + "()");
        long rule = rules.create(new NewRule(ds, 1, "kind=a-" + tag, null, null, null, "it")).id();
        String recalls = "SELECT count(DISTINCT request_id) FROM stage_request_file WHERE file_id = ANY (?::bigint[])";
        Long[] fileIds = ids.toArray(Long[]::new);
        try {
            // the engine passes every 200 ms: let it be refused a few times
            await("three refused stagings", Duration.ofSeconds(60), () -> jdbc.queryForObject(
                    "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM " + refuse, Long.class) >= 3);
            assertThat(jdbc.queryForObject("SELECT count(*) FROM replica WHERE site_id = ? AND state = 'pending'",
                    Long.class, site)).isEqualTo(2);
            assertThat(jdbc.queryForObject(recalls, Long.class, (Object) fileIds)).isZero();
            jdbc.execute("DROP TRIGGER " + refuse + " ON replica");
            await("replicated from tape", Duration.ofSeconds(240),
                    () -> rules.replicas(ds, null, "verified", 0, 10).size() == 2);
            assertThat(jdbc.queryForObject(recalls, Long.class, (Object) fileIds)).isEqualTo(1);
        } finally {
            jdbc.execute("DROP TRIGGER IF EXISTS " + refuse + " ON replica");
            jdbc.execute("DROP FUNCTION IF EXISTS " + refuse + "()");
            jdbc.execute("DROP SEQUENCE IF EXISTS " + refuse);
            rules.delete(rule);
        }
    }
}
