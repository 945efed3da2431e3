package dev.stagehand.recall.service;

import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.ItDb;
import dev.stagehand.cache.DiskCache;
import dev.stagehand.platform.VirtualClock;
import dev.stagehand.tape.SegmentRead;
import dev.stagehand.tape.SimulatedLibrary;
import dev.stagehand.tape.TapeLibrary;
import dev.stagehand.tape.TapeModel;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * A large request is taken in a slice a round (its first volumes are planned before the whole of it was read from
 * the database: 9.5-18 s for 10^6 files in one round). On a database of its own: requests other tests leave open
 * would be taken in by this scheduler and mounted.
 */
@SpringBootTest(properties = {"stagehand.recall.enabled=false", "stagehand.db.local-database=sliced_intake_it"})
class SlicedIntakeIT {

    @Autowired
    JdbcTemplate jdbc;

    @Autowired
    JdbcClient db;

    @Autowired
    TransactionTemplate tx;

    @Autowired
    dev.stagehand.recall.StageRequests requests;

    @TempDir
    Path tmp;

    /**
     * Ten files, four a round: the rounds take 4, 8 and then all 10 in (each file's {@code recall_file} row only
     * once its slice is taken); the request stays open meanwhile. A restart after the first slice (a new engine,
     * the same instance) takes it in again from the rows, and every file is read once.
     */
    @Test
    void aRoundTakesAtMostASliceOfARequestAndTheRestInTheRoundsAfterEvenAcrossARestart() throws Exception {
        jdbc.update("DELETE FROM stage_request"); // the database is this class's own: what earlier runs left queued
        String tag = UUID.randomUUID().toString().substring(0, 8);
        long size = 1_000_000;
        List<Long> files = new ArrayList<>();
        for (int v = 0; v < 2; v++) {
            long volume = jdbc.queryForObject("INSERT INTO volume (label) VALUES (?) RETURNING id", Long.class, "S" + tag + v);
            for (int k = 0; k < 5; k++) {
                long id = ItDb.simulatedFile(jdbc, "/it/" + tag + "/v" + v + "/s" + k, size);
                jdbc.update("INSERT INTO segment (file_id, volume_id, offset_bytes) VALUES (?, ?, ?)", id, volume, k * size);
                files.add(id);
            }
        }
        UUID request = UUID.randomUUID();
        jdbc.update("INSERT INTO stage_request (id, owner, experiment, file_count) VALUES (?, 'it', 'atlas', ?)", request, files.size());
        for (int i = 0; i < files.size(); i++) { // named in another order than their ids: slices go by id
            jdbc.update("INSERT INTO stage_request_file (request_id, file_id, ordinal) VALUES (?, ?, ?)",
                    request, files.get(files.size() - 1 - i), i + 1);
        }
        Long[] ids = files.toArray(Long[]::new);
        VirtualClock clock = new VirtualClock();
        DiskCache cache = TestCaches.cache(db, tx, tmp.resolve("cache"), 10_000_000_000L, "s-" + tag, clock);

        // the first engine's drives are down: it takes the request in but reads nothing before its "crash"
        SimulatedLibrary down = SimulatedLibrary.builder(clock).name("down").drives(1).accessors(1).root(tmp.resolve("down")).build();
        for (var d : down.drives()) down.setEnabled(d.drive(), false);
        RecallService s = new RecallService(jdbc, down, clock, TapeModel.lto9(), RecallChangesIT.props("s-" + tag), cache);
        s.start();
        s.intakeSlice(4);
        int[] taken = new int[3];
        for (int round = 0; round < 3; round++) {
            s.poll();
            taken[round] = s.engine().model().request(request.toString()).files().size();
            assertThat(jdbc.queryForObject("SELECT count(*) FROM recall_file WHERE file_id = ANY(?)", Integer.class, (Object) ids))
                    .as("recall_file rows of the slices taken so far, round " + round).isEqualTo(taken[round]);
            assertThat(s.engine().openRequestIds()).as("open while its slices come").containsExactly(request.toString());
        }
        assertThat(taken).containsExactly(4, 8, 10);
        assertThat(s.engine().model().request(request.toString()).files()).extracting(f -> f.id())
                .as("the slices go by file id").containsExactlyInAnyOrderElementsOf(files);
        assertThat(s.takingInSlices()).isFalse();
        assertThat(s.engine().takesMore(request.toString())).isFalse();

        // a crash after the first slice of a new engine: the rows are the queue, nothing is lost or read twice
        s.stop();
        List<SegmentRead> reads = Collections.synchronizedList(new ArrayList<>());
        SimulatedLibrary up = SimulatedLibrary.builder(clock).name("up").drives(2).accessors(1).root(tmp.resolve("up")).build();
        TapeLibrary lib = new TwoSchedulersIT.Recording(up, reads);
        RecallService again = new RecallService(jdbc, lib, clock, TapeModel.lto9(), RecallChangesIT.props("s-" + tag), cache);
        again.start();
        again.intakeSlice(4);
        again.poll();
        assertThat(again.engine().model().request(request.toString()).files()).hasSize(4);
        assertThat(again.takingInSlices()).isTrue();
        for (int round = 0; round < 60; round++) {
            clock.advance(Duration.ofSeconds(30));
            again.poll();
            if ("done".equals(jdbc.queryForObject("SELECT state FROM stage_request WHERE id = ?", String.class, request))) break;
        }
        again.stop();
        Map<Long, Long> perFile = reads.stream().collect(Collectors.groupingBy(SegmentRead::fileId, Collectors.counting()));
        assertThat(perFile.keySet()).containsExactlyInAnyOrderElementsOf(files);
        assertThat(perFile.values()).as("each file read once").containsOnly(1L);
        assertThat(jdbc.queryForObject("SELECT state FROM stage_request WHERE id = ?", String.class, request)).isEqualTo("done");
        assertThat(jdbc.queryForList("SELECT DISTINCT state FROM stage_request_file WHERE request_id = ?", String.class, request))
                .containsExactly("on_disk");
        up.close();
        down.close();
    }

    /**
     * While a request is taken in slices its ETA is not known (eta_at NULL, the reason in eta_unknown): one from the
     * slices so far covered only their volumes and read too early. Once it is whole it has one, the reason gone.
     */
    @Test
    void aRequestHasNoEtaButAReasonWhileTakenInSlicesAndAnEtaOnceWhole() throws Exception {
        jdbc.update("DELETE FROM stage_request");
        String tag = UUID.randomUUID().toString().substring(0, 8);
        long size = 1_000_000;
        UUID request = UUID.randomUUID();
        jdbc.update("INSERT INTO stage_request (id, owner, experiment, file_count) VALUES (?, 'it', 'atlas', 6)", request);
        for (int v = 0; v < 2; v++) {
            long volume = jdbc.queryForObject("INSERT INTO volume (label) VALUES (?) RETURNING id", Long.class, "E" + tag + v);
            for (int k = 0; k < 3; k++) {
                long id = ItDb.simulatedFile(jdbc, "/it/" + tag + "/e" + v + "/" + k, size);
                jdbc.update("INSERT INTO segment (file_id, volume_id, offset_bytes) VALUES (?, ?, ?)", id, volume, k * size);
                jdbc.update("INSERT INTO stage_request_file (request_id, file_id, ordinal) VALUES (?, ?, ?)", request, id, v * 3 + k + 1);
            }
        }
        VirtualClock clock = new VirtualClock();
        SimulatedLibrary lib = SimulatedLibrary.builder(clock).name("e").drives(1).accessors(1).root(tmp.resolve("lib")).build();
        DiskCache cache = TestCaches.cache(db, tx, tmp.resolve("cache"), 10_000_000_000L, "e-" + tag, clock);
        RecallService s = new RecallService(jdbc, lib, clock, TapeModel.lto9(), RecallChangesIT.props("e-" + tag), cache);
        s.start();
        s.intakeSlice(2);
        for (int round = 0; round < 3; round++) { // 2, 4, 6 files (the round after finds no more: the last)
            s.poll();
            clock.advance(Duration.ZERO); // the round's scheduling pass (it estimates)
            assertThat(s.takingInSlices()).isTrue();
            Map<String, Object> row = jdbc.queryForMap("SELECT eta_at, eta_unknown FROM stage_request WHERE id = ?", request);
            assertThat(row.get("eta_at")).as("no ETA from a part of it, round " + round).isNull();
            assertThat((String) row.get("eta_unknown")).as("why not").contains("still being taken in");
            var shown = requests.get(request, 0, 0).orElseThrow().request(); // what GET /api/v1/requests/{id} shows
            assertThat(shown.etaAt()).isNull();
            assertThat(shown.etaUnknown()).contains("still being taken in");
        }
        s.poll();
        clock.advance(Duration.ZERO);
        assertThat(s.takingInSlices()).isFalse();
        Map<String, Object> row = jdbc.queryForMap("SELECT eta_at, eta_unknown FROM stage_request WHERE id = ?", request);
        assertThat(row.get("eta_at")).as("estimated once whole, not a refresh interval later").isNotNull();
        assertThat(row.get("eta_unknown")).isNull();
        var shown = requests.get(request, 0, 0).orElseThrow().request();
        assertThat(shown.etaAt()).as("the API shows the scheduler's ETA").isEqualTo(((java.sql.Timestamp) row.get("eta_at")).toInstant());
        assertThat(shown.etaUnknown()).isNull();
        s.stop();
        lib.close();
    }

    /** A request cancelled while it is taken in slices: the engine forgets it and takes no more of it. */
    @Test
    void aRequestCancelledWhileTakenInSlicesTakesNoMoreSlices() throws Exception {
        jdbc.update("DELETE FROM stage_request");
        String tag = UUID.randomUUID().toString().substring(0, 8);
        long size = 1_000_000;
        long volume = jdbc.queryForObject("INSERT INTO volume (label) VALUES (?) RETURNING id", Long.class, "C" + tag);
        UUID request = UUID.randomUUID();
        jdbc.update("INSERT INTO stage_request (id, owner, experiment, file_count) VALUES (?, 'it', 'atlas', 6)", request);
        for (int k = 0; k < 6; k++) {
            long id = ItDb.simulatedFile(jdbc, "/it/" + tag + "/c" + k, size);
            jdbc.update("INSERT INTO segment (file_id, volume_id, offset_bytes) VALUES (?, ?, ?)", id, volume, k * size);
            jdbc.update("INSERT INTO stage_request_file (request_id, file_id, ordinal) VALUES (?, ?, ?)", request, id, k + 1);
        }
        VirtualClock clock = new VirtualClock();
        SimulatedLibrary lib = SimulatedLibrary.builder(clock).name("c").drives(1).accessors(1).root(tmp.resolve("lib")).build();
        for (var d : lib.drives()) lib.setEnabled(d.drive(), false);
        DiskCache cache = TestCaches.cache(db, tx, tmp.resolve("cache"), 10_000_000_000L, "c-" + tag, clock);
        RecallService s = new RecallService(jdbc, lib, clock, TapeModel.lto9(), RecallChangesIT.props("c-" + tag), cache);
        s.start();
        s.intakeSlice(2);
        s.poll();
        assertThat(s.takingInSlices()).isTrue();
        jdbc.update("UPDATE stage_request SET state = 'cancelled' WHERE id = ?", request);
        s.poll(); // its next slice is read before the round sees the cancel; the round after takes no more
        s.poll();
        assertThat(s.engine().model().request(request.toString())).isNull();
        assertThat(s.takingInSlices()).isFalse();
        s.stop();
        lib.close();
    }
}
