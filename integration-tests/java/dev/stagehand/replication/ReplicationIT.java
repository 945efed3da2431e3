package dev.stagehand.replication;

import static dev.stagehand.ItWait.await;
import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.ItDb;
import dev.stagehand.replication.ReplicationRules.Completeness;
import dev.stagehand.replication.ReplicationRules.NewRule;
import dev.stagehand.replication.ReplicationRules.Replica;
import dev.stagehand.transfer.GridFtpScratch;
import dev.stagehand.transfer.GridFtpServer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.annotation.DirtiesContext;

/**
 * Rules replicating datasets between "sites" that are directories served by real Globus GridFTP servers on
 * 127.0.0.1, through the service's transfer queue and movers, on the real database: completeness reaches
 * 100 % verified, a second rule adds no transfer, a replica declared lost comes back, a bottleneck link is
 * crossed once per file and the far side fans out, and a dead destination is reported STUCK with its reason.
 */
@DirtiesContext // its own context: closed afterwards, so the suite's contexts stay within the database's connections
@SpringBootTest(properties = {"stagehand.replication.pass-interval=200ms", "stagehand.replication.stuck-after=3s",
        "stagehand.replication.max-attempts=2", "stagehand.replication.retry-backoff=200ms",
        "stagehand.transfer.queue.poll-interval=100ms", "stagehand.transfer.mover.stall-timeout=5s",
        "stagehand.transfer.mover.backoff=100ms", "stagehand.transfer.mover.max-attempts=2",
        "stagehand.replication.deletion.grace=1s"})
class ReplicationIT {

    static GridFtpScratch scratch;
    static Path root;
    static GridFtpServer server;

    @Autowired JdbcTemplate jdbc;
    @Autowired Sites sites;
    @Autowired ReplicationRules rules;
    @Autowired ReplicationEngine engine;
    @Autowired ReplicaHolds holds;
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
        scratch = GridFtpScratch.create("stagehand-replication-it");
        root = scratch.root;
        server = scratch.anonymous("server");
    }

    @AfterAll
    static void stop() throws Exception {
        if (scratch != null) scratch.close();
    }

    @BeforeEach
    void lead() {
        engine.takeLead(); // this context's engine (and its settings) runs the passes, not another test class's
    }

    @AfterEach
    void cleanUp() {
        createdRules.forEach(rules::delete);
    }

    /** A site whose endpoint is a fresh directory on the loopback server. */
    Path site(String name, Map<String, String> attributes) throws Exception {
        Path dir = root.resolve("sites").resolve(name);
        GridFtpServer.openUp(dir);
        sites.put(name, attributes, List.of(server.url(dir)));
        return dir;
    }

    /** A dataset of {@code n} files that exist at {@code origin} (registered there as verified replicas). */
    List<String> dataset(String dataset, int n, String originSite, Path originDir) throws Exception {
        long ds = jdbc.queryForObject("INSERT INTO dataset (name, experiment) VALUES (?, 'phenix') RETURNING id", Long.class, dataset);
        List<String> names = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            String name = "/repl/" + dataset + "/run" + (i % 2) + "/f" + i + ".prdf";
            byte[] data = new byte[100_000 + i * 7919];
            new Random(i + dataset.hashCode()).nextBytes(data);
            ItDb.writtenFile(jdbc, originDir, name, data, ds);
            names.add(name);
        }
        assertThat(rules.register(originSite, names)).isEqualTo(n);
        return names;
    }

    long rule(NewRule r) {
        long id = rules.create(r).id();
        createdRules.add(id);
        return id;
    }

    boolean complete(String dataset, int sitesExpected) {
        List<Completeness> c = rules.completeness(dataset);
        return c.size() == sitesExpected && c.stream().allMatch(x -> x.state().equals("OK") && x.filesVerified() == x.filesTotal());
    }

    long jobs(String dataset) {
        return jdbc.queryForObject("""
                SELECT count(*) FROM transfer_job j WHERE j.correlation IN (
                    SELECT 'replica:' || r.file_id || ':' || r.site_id FROM replica r JOIN file f ON f.id = r.file_id
                      JOIN dataset d ON d.id = f.dataset_id WHERE d.name = ?)""", Long.class, dataset);
    }

    @Test
    void aRuleReplicatesADatasetVerifiedAndALostReplicaComesBack() throws Exception {
        Path origin = site("ORIGIN-" + tag, Map.of("role", "origin"));
        Path a = site("A-" + tag, Map.of("tier", "2", "group", tag));
        Path b = site("B-" + tag, Map.of("tier", "2", "group", tag));
        site("C-" + tag, Map.of("tier", "3", "group", tag));
        String ds = "ds-" + tag;
        List<String> files = dataset(ds, 6, "ORIGIN-" + tag, origin);
        List<Long> ids = jdbc.queryForList("SELECT id FROM file WHERE name = ANY (?) ORDER BY id", Long.class, (Object) files.toArray(String[]::new));

        long r1 = rule(new NewRule(ds, 2, "group=" + tag + "&tier=2", null, null, null, "it"));
        assertThat(holds.evictable(ids)).as("nothing leaves the buffer before its copies are made").isEmpty();
        await("dataset verified at A and B", Duration.ofSeconds(90), () -> complete(ds, 2));

        assertThat(rules.get(r1).orElseThrow().chosenSites()).containsExactly("A-" + tag, "B-" + tag);
        for (String f : files) {
            Path src = origin.resolve(f.substring(1));
            assertThat(Files.mismatch(src, a.resolve(f.substring(1)))).isEqualTo(-1L);
            assertThat(Files.mismatch(src, b.resolve(f.substring(1)))).isEqualTo(-1L);
        }
        List<Replica> atA = rules.replicas(ds, "A-" + tag, null, 0, 100);
        assertThat(atA).hasSize(6).allSatisfy(r -> {
            assertThat(r.state()).isEqualTo("verified");
            assertThat(r.attempts()).isZero();
        });
        assertThat(atA.stream().map(Replica::adler32).toList()).isEqualTo(
                jdbc.queryForList("SELECT adler32 FROM file WHERE name = ANY (?) ORDER BY name", String.class, (Object) files.toArray(String[]::new)));
        Completeness c = rules.completeness(ds).getFirst();
        assertThat(c.percentDone()).isEqualTo(100.0);
        assertThat(c.bytesDone()).isEqualTo(c.bytesTotal()).isPositive();
        assertThat(jobs(ds)).as("one transfer per replica").isEqualTo(12);
        assertThat(holds.evictable(ids)).containsExactlyInAnyOrderElementsOf(ids);

        // a second rule wanting a copy at A creates no transfer: the replicas exist
        rule(new NewRule(ds, 1, "A-" + tag, null, null, null, "it"));
        for (int i = 0; i < 3; i++) engine.pass();
        assertThat(jobs(ds)).isEqualTo(12);

        // the copy of one file at A is lost: declared, it is made again and verified
        String lost = files.get(3);
        Files.delete(a.resolve(lost.substring(1)));
        ReplicationRules.Declared d = rules.declare("A-" + tag, List.of(lost, "/no/such/file"), "lost");
        assertThat(d.recreating()).isEqualTo(1);
        assertThat(d.unknown()).containsExactly("/no/such/file");
        assertThat(holds.mayEvict(ids.get(3))).isFalse();
        // the file shows at A as soon as its transfer starts: wait for its replica to be verified
        await("lost replica back", Duration.ofSeconds(60), () -> rules.replicas(ds, "A-" + tag, "verified", 0, 100).size() == 6
                && complete(ds, 2));
        assertThat(Files.mismatch(origin.resolve(lost.substring(1)), a.resolve(lost.substring(1)))).isEqualTo(-1L);
        assertThat(rules.replicas(ds, "A-" + tag, "verified", 0, 100)).hasSize(6);
        assertThat(jobs(ds)).isEqualTo(13);
        assertThat(holds.mayEvict(ids.get(3))).isTrue();
    }

    /**
     * Names with a space, '%', '#' or '?' (registration accepts them) are copied to exactly their own path, each
     * to its own: the URL is the percent-encoded name, and the movers use its decoded path.
     */
    @Test
    void filesWhoseNamesNeedEscapingAreReplicatedUnderTheirOwnNames() throws Exception {
        Path origin = site("ESC-O-" + tag, Map.of());
        Path dest = site("ESC-D-" + tag, Map.of("esc", tag));
        String ds = "esc-" + tag;
        long dsId = jdbc.queryForObject("INSERT INTO dataset (name, experiment) VALUES (?, 'phenix') RETURNING id", Long.class, ds);
        List<String> files = new ArrayList<>();
        String[] leaves = {"with space.prdf", "pct%41.prdf", "run#1", "run#2", "q?x=1", "plain.prdf"};
        for (int i = 0; i < leaves.length; i++) {
            String name = "/esc/" + ds + "/" + leaves[i];
            byte[] data = new byte[20_000 + i * 101];
            new Random(i).nextBytes(data);
            ItDb.writtenFile(jdbc, origin, name, data, dsId);
            files.add(name);
        }
        assertThat(rules.register("ESC-O-" + tag, files)).isEqualTo(files.size());
        rule(new NewRule(ds, 1, "esc=" + tag, null, null, null, "it"));
        await("dataset verified at the destination", Duration.ofSeconds(60), () -> complete(ds, 1));
        for (String f : files) assertThat(Files.mismatch(origin.resolve(f.substring(1)), dest.resolve(f.substring(1)))).isEqualTo(-1L);
        try (var listed = Files.list(dest.resolve("esc/" + ds))) {
            assertThat(listed.map(p -> p.getFileName().toString()).toList()).containsExactlyInAnyOrder(leaves);
        }
        assertThat(jobs(ds)).as("one transfer per replica").isEqualTo(files.size());

        // and deleted by the same names once no rule wants them
        createdRules.forEach(rules::delete);
        createdRules.clear();
        await("copies deleted", Duration.ofSeconds(30), () -> rules.replicas(ds, "ESC-D-" + tag, null, 0, 10).isEmpty());
        try (var listed = Files.list(dest.resolve("esc/" + ds))) {
            assertThat(listed.toList()).isEmpty();
        }
        for (String f : files) assertThat(origin.resolve(f.substring(1))).exists();
    }

    /**
     * A replica that cannot be dispatched (its site's endpoint, written straight into the database, is not a
     * URL) fails alone, with its reason; the pass goes on and every other replica is made.
     */
    @Test
    void aReplicaThatCannotBeDispatchedFailsAloneAndTheOthersAreMade() throws Exception {
        Path origin = site("ISO-O-" + tag, Map.of());
        site("ISO-A-" + tag, Map.of("iso", tag));
        long bad = jdbc.queryForObject("INSERT INTO site (name, attributes) VALUES (?, ?::jsonb) RETURNING id", Long.class,
                "ISO-B-" + tag, "{\"iso\":\"" + tag + "\"}");
        jdbc.update("INSERT INTO site_endpoint (site_id, url) VALUES (?, ?)", bad, server.url(root.resolve("sites")) + "/not a url{");
        String ds = "iso-" + tag;
        dataset(ds, 4, "ISO-O-" + tag, origin);
        rule(new NewRule(ds, 2, "iso=" + tag, null, null, null, "it"));
        await("every copy at the good site verified", Duration.ofSeconds(60),
                () -> rules.replicas(ds, "ISO-A-" + tag, "verified", 0, 10).size() == 4);
        await("the broken site's replicas failed", Duration.ofSeconds(30),
                () -> rules.replicas(ds, "ISO-B-" + tag, "failed", 0, 10).size() == 4);
        assertThat(rules.replicas(ds, "ISO-B-" + tag, null, 0, 10)).allSatisfy(r ->
                assertThat(r.lastError()).startsWith("cannot dispatch").contains("Illegal character"));
        assertThat(jobs(ds)).as("transfers to the good site only").isEqualTo(4);
    }

    @Test
    void copiesNoRuleWantsAreDeletedAtTheirSiteButNeverTheLastOne() throws Exception {
        Path origin = site("O-" + tag, Map.of());
        Path x = site("X-" + tag, Map.of("del", tag));
        Path y = site("Y-" + tag, Map.of("del", tag));
        String ds = "del-" + tag;
        List<String> files = dataset(ds, 3, "O-" + tag, origin);
        long both = rule(new NewRule(ds, 2, "del=" + tag, null, null, null, "it"));
        long onlyX = rule(new NewRule(ds, 1, "X-" + tag, null, null, null, "it"));
        await("dataset verified at X and Y", Duration.ofSeconds(90), () -> complete(ds, 2));
        assertThat(rules.get(both).orElseThrow().chosenSites()).containsExactly("X-" + tag, "Y-" + tag);

        // the rule wanting Y goes: Y's copies are deleted there; X's stay (another rule wants them), and so do the
        // origin's (registered there, not made by replication); a copy already gone there counts as deleted
        Files.delete(y.resolve(files.getFirst().substring(1)));
        rules.delete(both);
        createdRules.remove(both);
        await("Y's copies deleted", Duration.ofSeconds(30), () -> rules.replicas(ds, "Y-" + tag, null, 0, 10).isEmpty());
        for (String f : files) {
            assertThat(y.resolve(f.substring(1))).doesNotExist();
            assertThat(x.resolve(f.substring(1))).exists();
            assertThat(origin.resolve(f.substring(1))).exists();
        }
        assertThat(rules.replicas(ds, "X-" + tag, "verified", 0, 10)).hasSize(3);
        assertThat(rules.replicas(ds, "O-" + tag, "verified", 0, 10)).hasSize(3);

        // X's copies become the last ones (the origin's declared lost, no tape copy): no rule wants them, yet they stay
        rules.declare("O-" + tag, files, "lost");
        rules.delete(onlyX);
        createdRules.remove(onlyX);
        await("X's copies unwanted", Duration.ofSeconds(30), () -> jdbc.queryForObject(
                "SELECT count(*) FROM replica r JOIN site s ON s.id = r.site_id WHERE s.name = ? AND r.unwanted_since IS NOT NULL",
                Long.class, "X-" + tag) == 3);
        Thread.sleep(2_000); // past the grace, several passes
        for (int i = 0; i < 3; i++) engine.pass();
        assertThat(rules.replicas(ds, "X-" + tag, "verified", 0, 10)).hasSize(3);
        for (String f : files) assertThat(x.resolve(f.substring(1))).exists();
    }

    /**
     * Two passes at once (the lease moved to another instance while a pass was still sending): each replica
     * gets one transfer. Here instance A's pass, while it makes the directory for its first replica, lets
     * instance B take the lease and run a whole pass, which sends both replicas; A then sends nothing.
     */
    @Test
    void twoPassesAtOnceSendEachReplicaOnce() throws Exception {
        Path origin = site("TW-O-" + tag, Map.of());
        Path t = site("TW-T-" + tag, Map.of("tw", tag));
        String ds = "tw-" + tag;
        List<String> files = dataset(ds, 2, "TW-O-" + tag, origin);
        ReplicationEngine b = new ReplicationEngine(jdbc, tx, transferQueue, stageRequests, mover, localSource, props);
        java.util.concurrent.atomic.AtomicReference<ReplicationEngine.PassReport> bPass = new java.util.concurrent.atomic.AtomicReference<>();
        dev.stagehand.transfer.Mover racing = new dev.stagehand.transfer.Mover() {
            @Override public dev.stagehand.transfer.CopyBatch submit(List<dev.stagehand.transfer.FileCopy> copies) { return mover.submit(copies); }
            @Override public List<dev.stagehand.transfer.LinkStatus> links() { return mover.links(); }
            @Override public void close() {}
            @Override public void makeDirectories(java.net.URI url) {
                if (bPass.get() == null) {
                    b.takeLead();
                    bPass.set(b.pass());
                }
                mover.makeDirectories(url);
            }
        };
        ReplicationEngine a = new ReplicationEngine(jdbc, tx, transferQueue, stageRequests, racing, localSource, props);
        a.takeLead(); // this context's engine stops leading: after its pass under way, if any
        Thread.sleep(1_000);
        rule(new NewRule(ds, 1, "tw=" + tag, null, null, null, "it"));
        a.pass();
        assertThat(bPass.get().dispatched()).as("B sent both").isEqualTo(2);
        assertThat(jobs(ds)).as("one transfer per replica").isEqualTo(2);
        engine.takeLead();
        await("verified at T", Duration.ofSeconds(60), () -> complete(ds, 1));
        assertThat(jobs(ds)).isEqualTo(2);
        for (String f : files) assertThat(Files.mismatch(origin.resolve(f.substring(1)), t.resolve(f.substring(1)))).isEqualTo(-1L);
    }

    /**
     * Copies left marked 'deleting' (an instance crashed between the mark and the end of the deletion, which
     * takes minutes) do not stay so: a rule wanting them makes them again, and unwanted ones are deleted again
     * once the mark is old.
     */
    @Test
    void copiesLeftDeletingByACrashAreMadeAgainWhenWantedAndDeletedOtherwise() throws Exception {
        Path origin = site("LD-O-" + tag, Map.of());
        Path z = site("LD-Z-" + tag, Map.of("ld", tag));
        String ds = "ld-" + tag;
        List<String> files = dataset(ds, 3, "LD-O-" + tag, origin);
        long r = rule(new NewRule(ds, 1, "ld=" + tag, null, null, null, "it"));
        await("dataset verified at Z", Duration.ofSeconds(60), () -> complete(ds, 1));
        String markZ = """
                UPDATE replica r SET state = 'deleting', unwanted_since = now() - interval '3 hours', updated_at = now() - interval '2 hours'
                  FROM site s WHERE s.id = r.site_id AND s.name = ?""";

        // wanted all along (say the rule came back meanwhile): made again, the one already deleted at Z too
        Files.delete(z.resolve(files.getFirst().substring(1)));
        jdbc.update(markZ, "LD-Z-" + tag);
        await("made again", Duration.ofSeconds(30), () -> complete(ds, 1)
                && rules.replicas(ds, "LD-Z-" + tag, "verified", 0, 10).size() == 3);
        for (String f : files) assertThat(Files.mismatch(origin.resolve(f.substring(1)), z.resolve(f.substring(1)))).isEqualTo(-1L);

        // unwanted (its rule gone in the same commit as the crash's marks): deleted at Z in the end, rows and files
        tx.executeWithoutResult(st -> {
            rules.delete(r);
            jdbc.update(markZ, "LD-Z-" + tag);
        });
        createdRules.remove(r);
        await("deleted at Z", Duration.ofSeconds(30), () -> rules.replicas(ds, "LD-Z-" + tag, null, 0, 10).isEmpty());
        for (String f : files) {
            assertThat(z.resolve(f.substring(1))).doesNotExist();
            assertThat(origin.resolve(f.substring(1))).exists();
        }
    }

    /**
     * Completeness is recomputed for the datasets whose replicas, wants or rules changed (database triggers mark
     * them, whoever changes them), not for every wanted replica each pass (bench/completeness.sh times it).
     */
    @Test
    void completenessFollowsEveryChangeAndAChangeMarksOnlyItsDataset() throws Exception {
        Path s = site("INC-" + tag, Map.of("inc", tag));
        List<String> datasets = List.of("inc1-" + tag, "inc2-" + tag);
        for (String ds : datasets) {
            long dsId = jdbc.queryForObject("INSERT INTO dataset (name, experiment) VALUES (?, 'phenix') RETURNING id", Long.class, ds);
            // the copies are there already (verified), so the rule has nothing to send
            jdbc.update("""
                    WITH f AS (INSERT INTO file (name, size_bytes, dataset_id, experiment)
                               SELECT '/inc/' || ? || '/f' || i, 1000, ?, 'phenix' FROM generate_series(1, 4) i RETURNING id)
                    INSERT INTO replica (file_id, site_id, state, source, done_at)
                    SELECT f.id, (SELECT id FROM site WHERE name = ?), 'verified', 'test', now() FROM f""", ds, dsId, "INC-" + tag);
            rule(new NewRule(ds, 1, "inc=" + tag, null, null, null, "it"));
        }
        await("both complete", Duration.ofSeconds(20), () -> complete(datasets.get(0), 1) && complete(datasets.get(1), 1));

        // a change marks its dataset only (seen inside the changing transaction, before any engine takes the mark;
        // other cached contexts' engines may lead and recompute in full, so timestamps would prove nothing)
        String change = "UPDATE replica SET state = 'failed', last_error = 'changed by the test' WHERE file_id = "
                + "(SELECT id FROM file WHERE name = ?)";
        String f1 = "/inc/" + datasets.get(0) + "/f1";
        List<String> marked = tx.execute(status -> {
            status.setRollbackOnly();
            jdbc.update(change, f1);
            return jdbc.queryForList("SELECT d.name FROM dataset_status_dirty x JOIN dataset d ON d.id = x.dataset_id "
                    + "WHERE d.name = ANY (?)", String.class, (Object) datasets.toArray(String[]::new));
        });
        assertThat(marked).containsExactly(datasets.get(0));

        // a change made straight in the database is counted
        jdbc.update(change, f1);
        await("the failure counted", Duration.ofSeconds(20), () -> rules.completeness(datasets.get(0)).getFirst().filesFailed() == 1);
        Completeness c = rules.completeness(datasets.get(0)).getFirst();
        assertThat(c.filesDone()).isEqualTo(3);
        assertThat(c.state()).isNotEqualTo("OK");
        assertThat(complete(datasets.get(1), 1)).isTrue();
    }

    @Test
    void oneCopyCrossesTheBottleneckAndTheFarSideFansOut() throws Exception {
        Path origin = site("HOME-" + tag, Map.of("region", "us-" + tag));
        site("FAR1-" + tag, Map.of("region", "eu-" + tag));
        site("FAR2-" + tag, Map.of("region", "eu-" + tag));
        site("FAR3-" + tag, Map.of("region", "eu-" + tag));
        rules.putLink("ocean-" + tag, "region=us-" + tag, "region=eu-" + tag);
        try {
            String ds = "chain-" + tag;
            List<String> files = dataset(ds, 4, "HOME-" + tag, origin);
            rule(new NewRule(ds, 3, "region=eu-" + tag, null, null, null, "it"));
            await("dataset verified at the three far sites", Duration.ofSeconds(90), () -> complete(ds, 3));
            for (String f : files) {
                List<Map<String, Object>> rows = jdbc.queryForList("""
                        SELECT s.name, r.source FROM replica r JOIN site s ON s.id = r.site_id JOIN file f ON f.id = r.file_id
                         WHERE f.name = ? AND s.name LIKE 'FAR%'""", f);
                assertThat(rows).hasSize(3);
                long crossed = rows.stream().filter(r -> r.get("source").equals("HOME-" + tag)).count();
                assertThat(crossed).as("copies of %s over the bottleneck", f).isEqualTo(1);
                assertThat(rows).allSatisfy(r -> assertThat((String) r.get("source")).matches("(HOME|FAR[123])-" + tag));
            }
        } finally {
            rules.deleteLink("ocean-" + tag);
        }
    }

    @Test
    void aDeadDestinationIsReportedStuckWithItsReason() throws Exception {
        Path origin = site("SRC-" + tag, Map.of());
        Path deadDir = root.resolve("dead-" + tag);
        GridFtpServer.openUp(deadDir);
        GridFtpServer dead = GridFtpServer.anonymous(root.resolve("dead-server-" + tag));
        sites.put("DEAD-" + tag, Map.of("group", "dead-" + tag), List.of(dead.url(deadDir)));
        dead.kill(); // the site's server is down from the start
        String ds = "stuck-" + tag;
        dataset(ds, 2, "SRC-" + tag, origin);
        rule(new NewRule(ds, 1, "group=dead-" + tag, null, null, null, "it"));
        await("STUCK", Duration.ofSeconds(60), () -> rules.completeness(ds).stream().anyMatch(c -> c.state().equals("STUCK")));
        Completeness c = rules.completeness(ds).getFirst();
        assertThat(c.site()).isEqualTo("DEAD-" + tag);
        assertThat(c.filesDone()).isZero();
        // no replica done since stuck-after, or one failed for good, whichever came first
        assertThat(c.reason()).containsIgnoringCase("refused");
        await("attempts used up", Duration.ofSeconds(30), () -> rules.replicas(ds, "DEAD-" + tag, "failed", 0, 10).size() == 2);
        await("counted", Duration.ofSeconds(20), () -> rules.completeness(ds).getFirst().filesFailed() == 2);
        assertThat(rules.completeness(ds).getFirst()).satisfies(after -> {
            assertThat(after.state()).isEqualTo("STUCK");
            assertThat(after.reason()).startsWith("2 replicas failed for good (retry them); last: ").containsIgnoringCase("refused");
        });
        assertThat(rules.replicas(ds, "DEAD-" + tag, "failed", 0, 10)).allSatisfy(r -> {
            assertThat(r.attempts()).isEqualTo(2);
            assertThat(r.lastError()).containsIgnoringCase("refused");
        });
    }

    /**
     * Copies at a site declared bad (corrupt: other bytes of the same size, or a short file) are made again over the
     * corrupt files still at their paths: a replica's path at its site is replication's own, and its transfers write
     * over what is there (Rucio's to disk sites do too). Before, the re-made replicas' transfers kept the corrupt
     * file there as another's and failed DESTINATION_EXISTS at every attempt, until the dataset was STUCK.
     */
    @Test
    void replicasDeclaredBadAreMadeAgainOverTheCorruptFilesAtTheSite() throws Exception {
        Path origin = site("BADO-" + tag, Map.of());
        Path bad = site("BAD-" + tag, Map.of());
        String ds = "declaredbad-" + tag;
        List<String> files = dataset(ds, 3, "BADO-" + tag, origin);
        rule(new NewRule(ds, 1, "BAD-" + tag, null, null, null, "it"));
        await("dataset verified at the site", Duration.ofSeconds(90), () -> complete(ds, 1));
        long sent = jobs(ds);

        // one copy's bytes rot (same size), another is cut short
        Path flipped = bad.resolve(files.get(0).substring(1));
        byte[] rotten = Files.readAllBytes(flipped);
        for (int i = 0; i < rotten.length; i += 997) rotten[i] ^= 0x5a;
        Files.write(flipped, rotten);
        Path cut = bad.resolve(files.get(1).substring(1));
        byte[] whole = Files.readAllBytes(cut);
        Files.write(cut, java.util.Arrays.copyOf(whole, whole.length / 2));

        ReplicationRules.Declared d = rules.declare("BAD-" + tag, List.of(files.get(0), files.get(1)), "bad: checksum mismatch");
        assertThat(d.recreating()).isEqualTo(2);
        // both made again, or failed for good: either way the pass is over for them
        await("declared replicas settled", Duration.ofSeconds(60), () -> jobs(ds) >= sent + 2
                && rules.replicas(ds, "BAD-" + tag, null, 0, 10).stream().allMatch(r -> r.state().equals("verified")
                        || r.state().equals("failed")));
        assertThat(rules.replicas(ds, "BAD-" + tag, null, 0, 10)).hasSize(3).allSatisfy(r ->
                assertThat(r.state()).as(r.file() + ": " + r.lastError()).isEqualTo("verified"));
        assertThat(jobs(ds)).as("one transfer each").isEqualTo(sent + 2);
        for (String f : files)
            assertThat(Files.mismatch(origin.resolve(f.substring(1)), bad.resolve(f.substring(1)))).as(f).isEqualTo(-1L);
        assertThat(jdbc.queryForList("""
                SELECT j.state FROM transfer_job j WHERE j.correlation IN (
                    SELECT 'replica:' || r.file_id || ':' || r.site_id FROM replica r JOIN file f ON f.id = r.file_id
                     WHERE f.name = ANY (?)) ORDER BY j.id DESC LIMIT 2""", String.class,
                (Object) new String[] {files.get(0), files.get(1)})).containsExactly("done", "done");
        await("complete again", Duration.ofSeconds(20), () -> complete(ds, 1));
    }
}
