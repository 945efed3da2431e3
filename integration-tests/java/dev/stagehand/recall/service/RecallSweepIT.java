package dev.stagehand.recall.service;

import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.ItDb;
import dev.stagehand.cache.CacheEntry;
import dev.stagehand.cache.CacheProperties;
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
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.transaction.support.TransactionTemplate;
import org.springframework.util.unit.DataSize;

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

    /**
     * A cached file another instance evicts between the intake's look at the cache and the pin for its request is
     * not answered as on disk: its bytes are gone, and with a destination it would wait for ever for its hand-off.
     */
    @Test
    void aCopyEvictedBetweenTheLookupAndThePinIsNotAnsweredAsOnDisk() throws Exception {
        jdbc.update("DELETE FROM stage_request"); // the database is this class's own: what earlier runs left queued
        String tag = UUID.randomUUID().toString().substring(0, 8);
        long volume = jdbc.queryForObject("INSERT INTO volume (label) VALUES (?) RETURNING id", Long.class, "E" + tag);
        long size = 1_000_000;
        long[] files = new long[3];
        for (int i = 0; i < files.length; i++) {
            files[i] = ItDb.simulatedFile(jdbc, "/it/" + tag + "/e" + i, size);
            jdbc.update("INSERT INTO segment (file_id, volume_id, offset_bytes) VALUES (?, ?, ?)", files[i], volume, i * size);
        }
        VirtualClock clock = new VirtualClock();
        Clock c = new Clock() {
            @Override public ZoneId getZone() { return ZoneOffset.UTC; }
            @Override public Clock withZone(ZoneId zone) { return this; }
            @Override public Instant instant() { return clock.now(); }
        };
        Path dir = tmp.resolve("cache");
        // another instance sharing the directory: it needs room right after this one looked the file up
        DiskCache other = TestCaches.cache(db, tx, dir, 2 * size, "e2-" + tag, clock);
        AtomicBoolean armed = new AtomicBoolean();
        DiskCache cache = new DiskCache(db, tx, new CacheProperties(
                List.of(new CacheProperties.Directory(dir, DataSize.ofBytes(2 * size))), "e-" + tag), c, null) {
            @Override
            public Map<Long, CacheEntry> lookup(Collection<Long> fileIds) {
                Map<Long, CacheEntry> found = super.lookup(fileIds);
                if (found.containsKey(files[0]) && armed.compareAndSet(true, false)) {
                    assertThat(other.reserve(files[2], size, "recall elsewhere").reserved()).isTrue();
                }
                return found;
            }
        };
        cache.start();
        for (int i = 0; i < 2; i++) { // e0 then e1 staged: the cache is full, e0 the least recently used
            Reservation r = cache.reserve(files[i], size, "recall earlier").reservation();
            long adler = SimulatedContent.writeTo("/it/" + tag + "/e" + i, size, r.path());
            assertThat(cache.commit(r, String.format("%08x", adler)).verified()).isTrue();
            clock.advance(Duration.ofMinutes(1));
        }
        UUID request = UUID.randomUUID();
        jdbc.update("INSERT INTO stage_request (id, owner, experiment, file_count) VALUES (?, 'it', 'atlas', 1)", request);
        jdbc.update("INSERT INTO stage_request_file (request_id, file_id, ordinal) VALUES (?, ?, 1)", request, files[0]);
        SimulatedLibrary lib = SimulatedLibrary.builder(clock).name("e").drives(1).accessors(1).root(tmp.resolve("lib")).build();
        RecallService s = new RecallService(jdbc, lib, clock, TapeModel.lto9(), RecallChangesIT.props("e-" + tag), cache);
        s.start();
        armed.set(true);
        s.poll();
        assertThat(armed).as("the other instance took the room after the lookup").isFalse();
        assertThat(cache.lookup(List.of(files[0]))).as("e0 was evicted").isEmpty();
        assertThat(jdbc.queryForObject("SELECT state FROM stage_request_file WHERE file_id = ?", String.class, files[0]))
                .isNotEqualTo("on_disk");
        assertThat(jdbc.queryForObject("SELECT state FROM recall_file WHERE file_id = ?", String.class, files[0]))
                .isNotEqualTo("on_disk");
        s.stop();
        lib.close();
    }
}
