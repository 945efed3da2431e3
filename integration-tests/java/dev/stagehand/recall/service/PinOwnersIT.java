package dev.stagehand.recall.service;

import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.ItDb;
import dev.stagehand.cache.DiskCache;
import dev.stagehand.cache.Reservation;
import dev.stagehand.platform.VirtualClock;
import dev.stagehand.tape.SimulatedContent;
import dev.stagehand.tape.SimulatedLibrary;
import dev.stagehand.tape.TapeModel;
import java.nio.file.Path;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * A copy is pinned for the requests that still wait for it, not for every request that ever held its file: a
 * popular file asked for again was pinned anew for each ended request and each delivered file of its past, each
 * for that request's whole disk lifetime, and nothing released those pins. On a database of its own: requests
 * other tests leave open would be taken in by this scheduler.
 */
@SpringBootTest(properties = {"stagehand.recall.enabled=false", "stagehand.db.local-database=recall_pins_it"})
class PinOwnersIT {

    @Autowired JdbcTemplate jdbc;
    @Autowired JdbcClient db;
    @Autowired TransactionTemplate tx;
    @TempDir Path tmp;

    @Test
    void aFileAskedForAgainIsPinnedForTheNewRequestNotForThoseThatEndedOrWereServed() throws Exception {
        jdbc.update("DELETE FROM stage_request"); // the database is this class's own: what earlier runs left queued
        String tag = UUID.randomUUID().toString().substring(0, 8);
        long volume = jdbc.queryForObject("INSERT INTO volume (label) VALUES (?) RETURNING id", Long.class, "P" + tag);
        long size = 1_000_000;
        long file = ItDb.simulatedFile(jdbc, "/it/" + tag + "/p", size);
        long other = ItDb.simulatedFile(jdbc, "/it/" + tag + "/q", size);
        for (long f : new long[] {file, other}) {
            jdbc.update("INSERT INTO segment (file_id, volume_id, offset_bytes) VALUES (?, ?, ?)", f, volume, f == file ? 0 : size);
        }
        VirtualClock clock = new VirtualClock();
        SimulatedLibrary lib = SimulatedLibrary.builder(clock).name("p").drives(1).accessors(1).root(tmp.resolve("lib")).build();
        DiskCache cache = TestCaches.cache(db, tx, tmp.resolve("cache"), 10 * size, "p-" + tag, clock);
        Reservation r = cache.reserve(file, size, "recall earlier").reservation();
        long adler = SimulatedContent.writeTo("/it/" + tag + "/p", size, r.path());
        assertThat(cache.commit(r, String.format("%08x", adler)).verified()).isTrue();

        // its past: a request that ended with the file on disk (its pin expired), one whose transfer delivered it
        // (its pin released then), and an open one with a destination that has delivered it and still sends another
        UUID ended = request("done", null), delivered = request("done", "gsiftp://remote.example/in");
        UUID sending = request("active", "gsiftp://remote.example/in");
        fileOf(ended, file, "on_disk", 1);
        fileOf(delivered, file, "done", 1);
        fileOf(sending, file, "done", 1);
        fileOf(sending, other, "transferring", 2);
        UUID fresh = request("submitted", null);
        fileOf(fresh, file, "queued", 1);

        RecallService s = new RecallService(jdbc, lib, clock, TapeModel.lto9(), RecallChangesIT.props("p-" + tag), cache);
        s.start();
        s.poll();
        assertThat(jdbc.queryForObject("SELECT state FROM stage_request_file WHERE request_id = ?", String.class, fresh))
                .as("answered from the cache").isEqualTo("on_disk");
        assertThat(cache.pins(file).keySet()).as("the requests the copy is pinned for").containsExactly(fresh.toString());
        lib.close();
    }

    private UUID request(String state, String destination) {
        UUID id = UUID.randomUUID();
        jdbc.update("INSERT INTO stage_request (id, owner, experiment, file_count, state, destination, disk_lifetime_s, completed_at) "
                + "VALUES (?, 'it', 'atlas', 2, ?, ?, ?, CASE WHEN ? = 'done' THEN now() - interval '1 day' END)",
                id, state, destination, Duration.ofDays(7).toSeconds(), state);
        return id;
    }

    private void fileOf(UUID request, long file, String state, int ordinal) {
        jdbc.update("INSERT INTO stage_request_file (request_id, file_id, state, ordinal) VALUES (?, ?, ?, ?)", request, file, state, ordinal);
    }
}
