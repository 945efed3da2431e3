package dev.stagehand.recall.service;

import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.ItDb;
import dev.stagehand.cache.DiskCache;
import dev.stagehand.cache.ReserveResult;
import dev.stagehand.cache.Reservation;
import dev.stagehand.platform.VirtualClock;
import dev.stagehand.recall.scheduler.FileWork;
import dev.stagehand.tape.SimulatedContent;
import dev.stagehand.tape.SimulatedLibrary;
import dev.stagehand.tape.TapeModel;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The once-a-minute sweep walks the queue a slice a round (the whole queue at once held the intake thread, and
 * with it the hand-off of staged files, for 10-37 s at 10^6 queued files). On a database of its own: requests
 * other tests leave open would be taken in by this scheduler and mounted.
 */
@SpringBootTest(properties = {"stagehand.recall.enabled=false", "stagehand.db.local-database=recall_sweep_it"})
class RecallSweepIT {

    @Autowired
    JdbcTemplate jdbc;

    @Autowired
    JdbcClient db;

    @Autowired
    TransactionTemplate tx;

    @TempDir
    Path tmp;

    /** A file another instance staged while this one held it queued is answered from the cache once the walk reaches it. */
    @Test
    void theSweepWalksTheQueueASliceARoundAndFindsAFileStagedByAnotherInstance() throws Exception {
        jdbc.update("DELETE FROM stage_request"); // the database is this class's own: what earlier runs left queued
        String tag = UUID.randomUUID().toString().substring(0, 8);
        long volume = jdbc.queryForObject("INSERT INTO volume (label) VALUES (?) RETURNING id", Long.class, "W" + tag);
        long size = 1_000_000;
        long[] files = new long[3];
        UUID request = UUID.randomUUID();
        jdbc.update("INSERT INTO stage_request (id, owner, experiment, file_count) VALUES (?, 'it', 'atlas', ?)", request, files.length);
        for (int i = 0; i < files.length; i++) {
            files[i] = ItDb.simulatedFile(jdbc, "/it/" + tag + "/w" + i, size);
            jdbc.update("INSERT INTO segment (file_id, volume_id, offset_bytes) VALUES (?, ?, ?)", files[i], volume, i * size);
            jdbc.update("INSERT INTO stage_request_file (request_id, file_id, ordinal) VALUES (?, ?, ?)", request, files[i], i + 1);
        }
        VirtualClock clock = new VirtualClock();
        SimulatedLibrary lib = SimulatedLibrary.builder(clock).name("w").drives(1).accessors(1).root(tmp.resolve("lib")).build();
        // a cache too small for any of the files: nothing is mounted, they stay queued in the engine
        DiskCache cache = TestCaches.cache(db, tx, tmp.resolve("cache"), size / 2, "w-" + tag, clock);
        RecallService s = new RecallService(jdbc, lib, clock, TapeModel.lto9(), RecallChangesIT.props("w-" + tag), cache);
        s.start();
        s.sweepSlice(1);
        s.poll();
        assertThat(s.sweeping()).as("an engine's first round takes in every open request: no walk").isFalse();
        assertThat(s.engine().model().file(files[2]).state()).isEqualTo(FileWork.State.QUEUED);

        // another instance stages the last file
        DiskCache other = TestCaches.cache(db, tx, tmp.resolve("other-cache"), 10_000_000_000L, "w2-" + tag, clock);
        Reservation r = other.reserve(files[2], size, "recall elsewhere").reservation();
        long adler = SimulatedContent.writeTo("/it/" + tag + "/w2", size, r.path());
        assertThat(other.commit(r, String.format("%08x", adler)).verified()).isTrue();

        clock.advance(RecallService.SWEEP);
        int rounds = 0;
        do {
            s.poll();
            rounds++;
            if (rounds < 3) {
                assertThat(jdbc.queryForObject("SELECT state FROM stage_request_file WHERE file_id = ?", String.class, files[2]))
                        .as("not reached yet in round " + rounds).isEqualTo("queued");
            }
        } while (s.sweeping() && rounds < 10);
        assertThat(rounds).as("one file a round, then the short slice that ends the walk").isEqualTo(4);
        assertThat(jdbc.queryForObject("SELECT state FROM stage_request_file WHERE file_id = ?", String.class, files[2])).isEqualTo("on_disk");
        assertThat(jdbc.queryForObject("SELECT state FROM recall_file WHERE file_id = ?", String.class, files[2])).isEqualTo("on_disk");
        assertThat(jdbc.queryForObject("SELECT count(*) FROM stage_request_file WHERE request_id = ? AND state = 'queued'",
                Integer.class, request)).isEqualTo(2);
        assertThat(lib.stats().mounts()).as("nothing mounted").isZero();
        lib.close();
    }

    /**
     * A file answered from the cache was used: once its requests release it, copies nobody asked for since go
     * before it (least recently used first), not the copy that was verified earliest.
     */
    @Test
    void aFileAnsweredFromTheCacheCountsAsUsedForEviction() throws Exception {
        jdbc.update("DELETE FROM stage_request"); // the database is this class's own: what earlier runs left queued
        String tag = UUID.randomUUID().toString().substring(0, 8);
        long volume = jdbc.queryForObject("INSERT INTO volume (label) VALUES (?) RETURNING id", Long.class, "H" + tag);
        long size = 1_000_000;
        long[] files = new long[3];
        for (int i = 0; i < files.length; i++) {
            files[i] = ItDb.simulatedFile(jdbc, "/it/" + tag + "/h" + i, size);
            jdbc.update("INSERT INTO segment (file_id, volume_id, offset_bytes) VALUES (?, ?, ?)", files[i], volume, i * size);
        }
        VirtualClock clock = new VirtualClock();
        SimulatedLibrary lib = SimulatedLibrary.builder(clock).name("h").drives(1).accessors(1).root(tmp.resolve("lib")).build();
        DiskCache cache = TestCaches.cache(db, tx, tmp.resolve("cache"), 2 * size, "h-" + tag, clock);
        for (int i = 0; i < 2; i++) { // h0 then h1 staged: the cache is full
            Reservation r = cache.reserve(files[i], size, "recall earlier").reservation();
            long adler = SimulatedContent.writeTo("/it/" + tag + "/h" + i, size, r.path());
            assertThat(cache.commit(r, String.format("%08x", adler)).verified()).isTrue();
            clock.advance(Duration.ofMinutes(1));
        }
        clock.advance(Duration.ofHours(1));
        UUID request = UUID.randomUUID();
        jdbc.update("INSERT INTO stage_request (id, owner, experiment, file_count) VALUES (?, 'it', 'atlas', 1)", request);
        jdbc.update("INSERT INTO stage_request_file (request_id, file_id, ordinal) VALUES (?, ?, 1)", request, files[0]);
        RecallService s = new RecallService(jdbc, lib, clock, TapeModel.lto9(), RecallChangesIT.props("h-" + tag), cache);
        s.start();
        s.poll();
        assertThat(jdbc.queryForObject("SELECT state FROM stage_request_file WHERE file_id = ?", String.class, files[0])).isEqualTo("on_disk");
        cache.releaseAll(request.toString()); // delivered

        ReserveResult third = cache.reserve(files[2], size, "recall now");
        assertThat(third.reserved()).isTrue();
        assertThat(cache.lookup(List.of(files[0], files[1])).keySet()).as("h1, unused since it was staged, is evicted")
                .containsExactly(files[0]);
        s.stop();
        lib.close();
    }
}
