package dev.stagehand.replication;

import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.catalog.CatalogImporter;
import dev.stagehand.replication.ReplicationRules.NewRule;
import dev.stagehand.transfer.GridFtpScratch;
import dev.stagehand.transfer.GridFtpServer;
import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Timestamp;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.annotation.DirtiesContext;

/**
 * The replication pass step by step (the engine does not run by itself here, and no transfer is sent: the
 * queue is off, so a dispatched replica stays transferring until the test ends its transfer): each step reads
 * what changed since the last pass, and replicas that must wait cannot hold up the others. Recall is off too:
 * where a test needs the recall side's rows, it writes them as the recall side would. A database of its
 * own, emptied of rules and replicas before each test: the other test classes' contexts, cached and running,
 * would claim its transfers and their rows would fill its passes.
 */
@DirtiesContext
@ExtendWith(OutputCaptureExtension.class)
@SpringBootTest(properties = {"stagehand.db.local-database=stagehand_replication_pass", "stagehand.replication.enabled=false",
        "stagehand.transfer.queue.enabled=false", "stagehand.replication.dispatch-batch=5", "stagehand.recall.enabled=false"})
class ReplicationPassIT {

    static GridFtpScratch scratch;
    static GridFtpServer server;

    @Autowired JdbcTemplate jdbc;
    @Autowired Sites sites;
    @Autowired ReplicationRules rules;
    @Autowired ReplicationEngine engine;
    @Autowired CatalogImporter importer;
    @Autowired javax.sql.DataSource dataSource;
    @Autowired org.springframework.transaction.support.TransactionTemplate tx;
    @Autowired dev.stagehand.transfer.TransferQueue transferQueue;
    @Autowired dev.stagehand.recall.StageRequests stageRequests;
    @Autowired dev.stagehand.transfer.Mover mover;
    @Autowired org.springframework.beans.factory.ObjectProvider<LocalSource> localSource;
    @Autowired ReplicationProperties props;

    final String tag = UUID.randomUUID().toString().substring(0, 8);
    final List<Long> createdRules = new ArrayList<>();

    @BeforeAll
    static void start() throws Exception {
        scratch = GridFtpScratch.create("stagehand-replication-pass-it");
        server = scratch.anonymous("server");
    }

    @AfterAll
    static void stop() throws Exception {
        if (scratch != null) scratch.close();
    }

    @BeforeEach
    void lead() {
        jdbc.execute("TRUNCATE replication_rule, replica, transfer_job, replication_file_added, dataset_status_dirty CASCADE");
        engine.takeLead();
    }

    @AfterEach
    void cleanUp() {
        createdRules.forEach(rules::delete);
    }

    /** A site whose endpoint is a fresh directory on the loopback server. */
    void site(String name) throws Exception {
        Path dir = scratch.root.resolve("sites").resolve(name);
        GridFtpServer.openUp(dir);
        sites.put(name, Map.of(), List.of(server.url(dir)));
    }

    /** A site with no endpoint: its replicas wait. */
    void siteWithoutEndpoint(String name) {
        jdbc.update("INSERT INTO site (name) VALUES (?)", name);
    }

    /** A dataset of {@code n} catalog files (Adler32 0000000a) registered as verified at {@code origin}. */
    List<String> dataset(String dataset, int n, String origin) {
        long ds = jdbc.queryForObject("INSERT INTO dataset (name, experiment) VALUES (?, 'phenix') RETURNING id", Long.class, dataset);
        List<String> names = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            String name = "/pass/" + dataset + "/f" + i;
            jdbc.update("INSERT INTO file (name, size_bytes, adler32, dataset_id, experiment) VALUES (?, 1000, '0000000a', ?, 'phenix')",
                    name, ds);
            names.add(name);
        }
        assertThat(rules.register(origin, names)).isEqualTo(n);
        return names;
    }

    long rule(String dataset, String site) {
        long id = rules.create(new NewRule(dataset, 1, site, null, null, null, "it")).id();
        createdRules.add(id);
        return id;
    }

    List<Map<String, Object>> replicas(String dataset, String site) {
        return jdbc.queryForList("""
                SELECT f.name, r.state, r.waiting_for, r.next_attempt_at, r.transfer_job_id FROM replica r
                  JOIN file f ON f.id = r.file_id JOIN dataset d ON d.id = f.dataset_id JOIN site s ON s.id = r.site_id
                 WHERE d.name = ? AND s.name = ? ORDER BY f.name""", dataset, site);
    }

    long inState(String dataset, String site, String state) {
        return replicas(dataset, site).stream().filter(r -> r.get("state").equals(state)).count();
    }

    /** Runs passes until {@code done}, at most {@code passes} of them; returns whether it came true. */
    boolean passUntil(int passes, BooleanSupplier done) {
        for (int i = 0; i < passes; i++) {
            if (done.getAsBoolean()) return true;
            assertThat(engine.pass().led()).isTrue();
        }
        return done.getAsBoolean();
    }

    @Test
    void replicasWaitingForTheirSiteDoNotHoldUpTheOthersAndGoOnceItHasAnEndpoint() throws Exception {
        site("O-" + tag);
        site("B-" + tag);
        siteWithoutEndpoint("C-" + tag);
        // the waiting ones come first in file order, and outnumber a pass's batch (5) twice over
        dataset("dsc-" + tag, 12, "O-" + tag);
        dataset("dsb-" + tag, 3, "O-" + tag);
        rule("dsc-" + tag, "C-" + tag);
        rule("dsb-" + tag, "B-" + tag);

        assertThat(passUntil(40, () -> inState("dsb-" + tag, "B-" + tag, "transferring") == 3))
                .as("the copies for the site that has an endpoint are sent").isTrue();
        List<Map<String, Object>> waiting = replicas("dsc-" + tag, "C-" + tag);
        assertThat(waiting).hasSize(12).allSatisfy(r -> {
            assertThat(r.get("state")).isEqualTo("pending");
            assertThat(r.get("waiting_for")).isEqualTo("site C-" + tag + " has no enabled endpoint");
            assertThat(((Timestamp) r.get("next_attempt_at")).toInstant())
                    .as("looked at again later, not at every pass").isAfter(java.time.Instant.now().plusSeconds(3000));
        });

        site("C-" + tag); // the site gets its endpoint: its replicas go at the next passes, not an hour later
        assertThat(passUntil(10, () -> inState("dsc-" + tag, "C-" + tag, "transferring") == 12)).isTrue();
    }

    @Test
    void aRuleWantsTheFilesItsDatasetGetsAndIsNotAppliedWholeAgainOtherwise(CapturedOutput output) throws Exception {
        siteWithoutEndpoint("W-" + tag);
        String ds = "grow-" + tag;
        String csv = "file,volume,offset_bytes,size_bytes,experiment,dataset\n";
        importer.importStream(new ByteArrayInputStream((csv + "/grow/" + tag + "/a,G" + tag + ",0,1000,phenix," + ds + "\n")
                .getBytes(StandardCharsets.UTF_8)), "it");
        long rule = rule(ds, "W-" + tag);
        engine.pass();
        Timestamp applied = jdbc.queryForObject("SELECT applied_at FROM replication_rule WHERE id = ?", Timestamp.class, rule);
        assertThat(applied).as("a new rule is applied at the next pass").isNotNull();
        assertThat(replicas(ds, "W-" + tag)).hasSize(1);

        assertThat(engine.pass().rulesApplied()).as("nothing new in any dataset: no rule applied again").isZero();

        // the catalog import's set-based path (triggers of replica mode off) still marks the dataset
        importer.importStream(new ByteArrayInputStream((csv + "/grow/" + tag + "/b,G" + tag + ",1000,1000,phenix," + ds + "\n"
                + "/grow/" + tag + "/c,G" + tag + ",2000,1000,phenix," + ds + "\n").getBytes(StandardCharsets.UTF_8)), "it");
        assertThat(output.getOut()).contains("(set-based reference checks)");
        assertThat(engine.pass().rulesApplied()).as("the rule of the dataset that got files").isEqualTo(1);
        assertThat(replicas(ds, "W-" + tag)).extracting(r -> r.get("name"))
                .containsExactly("/grow/" + tag + "/a", "/grow/" + tag + "/b", "/grow/" + tag + "/c");
        assertThat(jdbc.queryForObject("SELECT count(*) FROM replication_rule_replica WHERE rule_id = ?", Long.class, rule)).isEqualTo(3);
    }

    /**
     * A file committed after a pass took its dataset's earlier mark is still wanted: each transaction's marks
     * commit with its files (one mark per dataset was found by the later insert, which then added none, and
     * taken by the pass before that insert committed).
     */
    @Test
    void aFileCommittedWhileAPassTakesItsDatasetsMarksIsStillWanted() throws Exception {
        siteWithoutEndpoint("R-" + tag);
        String ds = "race-" + tag;
        long dsId = jdbc.queryForObject("INSERT INTO dataset (name, experiment) VALUES (?, 'phenix') RETURNING id", Long.class, ds);
        String add = "INSERT INTO file (name, size_bytes, dataset_id, experiment) VALUES (?, 1000, ?, 'phenix')";
        jdbc.update(add, "/race/" + tag + "/a", dsId);
        rule(ds, "R-" + tag);
        engine.pass();
        jdbc.update(add, "/race/" + tag + "/b", dsId); // committed: its dataset is marked
        try (java.sql.Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            try (var st = c.prepareStatement(add)) {
                st.setString(1, "/race/" + tag + "/c");
                st.setLong(2, dsId);
                st.executeUpdate();
            }
            engine.pass(); // takes the committed marks while /c is not committed
            c.commit();
        }
        engine.pass();
        assertThat(replicas(ds, "R-" + tag)).extracting(r -> r.get("name"))
                .containsExactly("/race/" + tag + "/a", "/race/" + tag + "/b", "/race/" + tag + "/c");
    }

    /**
     * A rule made short of sites (a site it chose deleted) says so, and takes a site that appears with its copies.
     * A rule short of sites from the start is refused: fewer sites match than copies it asks for.
     */
    @Test
    void aRuleShortOfSitesTakesOneThatAppearsWithItsCopies() throws Exception {
        site("O-" + tag);
        for (String s : List.of("S1-", "S2-"))
            jdbc.update("INSERT INTO site (name, attributes) VALUES (?, ?::jsonb)", s + tag, "{\"grp\":\"" + tag + "\"}");
        String ds = "short-" + tag;
        dataset(ds, 2, "O-" + tag);
        assertThat(org.assertj.core.api.Assertions.catchThrowableOfType(ReplicationRejected.class,
                () -> rules.create(new NewRule(ds, 3, "grp=" + tag, null, null, null, "it"))))
                .satisfies(e -> {
                    assertThat(e.kind()).isEqualTo(ReplicationRejected.Kind.INVALID);
                    assertThat(e.getMessage()).isEqualTo("site expression 'grp=" + tag + "' matches 2 sites; the rule asks for 3 copies,"
                            + " each at a site of its own");
                });
        long rule = rules.create(new NewRule(ds, 2, "grp=" + tag, null, null, null, "it")).id();
        createdRules.add(rule);
        engine.pass();
        assertThat(sites.delete("S2-" + tag)).isTrue();
        engine.pass();
        engine.pass();
        assertThat(jdbc.queryForObject("SELECT note FROM replication_rule WHERE id = ?", String.class, rule))
                .isEqualTo("only 1 of 2 sites match 'grp=" + tag + "'");
        assertThat(replicas(ds, "S1-" + tag)).hasSize(2);

        jdbc.update("INSERT INTO site (name, attributes) VALUES (?, ?::jsonb)", "S3-" + tag, "{\"grp\":\"" + tag + "\"}");
        engine.pass();
        assertThat(jdbc.queryForObject("SELECT note FROM replication_rule WHERE id = ?", String.class, rule)).isNull();
        assertThat(replicas(ds, "S3-" + tag)).as("the new site's copies are wanted").hasSize(2);
        assertThat(jdbc.queryForObject("SELECT count(*) FROM replication_rule_replica WHERE rule_id = ?", Long.class, rule)).isEqualTo(4);
    }

    @Test
    void transfersEndedSinceTheLastPassAreFollowedAndOneCommittedLateIsCaughtByTheSweep() throws Exception {
        site("O-" + tag);
        site("T-" + tag);
        String ds = "track-" + tag;
        List<String> files = dataset(ds, 2, "O-" + tag);
        rule(ds, "T-" + tag);
        assertThat(passUntil(40, () -> inState(ds, "T-" + tag, "transferring") == 2)).isTrue();
        List<Map<String, Object>> rows = replicas(ds, "T-" + tag);
        long ended = ((Number) rows.get(0).get("transfer_job_id")).longValue();
        long late = ((Number) rows.get(1).get("transfer_job_id")).longValue();
        engine.pass(); // the first pass after the dispatch: from here on passes follow what ended since the last one
        jdbc.update("UPDATE transfer_job SET state = 'done', dest_adler32 = 10, finished_at = now() WHERE id = ?", ended);
        // a transfer whose end committed long after its time
        jdbc.update("UPDATE transfer_job SET state = 'done', dest_adler32 = 10, finished_at = now() - interval '2 hours' WHERE id = ?", late);
        engine.pass();
        assertThat(replicas(ds, "T-" + tag)).extracting(r -> r.get("state")).containsExactly("verified", "transferring");

        engine.sweepAtNextPass();
        engine.pass();
        assertThat(replicas(ds, "T-" + tag)).extracting(r -> r.get("name"), r -> r.get("state"))
                .containsExactly(org.assertj.core.groups.Tuple.tuple(files.get(0), "verified"),
                        org.assertj.core.groups.Tuple.tuple(files.get(1), "verified"));
    }

    /**
     * What a pass learns since the last one (transfers ended, datasets that got files) is in rows or found
     * again by the instance the lease moves to, and back: nothing is missed, nothing sent twice.
     */
    @Test
    void theLeaseMovingToAnotherInstanceAndBackMissesNothing() throws Exception {
        site("O-" + tag);
        site("H-" + tag);
        String ds = "handover-" + tag;
        dataset(ds, 3, "O-" + tag);
        rule(ds, "H-" + tag);
        assertThat(passUntil(40, () -> inState(ds, "H-" + tag, "transferring") == 3)).isTrue();
        engine.pass();
        List<Map<String, Object>> rows = replicas(ds, "H-" + tag);
        String end = "UPDATE transfer_job SET state = 'done', dest_adler32 = 10, finished_at = now() WHERE id = ?";

        ReplicationEngine other = new ReplicationEngine(jdbc, tx, transferQueue, stageRequests, mover, localSource, props);
        jdbc.update(end, rows.get(0).get("transfer_job_id"));
        other.takeLead();
        assertThat(other.pass().led()).isTrue();
        assertThat(inState(ds, "H-" + tag, "verified")).isEqualTo(1);

        // while the other instance leads: a transfer ends and the dataset gets a file, after its last pass
        jdbc.update(end, rows.get(1).get("transfer_job_id"));
        long dsId = jdbc.queryForObject("SELECT id FROM dataset WHERE name = ?", Long.class, ds);
        jdbc.update("INSERT INTO file (name, size_bytes, adler32, dataset_id, experiment) VALUES (?, 1000, '0000000a', ?, 'phenix')",
                "/pass/" + ds + "/late", dsId);
        rules.register("O-" + tag, List.of("/pass/" + ds + "/late"));
        engine.takeLead();
        assertThat(engine.pass().led()).isTrue();
        assertThat(inState(ds, "H-" + tag, "verified")).as("the transfer that ended in between").isEqualTo(2);
        assertThat(replicas(ds, "H-" + tag)).as("the file added in between").hasSize(4);
        assertThat(passUntil(40, () -> inState(ds, "H-" + tag, "transferring") == 2)).isTrue();
        assertThat(jdbc.queryForObject("""
                SELECT count(*) FROM transfer_job WHERE correlation IN (
                    SELECT 'replica:' || r.file_id || ':' || r.site_id FROM replica r JOIN file f ON f.id = r.file_id
                      JOIN dataset d ON d.id = f.dataset_id WHERE d.name = ?)""", Long.class, ds))
                .as("one transfer per replica").isEqualTo(4);
    }

    @Test
    void aPendingReplicaNoRuleWantsWaitsAndIsLookedAtAsSoonAsARuleWantsItAgain() throws Exception {
        site("O-" + tag);
        siteWithoutEndpoint("U-" + tag);
        String ds = "unwanted-" + tag;
        dataset(ds, 2, "O-" + tag);
        long first = rule(ds, "U-" + tag);
        engine.pass();
        assertThat(replicas(ds, "U-" + tag)).hasSize(2).allSatisfy(r -> assertThat(r.get("waiting_for")).asString().contains("no enabled endpoint"));
        rules.delete(first);
        createdRules.remove(first);
        jdbc.update("""
                UPDATE replica r SET next_attempt_at = NULL FROM file f JOIN dataset d ON d.id = f.dataset_id
                 WHERE f.id = r.file_id AND d.name = ?""", ds); // due now
        assertThat(passUntil(20, () -> replicas(ds, "U-" + tag).stream()
                .allMatch(r -> ReplicationEngine.UNWANTED.equals(r.get("waiting_for"))))).isTrue();
        assertThat(replicas(ds, "U-" + tag)).allSatisfy(r -> assertThat(r.get("state")).isEqualTo("pending"));

        rule(ds, "U-" + tag);
        engine.pass(); // applied, and its replicas looked at in the same pass rather than in an hour
        assertThat(replicas(ds, "U-" + tag)).allSatisfy(r -> assertThat(r.get("waiting_for")).asString().contains("no enabled endpoint"));
    }

    @Test
    void movingAWaitingReplicasNextLookDoesNotMarkItsDatasetForACompletenessRecompute() throws Exception {
        site("O-" + tag);
        String ds = "mark-" + tag;
        dataset(ds, 1, "O-" + tag);
        long dataset = jdbc.queryForObject("SELECT id FROM dataset WHERE name = ?", Long.class, ds);
        String marked = "SELECT count(*) FROM dataset_status_dirty WHERE dataset_id = ?";
        jdbc.update("DELETE FROM dataset_status_dirty WHERE dataset_id = ?", dataset);
        String replica = "(SELECT id FROM file WHERE dataset_id = " + dataset + ")";
        jdbc.update("UPDATE replica SET next_attempt_at = now() + interval '1 minute' WHERE file_id IN " + replica);
        assertThat(jdbc.queryForObject(marked, Long.class, dataset)).isZero();
        jdbc.update("UPDATE replica SET waiting_for = 'something else' WHERE file_id IN " + replica);
        assertThat(jdbc.queryForObject(marked, Long.class, dataset)).isEqualTo(1);
    }

    /**
     * A new rule at a site that already holds part of its dataset (the rule picks such sites first) is
     * REPLICATING, not STUCK: the clock starts when the site is first wanted, not at the old copies' done time.
     */
    @Test
    void aNewRuleAtASiteHoldingOldCopiesIsReplicatingNotStuck() throws Exception {
        site("O-" + tag);
        siteWithoutEndpoint("P-" + tag);
        String ds = "partial-" + tag;
        List<String> files = dataset(ds, 3, "O-" + tag);
        rules.register("P-" + tag, List.of(files.get(0))); // the site's own copy, registered two days ago
        jdbc.update("UPDATE replica SET done_at = now() - interval '2 days' WHERE site_id = (SELECT id FROM site WHERE name = ?)", "P-" + tag);
        rule(ds, "P-" + tag);
        engine.pass();
        engine.recomputeStatus();
        assertThat(rules.completeness(ds)).singleElement().satisfies(c -> {
            assertThat(c.filesDone()).isEqualTo(1);
            assertThat(c.filesTotal()).isEqualTo(3);
            assertThat(c.state()).as(c.reason()).isEqualTo("REPLICATING");
        });
    }

    /**
     * A dataset complete at a site for long that gets new work (a file added to it) is stored REPLICATING, not
     * STUCK: the clock starts again with the work, and the stored state judged STUCK on the old clock (only the
     * reads judged again; the passes between full recomputes turn REPLICATING rows STUCK, never back).
     */
    @Test
    void aDatasetCompleteForLongThatGetsAFileIsStoredReplicatingNotStuck() throws Exception {
        site("O-" + tag);
        String ds = "regrow-" + tag;
        dataset(ds, 2, "O-" + tag);
        rule(ds, "O-" + tag);
        engine.pass();
        engine.recomputeStatus();
        String stored = """
                SELECT s.state FROM dataset_site_status s JOIN dataset d ON d.id = s.dataset_id
                 WHERE d.name = ? AND s.site_id = (SELECT id FROM site WHERE name = ?)""";
        assertThat(jdbc.queryForObject(stored, String.class, ds, "O-" + tag)).isEqualTo("OK");
        jdbc.update("UPDATE dataset_site_status SET last_progress_at = now() - make_interval(secs => ?) * 2"
                + " WHERE dataset_id = (SELECT id FROM dataset WHERE name = ?)", props.stuckAfter().toSeconds(), ds);

        jdbc.update("""
                INSERT INTO file (name, size_bytes, adler32, dataset_id, experiment)
                SELECT ?, 1000, '0000000a', id, 'phenix' FROM dataset WHERE name = ?""", "/pass/" + ds + "/new", ds);
        engine.pass(); // the rule wants the new file at the site
        engine.recomputeStatus();
        assertThat(jdbc.queryForMap("""
                SELECT s.state, s.files_done, s.files_total, s.last_progress_at > now() - interval '1 minute' AS restarted
                  FROM dataset_site_status s JOIN dataset d ON d.id = s.dataset_id WHERE d.name = ?""", ds))
                .containsEntry("files_done", 2L).containsEntry("files_total", 3L).containsEntry("restarted", true)
                .containsEntry("state", "REPLICATING");
        assertThat(rules.completeness(ds)).singleElement().satisfies(c -> assertThat(c.state()).isEqualTo("REPLICATING"));
    }

    /**
     * A replica staging from tape whose recall request is gone (deleted through the WLCG API, which forgets its
     * files) counts a failed attempt and is made again, rather than staying staging for ever.
     */
    @Test
    void aReplicaWhoseRecallRequestWasDeletedIsMadeAgain() throws Exception {
        site("O-" + tag);
        siteWithoutEndpoint("G-" + tag);
        String ds = "recallgone-" + tag;
        dataset(ds, 1, "O-" + tag);
        rule(ds, "G-" + tag);
        engine.pass();
        // as stage() leaves it, for a request since deleted (no stage_request_file row, no transfer)
        jdbc.update("""
                UPDATE replica SET state = 'staging', source = 'tape', stage_request_id = ?, waiting_for = NULL
                 WHERE site_id = (SELECT id FROM site WHERE name = ?)""", UUID.randomUUID(), "G-" + tag);
        engine.sweepAtNextPass();
        engine.pass();
        List<Map<String, Object>> rows = jdbc.queryForList("""
                SELECT r.state, r.attempts, r.last_error FROM replica r JOIN site s ON s.id = r.site_id WHERE s.name = ?""", "G-" + tag);
        assertThat(rows).singleElement().satisfies(r -> {
            assertThat(r.get("state")).isEqualTo("pending");
            assertThat(r.get("attempts")).isEqualTo(1);
            assertThat(r.get("last_error")).asString().contains("recall request");
        });
    }

    /** A recall request of replication's, with a destination as stage() makes it, holding the file in {@code fileState}. */
    UUID recallRequest(long file, String fileState) {
        UUID request = UUID.randomUUID();
        jdbc.update("INSERT INTO stage_request (id, owner, state, file_count, destination) VALUES (?, 'replication', 'active', 1, 'ftp://x/')",
                request);
        jdbc.update("INSERT INTO stage_request_file (request_id, file_id, state, ordinal) VALUES (?, ?, ?, 0)", request, file, fileState);
        return request;
    }

    /**
     * A replica from tape whose transfer failed because the recall side's cached copy was bad waits for the recall
     * side's verdict rather than counting a failed attempt (and recalling the file once more) at once: the recall
     * side reads the file from tape again and sends it by a transfer of its own, which the replica then follows.
     */
    @Test
    void aReplicaWhoseStagedCopyIsReadAgainFollowsTheNewTransfer() throws Exception {
        site("O-" + tag);
        siteWithoutEndpoint("R-" + tag);
        String ds = "reread-" + tag;
        String name = dataset(ds, 1, "O-" + tag).getFirst();
        rule(ds, "R-" + tag);
        engine.pass();
        long file = jdbc.queryForObject("SELECT id FROM file WHERE name = ?", Long.class, name);
        UUID request = recallRequest(file, "transferring");
        // as the recall side leaves them: the request's file handed on, its transfer failed for its source
        long failed = jdbc.queryForObject("""
                INSERT INTO transfer_job (correlation, source, destination, size_bytes, state, last_error_class, last_error, finished_at)
                VALUES (?, 'file:///cache/gone', 'ftp://x/f', 1000, 'failed', 'BAD_REQUEST', 'cannot read local file /cache/gone', now())
                RETURNING id""", Long.class, "stage:" + request + ":" + file);
        jdbc.update("""
                UPDATE replica SET state = 'transferring', source = 'tape', stage_request_id = ?, transfer_job_id = ?, waiting_for = NULL
                 WHERE site_id = (SELECT id FROM site WHERE name = ?)""", request, failed, "R-" + tag);
        String replica = "SELECT r.state || ' ' || r.attempts || ' ' || coalesce(r.transfer_job_id::text, '-') FROM replica r "
                + "JOIN site s ON s.id = r.site_id WHERE s.name = ?";
        engine.sweepAtNextPass();
        engine.pass();
        assertThat(jdbc.queryForObject(replica, String.class, "R-" + tag)).as("waits while the recall side decides")
                .isEqualTo("transferring 0 " + failed);

        // the recall side reads it again: the failed transfer is superseded, the file queued for tape
        jdbc.update("UPDATE transfer_job SET correlation = 'stage-superseded:' || substr(correlation, 7) WHERE id = ?", failed);
        jdbc.update("UPDATE stage_request_file SET state = 'queued' WHERE request_id = ?", request);
        engine.sweepAtNextPass();
        engine.pass();
        assertThat(jdbc.queryForObject(replica, String.class, "R-" + tag)).isEqualTo("staging 0 -");

        // staged again and handed on: the replica follows the new transfer
        jdbc.update("UPDATE stage_request_file SET state = 'transferring' WHERE request_id = ?", request);
        long again = jdbc.queryForObject("""
                INSERT INTO transfer_job (correlation, source, destination, size_bytes) VALUES (?, 'file:///cache/new', 'ftp://x/f', 1000)
                RETURNING id""", Long.class, "stage:" + request + ":" + file);
        engine.sweepAtNextPass();
        engine.pass();
        assertThat(jdbc.queryForObject(replica, String.class, "R-" + tag)).isEqualTo("transferring 0 " + again);

        // and a transfer that fails for good, once the recall side has failed its file too, counts an attempt
        jdbc.update("UPDATE transfer_job SET state = 'failed', last_error = 'permission denied', finished_at = now() WHERE id = ?", again);
        engine.sweepAtNextPass();
        engine.pass();
        assertThat(jdbc.queryForObject(replica, String.class, "R-" + tag)).startsWith("transferring 0");
        jdbc.update("UPDATE stage_request_file SET state = 'failed', finished_at = now() WHERE request_id = ?", request);
        engine.sweepAtNextPass();
        engine.pass();
        assertThat(jdbc.queryForObject(replica, String.class, "R-" + tag)).startsWith("pending 1");
    }

    /**
     * A copy whose deletion must wait (here: its site has no endpoint) goes back to the state it had: a done copy
     * whose checksum was never compared with the catalog's (the catalog has none) is not made verified.
     */
    @Test
    void aCopyWhoseDeletionWaitsIsNotMadeVerified() throws Exception {
        site("O-" + tag);
        siteWithoutEndpoint("D-" + tag);
        long ds = jdbc.queryForObject("INSERT INTO dataset (name, experiment) VALUES (?, 'phenix') RETURNING id", Long.class, "unverified-" + tag);
        String name = "/pass/unverified-" + tag + "/f";
        long file = jdbc.queryForObject("INSERT INTO file (name, size_bytes, dataset_id, experiment) VALUES (?, 1000, ?, 'phenix') RETURNING id",
                Long.class, name, ds);
        rules.register("O-" + tag, List.of(name)); // another copy: this one is not the last
        // made by a rule since deleted, two days ago: the mover reported an Adler32, the catalog has none to compare
        jdbc.update("""
                INSERT INTO replica (file_id, site_id, state, source, adler32, done_at, unwanted_since)
                SELECT ?, id, 'done', ?, '0000000a', now() - interval '2 days', now() - interval '2 days' FROM site WHERE name = ?""",
                file, "O-" + tag, "D-" + tag);
        ReplicationEngine other = new ReplicationEngine(jdbc, tx, transferQueue, stageRequests, mover, localSource, props);
        other.takeLead();
        assertThat(other.pass().led()).isTrue(); // its first pass looks for copies to delete
        Map<String, Object> row = jdbc.queryForMap("""
                SELECT r.state, r.last_error FROM replica r JOIN site s ON s.id = r.site_id WHERE s.name = ? AND r.file_id = ?""",
                "D-" + tag, file);
        assertThat(row.get("last_error")).asString().contains("deletion waits");
        assertThat(row.get("state")).isEqualTo("done");
    }

    /**
     * A copy no rule wants is kept when the file's only tape copy is on a volume that cannot be read (marked
     * broken, or disabled): that copy is not one to fall back on, and deleting the site's would lose the file.
     */
    @Test
    void theLastCopyOfAFileWhoseTapeCannotBeReadIsNotDeleted() throws Exception {
        siteWithoutEndpoint("K-" + tag);
        long ds = jdbc.queryForObject("INSERT INTO dataset (name, experiment) VALUES (?, 'phenix') RETURNING id", Long.class, "broken-" + tag);
        long volume = jdbc.queryForObject("INSERT INTO volume (label, state) VALUES (?, 'broken') RETURNING id", Long.class, "K" + tag);
        long file = jdbc.queryForObject("""
                INSERT INTO file (name, size_bytes, adler32, dataset_id, experiment) VALUES (?, 1000, '0000000a', ?, 'phenix') RETURNING id""",
                Long.class, "/pass/broken-" + tag + "/f", ds);
        jdbc.update("INSERT INTO segment (file_id, volume_id, offset_bytes) VALUES (?, ?, 0)", file, volume);
        // made by a rule since deleted, and unwanted for two days: past the deletion grace
        jdbc.update("""
                INSERT INTO replica (file_id, site_id, state, source, adler32, done_at, unwanted_since)
                SELECT ?, id, 'verified', 'local', '0000000a', now() - interval '2 days', now() - interval '2 days' FROM site WHERE name = ?""",
                file, "K-" + tag);
        ReplicationEngine other = new ReplicationEngine(jdbc, tx, transferQueue, stageRequests, mover, localSource, props);
        other.takeLead();
        assertThat(other.pass().led()).isTrue(); // its first pass looks for copies to delete
        Map<String, Object> row = jdbc.queryForMap("SELECT state, last_error FROM replica WHERE file_id = ?", file);
        assertThat(row.get("last_error")).as("not taken for deletion").isNull();
        assertThat(row.get("state")).isEqualTo("verified");
    }

    /**
     * A replica whose attempts are used up is not made again until an operator retries it: its dataset at the
     * site is STUCK at once, as Rucio's rule is once a lock is stuck, not REPLICATING until stuck-after (an
     * hour) has passed since the last copy made, however fresh that was.
     */
    @Test
    void aReplicaFailedForGoodMakesItsDatasetStuckAtOnce() throws Exception {
        site("O-" + tag);
        site("F-" + tag);
        String ds = "failed-" + tag;
        dataset(ds, 2, "O-" + tag);
        rule(ds, "F-" + tag);
        assertThat(passUntil(40, () -> inState(ds, "F-" + tag, "transferring") == 2)).isTrue();
        List<Map<String, Object>> rows = replicas(ds, "F-" + tag);
        jdbc.update("UPDATE transfer_job SET state = 'done', dest_adler32 = 10, finished_at = now() WHERE id = ?",
                rows.get(0).get("transfer_job_id"));
        // its last attempt
        jdbc.update("UPDATE replica SET attempts = ? WHERE transfer_job_id = ?", props.maxAttempts() - 1, rows.get(1).get("transfer_job_id"));
        jdbc.update("UPDATE transfer_job SET state = 'failed', last_error = 'permission denied', finished_at = now() WHERE id = ?",
                rows.get(1).get("transfer_job_id"));
        engine.sweepAtNextPass();
        engine.pass();
        assertThat(replicas(ds, "F-" + tag)).extracting(r -> r.get("state")).containsExactly("verified", "failed");
        engine.recomputeStatus();
        assertThat(rules.completeness(ds)).singleElement().satisfies(c -> {
            assertThat(c.filesDone()).isEqualTo(1);
            assertThat(c.filesFailed()).isEqualTo(1);
            assertThat(c.state()).as(c.reason()).isEqualTo("STUCK");
            assertThat(c.reason()).contains("1 replica failed for good").contains("permission denied");
        });
        assertThat(jdbc.queryForObject("SELECT state FROM dataset_site_status WHERE dataset_id = (SELECT id FROM dataset WHERE name = ?)",
                String.class, ds)).isEqualTo("STUCK");

        // retried by the operator: replicating again, and no longer said to have failed (the error of the attempts given
        // up stayed on the replica queued again: the replicas list and the datasets page gave it as why)
        assertThat(rules.retryFailed(ds, null)).isEqualTo(1);
        assertThat(jdbc.queryForList("""
                SELECT r.state, r.last_error, r.attempts::int AS attempts FROM replica r JOIN file f ON f.id = r.file_id
                  JOIN dataset d ON d.id = f.dataset_id JOIN site s ON s.id = r.site_id WHERE d.name = ? AND s.name = ?
                 ORDER BY f.name""", ds, "F-" + tag))
                .extracting(r -> r.get("state"), r -> r.get("last_error"), r -> r.get("attempts"))
                .containsExactly(org.assertj.core.groups.Tuple.tuple("verified", null, 0),
                        org.assertj.core.groups.Tuple.tuple("pending", null, 0));
        engine.recomputeStatus();
        assertThat(rules.completeness(ds)).singleElement().satisfies(c -> {
            assertThat(c.state()).isEqualTo("REPLICATING");
            assertThat(String.valueOf(c.reason())).doesNotContain("permission denied");
        });
    }

    /**
     * A replica's retried errors are kept in its history (they were only logged): one that fails twice and is then
     * made shows its three attempts, each with its error, newest first; events older than history-keep are pruned.
     */
    @Test
    void aReplicaThatFailsTwiceThenSucceedsShowsItsThreeAttemptsWithTheirErrors() throws Exception {
        site("O-" + tag);
        site("H-" + tag);
        String ds = "history-" + tag, at = "H-" + tag;
        String file = dataset(ds, 1, "O-" + tag).getFirst();
        rule(ds, at);
        for (String error : List.of("permission denied", "connection reset")) {
            assertThat(passUntil(40, () -> inState(ds, at, "transferring") == 1)).isTrue();
            jdbc.update("UPDATE transfer_job SET state = 'failed', last_error = ?, finished_at = now() WHERE id = ?", error,
                    replicas(ds, at).getFirst().get("transfer_job_id"));
            engine.sweepAtNextPass();
            engine.pass();
            assertThat(inState(ds, at, "pending")).isEqualTo(1);
            jdbc.update("UPDATE replica SET next_attempt_at = NULL WHERE state = 'pending'"); // its backoff over
        }
        assertThat(passUntil(40, () -> inState(ds, at, "transferring") == 1)).isTrue();
        jdbc.update("UPDATE transfer_job SET state = 'done', dest_adler32 = 10, finished_at = now() WHERE id = ?",
                replicas(ds, at).getFirst().get("transfer_job_id"));
        engine.sweepAtNextPass();
        engine.pass();
        assertThat(inState(ds, at, "verified")).isEqualTo(1);

        List<ReplicationRules.ReplicaEvent> history = rules.history(ds, at, file, 100);
        assertThat(history).extracting(e -> e.from() + " -> " + e.to(), ReplicationRules.ReplicaEvent::attempts)
                .containsExactly(org.assertj.core.groups.Tuple.tuple("transferring -> verified", 2),
                        org.assertj.core.groups.Tuple.tuple("pending -> transferring", 2),
                        org.assertj.core.groups.Tuple.tuple("transferring -> pending", 2),
                        org.assertj.core.groups.Tuple.tuple("pending -> transferring", 1),
                        org.assertj.core.groups.Tuple.tuple("transferring -> pending", 1),
                        org.assertj.core.groups.Tuple.tuple("pending -> transferring", 0));
        assertThat(history).allSatisfy(e -> assertThat(e.file()).isEqualTo(file)).allSatisfy(e -> assertThat(e.site()).isEqualTo(at));
        assertThat(history.get(2).error()).contains("connection reset");
        assertThat(history.get(4).error()).contains("permission denied");
        assertThat(history).filteredOn(e -> "transferring".equals(e.to()) || "verified".equals(e.to()))
                .allSatisfy(e -> assertThat(e.error()).as("an attempt sent again does not repeat the last error").isNull());
        assertThat(rules.history(ds, at, file, 2)).extracting(ReplicationRules.ReplicaEvent::id)
                .containsExactly(history.get(0).id(), history.get(1).id());
        assertThat(rules.history(ds, "O-" + tag, null, 100)).singleElement()
                .satisfies(e -> assertThat(e.from() + " -> " + e.to()).isEqualTo("null -> verified"));

        // pruned after history-keep (30 days by default) by the pass
        jdbc.update("UPDATE replica_event SET at = now() - interval '31 days' WHERE id = ?", history.getLast().id());
        assertThat(engine.pruneHistory()).isEqualTo(1);
        assertThat(rules.history(ds, at, null, 100)).hasSize(5).extracting(ReplicationRules.ReplicaEvent::id)
                .doesNotContain(history.getLast().id());
    }

    /**
     * The replicas a file or a site takes with it when deleted whole are in the history, as Rucio's operators see
     * replicas go with their reason: one event each, to nothing, with what removed it, in the dataset's history
     * (the file and the site rows are gone when the cascade's triggers run), under the names they had. They were
     * not recorded (only the reaper's were), and the history dropped even the earlier events of a deleted file.
     */
    @Test
    void replicasAFileOrASiteTakesWithItAreInTheHistoryWithWhatRemovedThem() throws Exception {
        String a = "RA-" + tag, b = "RB-" + tag, c = "RC-" + tag, ds = "removed-" + tag;
        siteWithoutEndpoint(a);
        siteWithoutEndpoint(b);
        siteWithoutEndpoint(c);
        List<String> files = dataset(ds, 2, a);
        assertThat(rules.register(b, List.of(files.get(0)))).isEqualTo(1);
        assertThat(rules.register(c, List.of(files.get(1)))).isEqualTo(1);
        long dsId = jdbc.queryForObject("SELECT id FROM dataset WHERE name = ?", Long.class, ds);

        jdbc.update("DELETE FROM file WHERE name = ?", files.get(0)); // its replicas at a and b go with it
        assertThat(sites.delete(c)).isTrue();                          // and the replica of the other file there

        List<ReplicationRules.ReplicaEvent> history = rules.history(ds, null, null, 100);
        assertThat(history).filteredOn(e -> e.to() == null)
                .extracting(ReplicationRules.ReplicaEvent::file, ReplicationRules.ReplicaEvent::site,
                        ReplicationRules.ReplicaEvent::from, ReplicationRules.ReplicaEvent::error)
                .containsExactlyInAnyOrder(org.assertj.core.groups.Tuple.tuple(files.get(0), a, "verified", "file deleted"),
                        org.assertj.core.groups.Tuple.tuple(files.get(0), b, "verified", "file deleted"),
                        org.assertj.core.groups.Tuple.tuple(files.get(1), c, "verified", "site removed"));
        assertThat(history.getFirst().error()).as("newest first: the site's removal").isEqualTo("site removed");
        assertThat(jdbc.queryForList("SELECT DISTINCT dataset_id FROM replica_event WHERE file_id IN "
                + "(SELECT file_id FROM replica_event_file WHERE name = ANY (?)) OR site_id IN "
                + "(SELECT site_id FROM replica_event_site WHERE name = ?)", Long.class, files.toArray(String[]::new), c))
                .as("the dataset kept with the removals").containsExactly(dsId);
        // the deleted file's and the removed site's whole histories, by their names; pages newest first
        assertThat(rules.history(ds, null, files.get(0), 100)).hasSize(4)
                .extracting(e -> e.from() + " -> " + e.to()).containsExactly("verified -> null", "verified -> null",
                        "null -> verified", "null -> verified");
        assertThat(rules.history(ds, c, null, 100)).extracting(e -> e.file() + " " + e.from() + " -> " + e.to())
                .containsExactly(files.get(1) + " verified -> null", files.get(1) + " null -> verified");
        assertThat(rules.history(ds, a, files.get(1), 100)).singleElement()
                .satisfies(e -> assertThat(e.from() + " -> " + e.to()).isEqualTo("null -> verified"));
        assertThat(rules.history(ds, null, null, 2)).extracting(ReplicationRules.ReplicaEvent::id)
                .containsExactly(history.get(0).id(), history.get(1).id());
        assertThat(history).extracting(ReplicationRules.ReplicaEvent::id).isSortedAccordingTo(java.util.Comparator.reverseOrder());

        // the reaper's removal (its copy deleted at the site, the row then deleted) stays without a reason, as before
        jdbc.update("UPDATE replica SET state = 'deleting' WHERE file_id = (SELECT id FROM file WHERE name = ?)", files.get(1));
        jdbc.update("DELETE FROM replica WHERE file_id = (SELECT id FROM file WHERE name = ?)", files.get(1));
        assertThat(rules.history(ds, a, files.get(1), 1)).singleElement().satisfies(e -> {
            assertThat(e.from() + " -> " + e.to()).isEqualTo("deleting -> null");
            assertThat(e.error()).isNull();
        });
    }

    /**
     * {@code ?file=} of a deleted file with replicas shows their removals, finding its id by its name in
     * replica_event_file through an index (V70): that table holds every file deleted within history-keep (10^6 rows
     * after a bulk delete) and every {@code ?file=} query, of a live file too, read it whole (200 ms at 10^6 rows).
     */
    @Test
    void aDeletedFileIsFoundByItsNameThroughAnIndex() throws Exception {
        String a = "RN-" + tag, ds = "named-" + tag;
        siteWithoutEndpoint(a);
        String file = dataset(ds, 1, a).getFirst();
        jdbc.update("DELETE FROM file WHERE name = ?", file);
        assertThat(rules.history(ds, null, file, 100)).extracting(e -> e.file() + " " + e.from() + " -> " + e.to() + " " + e.error())
                .containsExactly(file + " verified -> null file deleted", file + " null -> verified null");

        String plan = jdbc.execute((java.sql.Connection c) -> {
            c.setAutoCommit(false);
            try (var st = c.createStatement()) {
                st.execute("SET LOCAL enable_seqscan = off");
                StringBuilder out = new StringBuilder();
                try (var rs = st.executeQuery("EXPLAIN SELECT file_id FROM replica_event_file WHERE name = '/pass/x'")) {
                    while (rs.next()) out.append(rs.getString(1)).append('\n');
                }
                return out.toString();
            } finally {
                c.rollback();
                c.setAutoCommit(true);
            }
        });
        assertThat(plan).contains("replica_event_file_name");
    }

    /**
     * A file deleted from the catalog leaves its dataset's completeness at once: the replica rows go with the file,
     * and their triggers, which find the dataset through the file, could not mark it (it waited for the full
     * recompute, ten minutes, showing the file missing meanwhile).
     */
    @Test
    void aFileDeletedFromTheCatalogLeavesItsDatasetsCompletenessAtOnce() throws Exception {
        site("O-" + tag);
        site("G-" + tag);
        String ds = "gone-" + tag;
        List<String> files = dataset(ds, 2, "O-" + tag);
        rule(ds, "G-" + tag);
        assertThat(passUntil(40, () -> inState(ds, "G-" + tag, "transferring") == 2)).isTrue();
        List<Map<String, Object>> rows = replicas(ds, "G-" + tag);
        jdbc.update("UPDATE transfer_job SET state = 'done', dest_adler32 = 10, finished_at = now() WHERE id = ?",
                rows.get(0).get("transfer_job_id"));
        engine.sweepAtNextPass();
        engine.pass();
        engine.recomputeStatus();
        assertThat(rules.completeness(ds)).singleElement().satisfies(c -> {
            assertThat(c.filesDone()).isEqualTo(1);
            assertThat(c.filesTotal()).isEqualTo(2);
        });

        jdbc.update("DELETE FROM file WHERE name = ?", files.get(1));
        engine.recomputeStatus();
        assertThat(rules.completeness(ds)).singleElement().satisfies(c -> {
            assertThat(c.filesTotal()).isEqualTo(1);
            assertThat(c.filesDone()).isEqualTo(1);
            assertThat(c.state()).isEqualTo("OK");
        });
    }

    /**
     * A site deleted (decommissioned) while copies to it are under way: their transfers are cancelled, not left
     * to write to, and retry against, a site the service no longer knows.
     */
    @Test
    void deletingASiteCancelsTheTransfersToIt() throws Exception {
        site("O-" + tag);
        site("X-" + tag);
        String ds = "decommissioned-" + tag;
        dataset(ds, 2, "O-" + tag);
        rule(ds, "X-" + tag);
        assertThat(passUntil(40, () -> inState(ds, "X-" + tag, "transferring") == 2)).isTrue();
        Object[] jobs = replicas(ds, "X-" + tag).stream().map(r -> r.get("transfer_job_id")).toArray();

        assertThat(sites.delete("X-" + tag)).isTrue();
        assertThat(jdbc.queryForList("SELECT state FROM transfer_job WHERE id = ANY (?) ORDER BY id", String.class,
                (Object) java.util.Arrays.stream(jobs).map(j -> ((Number) j).longValue()).toArray(Long[]::new)))
                .containsExactly("cancelled", "cancelled");
        assertThat(jdbc.queryForObject("SELECT count(*) FROM transfer_job WHERE state = 'queued'", Long.class)).isZero();
    }

    /**
     * The same rule asked for twice (a client retrying a POST whose answer it did not get) is refused as a
     * conflict, as Rucio refuses a duplicate rule: two rules that want the same would both hold the files, and
     * a scheduled one would run twice a night. One that differs in copies, sites or schedule is a rule of its own.
     */
    @Test
    void theSameRuleTwiceIsAConflict() {
        siteWithoutEndpoint("D1-" + tag);
        siteWithoutEndpoint("D2-" + tag);
        String ds = "dup-" + tag;
        dataset(ds, 1, "D1-" + tag);
        String both = "D1-" + tag + "|D2-" + tag;
        createdRules.add(rules.create(new NewRule(ds, 1, both, null, null, null, "it")).id());
        assertThat(org.assertj.core.api.Assertions.catchThrowableOfType(ReplicationRejected.class,
                () -> rules.create(new NewRule(ds, 1, " " + both + " ", null, null, null, "it"))))
                .satisfies(e -> {
                    assertThat(e.kind()).isEqualTo(ReplicationRejected.Kind.CONFLICT);
                    assertThat(e.getMessage()).contains("rule " + createdRules.getFirst());
                });
        createdRules.add(rules.create(new NewRule(ds, 2, both, null, null, null, "it")).id());
        createdRules.add(rules.create(new NewRule(ds, 1, both, null, null, "0 0 2 * * ?", "it")).id());
        createdRules.add(rules.create(new NewRule(ds, 1, both, null, null, null, "someone-else")).id());
        assertThat(rules.list(ds, null, 0, 1000).rules()).hasSize(4);
    }

    /**
     * Declaring lost a copy that is on its way from tape (staging: its recall request reads the file and sends it)
     * leaves it to arrive: there is nothing at the site yet, and making it pending had the pass send the file a
     * second time, from another site, to the same path the recall's transfer writes.
     */
    @Test
    void declaringLostACopyOnItsWayFromTapeLeavesItToArrive() throws Exception {
        site("O-" + tag);
        siteWithoutEndpoint("L-" + tag);
        String ds = "declarestaging-" + tag;
        String name = dataset(ds, 1, "O-" + tag).getFirst();
        rule(ds, "L-" + tag);
        engine.pass();
        long file = jdbc.queryForObject("SELECT id FROM file WHERE name = ?", Long.class, name);
        UUID request = recallRequest(file, "queued");
        // as stage() leaves it: the replica staging, its recall request's file queued for tape
        jdbc.update("""
                UPDATE replica SET state = 'staging', source = 'tape', stage_request_id = ?, waiting_for = NULL
                 WHERE site_id = (SELECT id FROM site WHERE name = ?)""", request, "L-" + tag);
        Path dir = scratch.root.resolve("sites").resolve("L-" + tag);
        GridFtpServer.openUp(dir);
        sites.put("L-" + tag, Map.of(), List.of(server.url(dir))); // the site can take a transfer now

        assertThat(rules.declare("L-" + tag, List.of(name), "disk failure").underway()).containsExactly(name);
        engine.sweepAtNextPass();
        engine.pass();
        engine.pass();
        assertThat(jdbc.queryForMap("""
                SELECT r.state, r.stage_request_id FROM replica r JOIN site s ON s.id = r.site_id WHERE s.name = ?""", "L-" + tag))
                .containsEntry("state", "staging").containsEntry("stage_request_id", request);
        assertThat(jdbc.queryForObject("SELECT count(*) FROM transfer_job WHERE correlation LIKE 'replica:%'", Long.class))
                .as("no second copy sent").isZero();
    }

    /**
     * Declaring lost a copy whose recall request has read it from tape and handed it to a transfer (transferring, from
     * tape) leaves it to arrive, as one still staging, and says so. The declaration cancelled the recall side's transfer
     * and made the replica pending: the recall request failed its file ("transfer cancelled"), and the pass sent the
     * file a second time, from another site, to the path the transfer from tape was writing.
     */
    @Test
    void declaringLostACopyTransferringFromTapeLeavesItToArrive() throws Exception {
        site("O-" + tag);
        siteWithoutEndpoint("M-" + tag);
        String ds = "declaretransferring-" + tag;
        String name = dataset(ds, 1, "O-" + tag).getFirst();
        rule(ds, "M-" + tag);
        engine.pass();
        long file = jdbc.queryForObject("SELECT id FROM file WHERE name = ?", Long.class, name);
        UUID request = recallRequest(file, "transferring");
        // as the recall side and the pass leave them: the file staged and handed on, the replica following that transfer
        long job = jdbc.queryForObject("""
                INSERT INTO transfer_job (correlation, source, destination, size_bytes) VALUES (?, 'file:///cache/f', 'ftp://x/f', 1000)
                RETURNING id""", Long.class, "stage:" + request + ":" + file);
        jdbc.update("""
                UPDATE replica SET state = 'transferring', source = 'tape', stage_request_id = ?, transfer_job_id = ?, waiting_for = NULL
                 WHERE site_id = (SELECT id FROM site WHERE name = ?)""", request, job, "M-" + tag);
        Path dir = scratch.root.resolve("sites").resolve("M-" + tag);
        GridFtpServer.openUp(dir);
        sites.put("M-" + tag, Map.of(), List.of(server.url(dir))); // the site can take a transfer now

        ReplicationRules.Declared d = rules.declare("M-" + tag, List.of(name), "disk failure");
        assertThat(d.recreating()).isZero();
        assertThat(d.dropped()).isZero();
        assertThat(d.underway()).containsExactly(name);
        assertThat(jdbc.queryForObject("SELECT state FROM transfer_job WHERE id = ?", String.class, job))
                .as("the recall side's transfer goes on").isEqualTo("queued");
        engine.sweepAtNextPass();
        engine.pass();
        engine.pass();
        assertThat(jdbc.queryForMap("""
                SELECT r.state, r.stage_request_id, r.transfer_job_id, r.last_error FROM replica r JOIN site s ON s.id = r.site_id
                 WHERE s.name = ?""", "M-" + tag))
                .containsEntry("state", "transferring").containsEntry("stage_request_id", request)
                .containsEntry("transfer_job_id", job).containsEntry("last_error", null);
        assertThat(jdbc.queryForObject("SELECT count(*) FROM transfer_job WHERE correlation LIKE 'replica:%'", Long.class))
                .as("no second copy sent").isZero();
    }

    /**
     * Deleting a rule stops the copies only it wanted that are on their way: their transfers are cancelled (an
     * operator deletes a rule to stop it, and its queue of transfers went on for hours), and the replicas wait,
     * wanted by no rule. A copy another rule wants too goes on.
     */
    @Test
    void deletingARuleCancelsTheTransfersNoOtherRuleWants() throws Exception {
        site("O-" + tag);
        site("W-" + tag);
        String ds = "ruledeleted-" + tag;
        dataset(ds, 2, "O-" + tag);
        long first = rule(ds, "W-" + tag);
        assertThat(passUntil(40, () -> inState(ds, "W-" + tag, "transferring") == 2)).isTrue();
        Long[] jobs = replicas(ds, "W-" + tag).stream().map(r -> ((Number) r.get("transfer_job_id")).longValue()).toArray(Long[]::new);
        String jobStates = "SELECT state FROM transfer_job WHERE id = ANY (?) ORDER BY id";
        long second = rules.create(new NewRule(ds, 1, "W-" + tag, null, null, null, "someone-else")).id();
        createdRules.add(second);
        engine.pass();

        assertThat(rules.delete(first)).isTrue();
        assertThat(jdbc.queryForList(jobStates, String.class, (Object) jobs)).as("the other rule wants them").containsExactly("queued", "queued");
        assertThat(inState(ds, "W-" + tag, "transferring")).isEqualTo(2);

        // one ended meanwhile: it is followed to its end, not cancelled
        jdbc.update("UPDATE transfer_job SET state = 'done', dest_adler32 = 10, finished_at = now() WHERE id = ?", jobs[0]);
        assertThat(rules.delete(second)).isTrue();
        assertThat(jdbc.queryForList(jobStates, String.class, (Object) jobs)).containsExactly("done", "cancelled");
        engine.sweepAtNextPass();
        engine.pass();
        engine.pass();
        assertThat(replicas(ds, "W-" + tag)).extracting(r -> r.get("state"), r -> r.get("waiting_for"))
                .containsExactly(org.assertj.core.groups.Tuple.tuple("verified", null),
                        org.assertj.core.groups.Tuple.tuple("pending", ReplicationEngine.UNWANTED));
        assertThat(jdbc.queryForObject("SELECT attempts FROM replica r JOIN site s ON s.id = r.site_id WHERE s.name = ? AND r.state = 'pending'",
                Integer.class, "W-" + tag)).as("a cancel is no failed attempt").isZero();
        assertThat(jdbc.queryForObject("SELECT count(*) FROM transfer_job WHERE state = 'queued'", Long.class)).isZero();
    }

    /** A rule past its lifetime stops the copies on their way that no other rule wants, as a deleted one does. */
    @Test
    void anExpiredRuleCancelsTheTransfersNoOtherRuleWants() throws Exception {
        site("O-" + tag);
        site("E-" + tag);
        String ds = "ruleexpired-" + tag;
        dataset(ds, 2, "O-" + tag);
        long rule = rules.create(new NewRule(ds, 1, "E-" + tag, null, java.time.Duration.ofDays(1), null, "it")).id();
        createdRules.add(rule);
        assertThat(passUntil(40, () -> inState(ds, "E-" + tag, "transferring") == 2)).isTrue();
        Long[] jobs = replicas(ds, "E-" + tag).stream().map(r -> ((Number) r.get("transfer_job_id")).longValue()).toArray(Long[]::new);

        jdbc.update("UPDATE replication_rule SET expires_at = now() - interval '1 second' WHERE id = ?", rule);
        engine.pass();
        assertThat(rules.get(rule).orElseThrow().state()).isEqualTo("expired");
        assertThat(jdbc.queryForList("SELECT state FROM transfer_job WHERE id = ANY (?)", String.class, (Object) jobs))
                .containsExactly("cancelled", "cancelled");
        engine.pass();
        assertThat(replicas(ds, "E-" + tag)).extracting(r -> r.get("state"), r -> r.get("waiting_for")).containsOnly(
                org.assertj.core.groups.Tuple.tuple("pending", ReplicationEngine.UNWANTED));
    }
    /** A dataset of {@code n} catalog files on one tape volume only (no site holds them): they are replicated from tape. */
    List<Long> onTapeOnly(String dataset, int n) {
        long ds = jdbc.queryForObject("INSERT INTO dataset (name, experiment) VALUES (?, 'phenix') RETURNING id", Long.class, dataset);
        long volume = jdbc.queryForObject("INSERT INTO volume (label) VALUES (?) RETURNING id", Long.class, "T" + tag.substring(0, 5).toUpperCase());
        List<Long> ids = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            long id = jdbc.queryForObject("""
                    INSERT INTO file (name, size_bytes, adler32, dataset_id, experiment) VALUES (?, 1000, '0000000a', ?, 'phenix')
                    RETURNING id""", Long.class, "/pass/" + dataset + "/f" + i, ds);
            jdbc.update("INSERT INTO segment (file_id, volume_id, offset_bytes) VALUES (?, ?, ?)", id, volume, (i + 1) * 1_000_000L);
            ids.add(id);
        }
        return ids;
    }

    /** The states of the recall files of {@code files}, by file. */
    List<String> recallFiles(List<Long> files) {
        return jdbc.queryForList("SELECT state FROM stage_request_file WHERE file_id = ANY (?) ORDER BY file_id", String.class,
                (Object) files.toArray(Long[]::new));
    }

    /**
     * Deleting a rule stops the copies from tape only it wanted: their files in the recall request made for them
     * are cancelled (they were read from tape and sent to the site all the same), and the replicas wait, wanted by
     * no rule. While another rule wants them they go on.
     */
    @Test
    void deletingARuleCancelsTheRecallsNoOtherRuleWants() throws Exception {
        site("T-" + tag);
        String ds = "ruledeletedtape-" + tag;
        List<Long> files = onTapeOnly(ds, 2);
        long first = rule(ds, "T-" + tag);
        assertThat(passUntil(10, () -> inState(ds, "T-" + tag, "staging") == 2)).isTrue();
        assertThat(recallFiles(files)).containsExactly("queued", "queued");
        long second = rules.create(new NewRule(ds, 1, "T-" + tag, null, null, null, "someone-else")).id();
        createdRules.add(second);
        engine.pass();

        assertThat(rules.delete(first)).isTrue();
        assertThat(recallFiles(files)).as("the other rule wants them").containsExactly("queued", "queued");
        // the first file was staged and handed on, and its transfer is done (the recall side has not seen it yet)
        UUID request = jdbc.queryForObject("SELECT DISTINCT request_id FROM stage_request_file WHERE file_id = ANY (?)", UUID.class,
                (Object) files.toArray(Long[]::new));
        long arrived = jdbc.queryForObject("""
                INSERT INTO transfer_job (correlation, source, destination, size_bytes, state, dest_adler32, finished_at)
                VALUES (?, 'file:///cache/f0', 'ftp://x/f0', 1000, 'done', 10, now()) RETURNING id""", Long.class,
                "stage:" + request + ":" + files.get(0));
        jdbc.update("UPDATE stage_request_file SET state = 'transferring' WHERE request_id = ? AND file_id = ?", request, files.get(0));
        jdbc.update("UPDATE replica SET state = 'transferring', transfer_job_id = ? WHERE file_id = ?", arrived, files.get(0));
        assertThat(rules.delete(second)).isTrue();
        assertThat(recallFiles(files)).as("the arrived one is followed").containsExactly("transferring", "cancelled");
        engine.sweepAtNextPass();
        engine.pass();
        engine.pass();
        assertThat(replicas(ds, "T-" + tag)).extracting(r -> r.get("state"), r -> r.get("waiting_for")).containsExactly(
                org.assertj.core.groups.Tuple.tuple("verified", null),
                org.assertj.core.groups.Tuple.tuple("pending", ReplicationEngine.UNWANTED));
        assertThat(jdbc.queryForList("SELECT attempts FROM replica r JOIN site s ON s.id = r.site_id WHERE s.name = ?", Integer.class,
                "T-" + tag)).as("a cancel is no failed attempt").containsOnly(0);
    }

    /** A rule past its lifetime stops the copies from tape no other rule wants, as a deleted one does. */
    @Test
    void anExpiredRuleCancelsTheRecallsNoOtherRuleWants() throws Exception {
        site("U-" + tag);
        String ds = "ruleexpiredtape-" + tag;
        List<Long> files = onTapeOnly(ds, 2);
        long rule = rules.create(new NewRule(ds, 1, "U-" + tag, null, java.time.Duration.ofDays(1), null, "it")).id();
        createdRules.add(rule);
        assertThat(passUntil(10, () -> inState(ds, "U-" + tag, "staging") == 2)).isTrue();

        jdbc.update("UPDATE replication_rule SET expires_at = now() - interval '1 second' WHERE id = ?", rule);
        engine.pass();
        assertThat(rules.get(rule).orElseThrow().state()).isEqualTo("expired");
        assertThat(recallFiles(files)).containsExactly("cancelled", "cancelled");
        assertThat(inState(ds, "U-" + tag, "pending")).isEqualTo(2);
    }

    /** A site deleted while copies from tape are on their way to it: their recall files are cancelled. */
    @Test
    void deletingASiteCancelsTheRecallsToIt() throws Exception {
        site("V-" + tag);
        String ds = "decommissionedtape-" + tag;
        List<Long> files = onTapeOnly(ds, 2);
        rule(ds, "V-" + tag);
        assertThat(passUntil(10, () -> inState(ds, "V-" + tag, "staging") == 2)).isTrue();

        assertThat(sites.delete("V-" + tag)).isTrue();
        assertThat(recallFiles(files)).containsExactly("cancelled", "cancelled");
    }
    /**
     * A file deleted from the catalog (by hand: the service never deletes one) while its copies are on their way:
     * their transfers are cancelled at the next pass. Its replica rows went with it, and nothing followed their
     * transfers, which went on writing a file the catalog no longer has to the site (and retrying it). The
     * other files' transfers go on.
     */
    @Test
    void deletingAFileFromTheCatalogCancelsItsTransfers() throws Exception {
        site("O-" + tag);
        site("K-" + tag);
        String ds = "filedeleted-" + tag;
        List<String> files = dataset(ds, 2, "O-" + tag);
        rule(ds, "K-" + tag);
        assertThat(passUntil(40, () -> inState(ds, "K-" + tag, "transferring") == 2)).isTrue();
        Long[] jobs = replicas(ds, "K-" + tag).stream().map(r -> ((Number) r.get("transfer_job_id")).longValue()).toArray(Long[]::new);

        jdbc.update("DELETE FROM file WHERE name = ?", files.get(1));
        engine.pass();
        assertThat(jdbc.queryForList("SELECT state FROM transfer_job WHERE id = ANY (?) ORDER BY id", String.class, (Object) jobs))
                .containsExactly("queued", "cancelled");
        assertThat(inState(ds, "K-" + tag, "transferring")).isEqualTo(1);
    }
}
