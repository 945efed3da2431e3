package dev.stagehand.recall.service;

import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.ItDb;
import dev.stagehand.platform.VirtualClock;
import dev.stagehand.recall.RecallProperties;
import dev.stagehand.tape.DriveStatus;
import dev.stagehand.tape.FileWrite;
import dev.stagehand.tape.LibraryLayout;
import dev.stagehand.tape.ReadBatch;
import dev.stagehand.tape.SegmentRead;
import dev.stagehand.tape.SimulatedLibrary;
import dev.stagehand.tape.TapeLibrary;
import dev.stagehand.tape.TapeModel;
import dev.stagehand.tape.WriteBatch;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.transaction.support.TransactionTemplate;
import dev.stagehand.cache.DiskCache;

/**
 * Two scheduler instances share one PostgreSQL queue (each with its own drives): every file is read
 * exactly once, overlapping requests all complete, staged files carry verified checksums, ETAs are stored.
 */
@SpringBootTest(properties = {"stagehand.recall.enabled=false"})
class TwoSchedulersIT {

    @Autowired
    JdbcTemplate jdbc;

    @TempDir
    Path tmp;

    /** Records every segment a library was asked to read. */
    record Recording(TapeLibrary lib, List<SegmentRead> reads) implements TapeLibrary {
        public LibraryLayout layout() { return lib.layout(); }
        public List<DriveStatus> drives() { return lib.drives(); }
        public CompletableFuture<Void> mount(String drive, String volume) { return lib.mount(drive, volume); }
        public ReadBatch read(String drive, List<SegmentRead> segments) { reads.addAll(segments); return lib.read(drive, segments); }
        public WriteBatch write(String drive, List<FileWrite> files) { return lib.write(drive, files); }
        public CompletableFuture<Void> dismount(String drive) { return lib.dismount(drive); }
        public void setEnabled(String drive, boolean enabled) { lib.setEnabled(drive, enabled); }
        public CompletableFuture<Void> recover(String drive) { return lib.recover(drive); }
    }

    @Autowired
    JdbcClient db;

    @Autowired
    TransactionTemplate tx;

    static RecallProperties props(String instance, long cacheBatchBytes) {
        return new RecallProperties(true, "tape-aware", cacheBatchBytes, Duration.ZERO, Duration.ofMinutes(10), instance,
                500_000_000_000L, 10_000, Duration.ofMinutes(5), Duration.ofHours(4), Duration.ofMinutes(5),
                2_000_000_000_000L, 20_000, 4, Map.of(), Map.of());
    }

    @Test
    void twoInstancesNeverReadTheSameFileTwice() throws Exception {
        readEachFileOnce(0);
    }

    /** Each instance takes the requests in a few files a round (sliced intake): still every file is read once. */
    @Test
    void twoInstancesTakingRequestsInSlicesNeverReadTheSameFileTwice() throws Exception {
        readEachFileOnce(7);
    }

    /** {@code slice}: files of a request an intake round takes in at most; 0: the default. */
    private void readEachFileOnce(int slice) throws Exception {
        String tag = UUID.randomUUID().toString().substring(0, 8);
        List<Long> files = new ArrayList<>();
        for (int v = 0; v < 6; v++) {
            long vol = jdbc.queryForObject("INSERT INTO volume (label) VALUES (?) RETURNING id", Long.class, "T" + tag + v);
            for (int k = 0; k < 20; k++) {
                String name = "/it/" + tag + "/v" + v + "/f" + k;
                long size = 1_000_000 + k * 1000L;
                long id = ItDb.simulatedFile(jdbc, name, size);
                jdbc.update("INSERT INTO segment (file_id, volume_id, offset_bytes) VALUES (?, ?, ?)", id, vol, (k * 37L % 20) * 50_000_000_000L);
                files.add(id);
            }
        }
        // three overlapping requests: each file is wanted by one to three of them
        List<UUID> requests = new ArrayList<>();
        for (int r = 0; r < 3; r++) {
            UUID id = UUID.randomUUID();
            List<Long> mine = new ArrayList<>(files.subList(r * 30, Math.min(files.size(), r * 30 + 70)));
            jdbc.update("INSERT INTO stage_request (id, owner, experiment, file_count) VALUES (?, 'it', 'atlas', ?)", id, mine.size());
            for (int i = 0; i < mine.size(); i++) {
                jdbc.update("INSERT INTO stage_request_file (request_id, file_id, ordinal) VALUES (?, ?, ?)", id, mine.get(i), i + 1);
            }
            requests.add(id);
        }
        List<Long> wanted = jdbc.queryForList("SELECT DISTINCT file_id FROM stage_request_file WHERE request_id = ANY(?)",
                Long.class, (Object) requests.toArray(UUID[]::new));

        VirtualClock clock = new VirtualClock();
        List<SegmentRead> readsA = Collections.synchronizedList(new ArrayList<>()), readsB = Collections.synchronizedList(new ArrayList<>());
        TapeLibrary libA = new Recording(SimulatedLibrary.builder(clock).name("a").drives(2).accessors(1).root(tmp.resolve("lib-a")).build(), readsA);
        TapeLibrary libB = new Recording(SimulatedLibrary.builder(clock).name("b").drives(2).accessors(1).root(tmp.resolve("lib-b")).build(), readsB);
        DiskCache cacheA = TestCaches.cache(db, tx, tmp.resolve("cache-a"), 10_000_000_000L, "a-" + tag, clock);
        DiskCache cacheB = TestCaches.cache(db, tx, tmp.resolve("cache-b"), 10_000_000_000L, "b-" + tag, clock);
        RecallService a = new RecallService(jdbc, libA, clock, TapeModel.lto9(), props("a-" + tag, 20_000_000L), cacheA);
        RecallService b = new RecallService(jdbc, libB, clock, TapeModel.lto9(), props("b-" + tag, 20_000_000L), cacheB);
        a.start();
        b.start();
        if (slice > 0) {
            a.intakeSlice(slice);
            b.intakeSlice(slice);
        }
        boolean etaSeen = false;
        boolean sliced = false;
        for (int round = 0; round < 50; round++) {
            a.poll();
            b.poll();
            sliced |= a.takingInSlices() && b.takingInSlices();
            clock.advance(Duration.ofSeconds(30));
            etaSeen |= jdbc.queryForObject("SELECT count(*) FROM stage_request WHERE id = ANY(?) AND eta_at IS NOT NULL",
                    Integer.class, (Object) requests.toArray(UUID[]::new)) > 0;
            Integer open = jdbc.queryForObject("SELECT count(*) FROM stage_request WHERE id = ANY(?) AND state IN ('submitted', 'active')",
                    Integer.class, (Object) requests.toArray(UUID[]::new));
            if (open == 0) break;
        }
        a.stop();
        b.stop();

        List<Long> all = new ArrayList<>();
        readsA.stream().map(SegmentRead::fileId).filter(wanted::contains).forEach(all::add);
        readsB.stream().map(SegmentRead::fileId).filter(wanted::contains).forEach(all::add);
        Map<Long, Long> perFile = all.stream().collect(Collectors.groupingBy(x -> x, Collectors.counting()));
        assertThat(perFile.keySet()).containsExactlyInAnyOrderElementsOf(wanted);
        assertThat(perFile.values()).containsOnly(1L);
        assertThat(readsA.stream().filter(s -> wanted.contains(s.fileId()))).isNotEmpty();
        assertThat(readsB.stream().filter(s -> wanted.contains(s.fileId()))).isNotEmpty();

        assertThat(jdbc.queryForList("SELECT DISTINCT state FROM stage_request WHERE id = ANY(?)", String.class,
                (Object) requests.toArray(UUID[]::new))).containsExactly("done");
        assertThat(jdbc.queryForList("SELECT DISTINCT state FROM stage_request_file WHERE request_id = ANY(?)", String.class,
                (Object) requests.toArray(UUID[]::new))).containsExactly("on_disk");
        assertThat(etaSeen).isTrue();
        assertThat(sliced).as("both instances took requests in over several rounds").isEqualTo(slice > 0);
        // the staged bytes are real, verified cache copies, and match the catalog checksum
        List<Map<String, Object>> staged = jdbc.queryForList(
                "SELECT cf.path, cf.adler32, f.adler32 AS expected, f.size_bytes FROM cache_file cf JOIN file f ON f.id = cf.file_id "
                        + "WHERE cf.file_id = ANY(?) AND cf.state = 'verified'",
                (Object) wanted.toArray(Long[]::new));
        assertThat(staged).hasSize(wanted.size());
        for (Map<String, Object> row : staged) {
            assertThat(row.get("adler32")).isEqualTo(row.get("expected"));
            assertThat(Files.size(Path.of((String) row.get("path")))).isEqualTo(((Number) row.get("size_bytes")).longValue());
        }
    }
}
