package dev.stagehand;

import static dev.stagehand.ItWait.await;
import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.archive.ArchiveBuffer;
import dev.stagehand.archive.ArchiveBuffer.ArchiveFileStatus;
import dev.stagehand.archive.NewArchiveFile;
import dev.stagehand.replication.ReplicaHolds;
import dev.stagehand.replication.ReplicationEngine;
import dev.stagehand.replication.ReplicationRules;
import dev.stagehand.replication.ReplicationRules.Completeness;
import dev.stagehand.replication.ReplicationRules.NewRule;
import dev.stagehand.replication.ReplicationSchedules;
import dev.stagehand.replication.ReplicationSchedules.Run;
import dev.stagehand.replication.Sites;
import dev.stagehand.transfer.GridFtpScratch;
import dev.stagehand.transfer.GridFtpServer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
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
 * Issue 7 end to end, in the service as configured (no hand-built parts): a dataset registered into the
 * archive buffer is flushed to the simulated library (scaled clock) co-located and in write order; a cron
 * rule replicates it to a loopback GridFTP "remote site"; completeness reaches 100 % verified with the very
 * bytes at the remote; the buffer copies are held until their replicas are done, then evicted; a replica
 * declared lost after eviction comes back from tape through a recall.
 */
@DirtiesContext // its own context (archive and tape settings): closed afterwards, so the suite stays within the database's connections
@SpringBootTest(properties = {"stagehand.tape.clock=scaled", "stagehand.tape.scale=1000", "stagehand.tape.roles.write-drives=1",
        "stagehand.recall.poll-interval=200ms", "stagehand.replication.pass-interval=200ms",
        "stagehand.replication.schedule.settle-poll=100ms", "stagehand.transfer.queue.poll-interval=100ms",
        "stagehand.transfer.mover.backoff=100ms", "stagehand.cache.housekeeping-interval=2s",
        // a small buffer (20 MB, high-water 18 MB) trimmed to almost nothing once files may go; small volumes
        "stagehand.archive.buffer-capacity=20000000B", "stagehand.archive.high-water=0.9", "stagehand.archive.low-water=0.01",
        "stagehand.archive.volume-capacity=4000000B", "stagehand.archive.evict-interval=500ms",
        "stagehand.archive.flush.poll-interval=200ms", "stagehand.archive.flush.min-bytes=1B", "stagehand.archive.flush.max-age=0s",
        "stagehand.archive.flush.retry-backoff=1s", "stagehand.archive.flush.idle-dismount=0s"})
class ArchiveReplicationEndToEndIT {

    static final long MB = 1_000_000;
    static final int FILES = 8; // 8 MB on 4 MB volumes: two volumes at best
    static final String TAG = UUID.randomUUID().toString().substring(0, 8);
    static GridFtpScratch scratch;
    static Path root;
    static GridFtpServer server;

    @DynamicPropertySource
    static void paths(DynamicPropertyRegistry r) throws Exception {
        scratch = GridFtpScratch.create("stagehand-e2e-it");
        root = scratch.root;
        Files.createDirectories(root.resolve("landing"));
        r.add("stagehand.tape.sim.root", () -> root.resolve("tape").toString());
        r.add("stagehand.tape.library", () -> "e2e-" + TAG); // its volumes are this library's alone
        r.add("stagehand.cache.directories[0].path", () -> root.resolve("cache").toString());
        r.add("stagehand.cache.directories[0].capacity", () -> "1GB");
        r.add("stagehand.cache.directories[0].create-missing", () -> "true");
        r.add("stagehand.archive.landing", () -> root.resolve("landing").toString());
        r.add("stagehand.archive.pool.prefix", () -> "E" + TAG.substring(0, 4).toUpperCase());
        r.add("stagehand.archive.pool.count", () -> "4");
        r.add("stagehand.archive.instance-id", () -> "e2e-" + TAG);
        server = scratch.anonymous("server");
    }

    @AfterAll
    static void stop() throws Exception {
        if (scratch != null) scratch.close();
    }

    @Autowired JdbcTemplate jdbc;
    @Autowired ArchiveBuffer buffer;
    @Autowired Sites sites;
    @Autowired ReplicationRules rules;
    @Autowired ReplicationSchedules schedules;
    @Autowired ReplicationEngine engine;
    @Autowired ReplicaHolds holds;

    @BeforeEach
    void setUp() {
        engine.takeLead(); // another cached context's engine may hold the pass lease
        // work other classes left open must not compete with this test
        ItDb.cancelOpenRequests(jdbc);
        ItDb.retireArchiveBuffer(jdbc);
    }

    /** Random bytes written into the landing area, and a reference copy outside it (the buffer's copy goes). */
    Path land(Path landing, Path reference, String rel, long size) throws IOException {
        byte[] b = new byte[(int) size];
        new Random(rel.hashCode()).nextBytes(b);
        Files.createDirectories(landing.resolve(rel).getParent());
        Files.createDirectories(reference.resolve(rel).getParent());
        Files.write(reference.resolve(rel), b);
        return Files.write(landing.resolve(rel), b);
    }

    record Seg(long fileId, String volume, long offset) {}

    List<Seg> segments(List<Long> ids) {
        return jdbc.query("""
                SELECT c.file_id, v.label, s.offset_bytes FROM archive_copy c
                  JOIN segment s ON s.file_id = c.file_id AND s.volume_id = c.volume_id JOIN volume v ON v.id = s.volume_id
                 WHERE c.file_id = ANY(?) AND c.state = 'done' ORDER BY c.seq""",
                (rs, i) -> new Seg(rs.getLong(1), rs.getString(2), rs.getLong(3)), (Object) ids.toArray(Long[]::new));
    }

    String state(long id) {
        return buffer.file(id).orElseThrow().state();
    }

    @Test
    void aRegisteredDatasetReachesTapeAndTheRemoteSiteAndALostReplicaComesBackFromTape() throws Exception {
        String ds = "phenix-run-" + TAG, site = "REMOTE-" + TAG;
        Path landing = root.resolve("landing"), reference = root.resolve("reference"), remote = root.resolve("remote-" + TAG);
        GridFtpServer.openUp(remote);
        sites.put(site, Map.of("tier", "1"), List.of(server.url(remote)));
        jdbc.update("INSERT INTO dataset (name, experiment) VALUES (?, 'phenix')", ds);
        // the rule exists before the data: it holds every file from the start; paused, its cron cannot fire yet
        long rule = rules.create(new NewRule(ds, 1, site, null, null, "0/2 * * * * ?", "it")).id();
        schedules.pause(rule);
        try {
            // 1. register the dataset: files written into the landing area, registered in one call
            List<NewArchiveFile> entries = new ArrayList<>();
            for (int i = 0; i < FILES; i++) {
                Path p = land(landing, reference, "phenix/" + ds + "/f" + i, MB);
                entries.add(new NewArchiveFile(p.toString(), MB, null, ds, "phenix", null, null));
            }
            List<ArchiveFileStatus> registered = buffer.register(entries);
            List<Long> ids = registered.stream().map(ArchiveFileStatus::fileId).toList();
            List<String> names = registered.stream().map(ArchiveFileStatus::name).toList();
            assertThat(registered).allSatisfy(s -> assertThat(s.state()).isEqualTo("queued"));

            // 2. flushed to tape by the service's flusher on its write drive
            await("archived", Duration.ofSeconds(120), () -> ids.stream().allMatch(id -> Set.of("archived", "evictable", "evicted")
                    .contains(state(id))));
            // co-located: 8 MB on 4 MB volumes is two volumes, the first filled before the second, offsets growing
            List<Seg> segs = segments(ids);
            assertThat(segs).extracting(Seg::fileId).isEqualTo(ids);
            assertThat(segs.stream().map(Seg::volume).distinct().toList()).hasSize(2);
            for (int i = 1; i < segs.size(); i++) {
                Seg p = segs.get(i - 1), s = segs.get(i);
                if (p.volume().equals(s.volume())) assertThat(s.offset()).isGreaterThan(p.offset());
                else assertThat(segs.subList(i, segs.size())).noneMatch(x -> x.volume().equals(p.volume()));
            }
            // the family's volumes, in the order opened, hold all its files, four 1 MB files each: a list
            // claimed while another is still being written never overfills the volume
            assertThat(buffer.volumes(ds)).extracting(ArchiveBuffer.FamilyVolume::volume)
                    .containsExactlyElementsOf(segs.stream().map(Seg::volume).distinct().toList());
            assertThat(buffer.volumes(ds)).extracting(ArchiveBuffer.FamilyVolume::files).containsExactly(4, 4);

            // 3. archived, but the rule (its cron has not fired) holds every file: none evictable, none evicted
            Thread.sleep(1500); // three eviction rounds
            assertThat(ids).allSatisfy(id -> {
                assertThat(state(id)).isEqualTo("archived");
                assertThat(buffer.locate(id)).isPresent();
            });
            assertThat(holds.evictable(ids)).isEmpty();
            assertThat(rules.replicas(ds, site, null, 0, 100)).isEmpty();

            // 4. the cron schedule replicates it (no manual trigger): from the buffer, verified at the remote
            schedules.resume(rule);
            await("replicated and verified", Duration.ofSeconds(120), () -> {
                List<Completeness> c = rules.completeness(ds);
                return c.size() == 1 && c.getFirst().state().equals("OK") && c.getFirst().filesVerified() == FILES
                        && c.getFirst().filesTotal() == FILES;
            });
            Completeness c = rules.completeness(ds).getFirst();
            assertThat(c.site()).isEqualTo(site);
            assertThat(c.percentDone()).isEqualTo(100.0);
            // the cron run that did it (it settles, and is recorded, a moment after its files are verified)
            await("the scheduled run recorded", Duration.ofSeconds(30),
                    () -> schedules.runs(rule, 20).stream().anyMatch(r -> r.finishedAt() != null && r.filesAdded() != null && r.filesAdded() > 0));
            List<Run> runs = schedules.runs(rule, 20);
            assertThat(runs).anySatisfy(r -> {
                assertThat(r.scheduledAt()).isNotNull();
                assertThat(r.filesAdded()).isEqualTo(FILES);
            });
            assertThat(rules.replicas(ds, site, null, 0, 100)).hasSize(FILES).allSatisfy(r -> {
                assertThat(r.state()).isEqualTo("verified");
                assertThat(r.source()).isEqualTo("local"); // sent from the archive buffer, no recall
            });
            for (int i = 0; i < FILES; i++) {
                Path copy = remote.resolve(names.get(i).substring(1));
                assertThat(Files.mismatch(copy, reference.resolve("phenix/" + ds + "/f" + i))).as(names.get(i)).isEqualTo(-1L);
            }

            // 5. replicated: now the holds let go and the eviction round deletes the buffer copies
            await("evicted", Duration.ofSeconds(30), () -> ids.stream().allMatch(id -> state(id).equals("evicted")));
            assertThat(holds.evictable(ids)).containsExactlyInAnyOrderElementsOf(ids);
            assertThat(ids).allSatisfy(id -> assertThat(buffer.locate(id)).isEmpty());
            assertThat(Files.exists(landing.resolve("phenix/" + ds + "/f0"))).isFalse();

            // 6. a replica is lost at the remote and declared: only tape has it now, so it comes back by a recall
            int lostIndex = 5;
            String lost = names.get(lostIndex);
            long lostId = ids.get(lostIndex);
            Path lostCopy = remote.resolve(lost.substring(1));
            Files.delete(lostCopy);
            assertThat(rules.declare(site, List.of(lost), "lost").recreating()).isEqualTo(1);
            await("lost replica back", Duration.ofSeconds(180), () -> Files.exists(lostCopy)
                    && rules.replicas(ds, site, "verified", 0, 100).size() == FILES);
            assertThat(Files.mismatch(lostCopy, reference.resolve("phenix/" + ds + "/f" + lostIndex))).isEqualTo(-1L);
            assertThat(rules.replicas(ds, site, null, 0, 100)).filteredOn(r -> r.file().equals(lost)).singleElement()
                    .satisfies(r -> assertThat(r.source()).isEqualTo("tape"));
            // the recall read it from the volume the flusher wrote it to
            // (the request's own bookkeeping may still be settling: on_disk, transferring or done)
            assertThat(jdbc.queryForObject("""
                    SELECT count(*) FROM stage_request_file WHERE file_id = ? AND state IN ('on_disk', 'transferring', 'done')""",
                    Long.class, lostId)).isEqualTo(1L);
            String volume = segs.get(lostIndex).volume();
            assertThat(jdbc.queryForList("SELECT volume FROM recall_file WHERE file_id = ?", String.class, lostId))
                    .allSatisfy(v -> assertThat(v).isEqualTo(volume));
            await("completeness OK again", Duration.ofSeconds(10), () -> {
                Completeness x = rules.completeness(ds).getFirst();
                return x.state().equals("OK") && x.filesVerified() == FILES;
            });
            // the others were not sent again
            assertThat(rules.replicas(ds, site, null, 0, 100)).filteredOn(r -> !r.file().equals(lost))
                    .allSatisfy(r -> assertThat(r.source()).isEqualTo("local"));
        } finally {
            rules.delete(rule); // removes the Quartz job too
        }
    }
}
