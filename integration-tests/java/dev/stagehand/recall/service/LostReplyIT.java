package dev.stagehand.recall.service;

import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.ItDb;
import dev.stagehand.cache.DiskCache;
import dev.stagehand.cache.ReserveResult;
import dev.stagehand.platform.VirtualClock;
import dev.stagehand.recall.request.RecallMetrics;
import dev.stagehand.recall.scheduler.Copy;
import dev.stagehand.recall.scheduler.FileWork;
import dev.stagehand.recall.scheduler.Staging;
import dev.stagehand.tape.SimulatedContent;
import java.nio.file.Path;
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
 * The database goes away while a reservation or a commit is being written, after PostgreSQL committed it
 * but before the reply arrived: {@code DatabaseRetry} runs the call again once the database is back, and
 * finds the first attempt's work done. Replayed here by making the first call directly, then the staging
 * call the engine makes.
 */
@SpringBootTest(properties = {"stagehand.recall.enabled=false"})
class LostReplyIT {

    @Autowired
    JdbcTemplate jdbc;

    @Autowired
    JdbcClient db;

    @Autowired
    TransactionTemplate tx;

    @TempDir
    Path tmp;

    private FileWork file(String name) {
        long size = 100_000;
        long id = ItDb.simulatedFile(jdbc, name, size);
        return new FileWork(id, name, size, List.of(new Copy("L1", 0)), "atlas", null, SimulatedContent.adler32Hex(name, size));
    }

    @Test
    void aReservationWrittenButNotAnsweredIsNotJoinedForEver() {
        String tag = UUID.randomUUID().toString().substring(0, 8);
        DiskCache cache = TestCaches.cache(db, tx, tmp.resolve("cache"), 10_000_000, "lr-" + tag, new VirtualClock());
        CacheStaging staging = new CacheStaging(cache, jdbc, 1_000_000, RecallMetrics.NONE, ids -> { }); // no requests to pin for
        FileWork f = file("/it/" + tag + "/reserved");
        ReserveResult lost = cache.reserve(f.id(), f.sizeBytes(), "recall L1"); // its reply never arrived

        List<Staging.Slot> slots = staging.reserve("L1", List.of(f));

        assertThat(slots).singleElement().satisfies(s -> assertThat(s.kind()).isEqualTo(Staging.Kind.READ));
        assertThat(slots.getFirst().handle()).isNotEqualTo(lost.reservation().id());
        assertThat(cache.reservation(lost.reservation().id())).as("the orphan is given up").isNull();
    }

    @Test
    void aCommitWrittenButNotAnsweredCountsAsVerified() throws Exception {
        String tag = UUID.randomUUID().toString().substring(0, 8);
        DiskCache cache = TestCaches.cache(db, tx, tmp.resolve("cache"), 10_000_000, "lc-" + tag, new VirtualClock());
        CacheStaging staging = new CacheStaging(cache, jdbc, 1_000_000, RecallMetrics.NONE, ids -> { }); // no requests to pin for
        FileWork f = file("/it/" + tag + "/committed");
        Staging.Slot slot = staging.reserve("L1", List.of(f)).getFirst();
        long adler = SimulatedContent.writeTo(f.name(), f.sizeBytes(), slot.target());
        assertThat(cache.commit(slot.handle(), String.format("%08x", adler)).verified()).isTrue(); // its reply never arrived

        assertThat(staging.commit(f, "L1", slot, adler)).isEqualTo(Staging.Committed.KEPT);
        assertThat(cache.lookup(List.of(f.id())).get(f.id()).cached()).isTrue();
    }

    @Test
    void aCopyWhoseReservationWasGivenUpUnderItIsLostNotBlamedOnTheTape() throws Exception {
        String tag = UUID.randomUUID().toString().substring(0, 8);
        DiskCache cache = TestCaches.cache(db, tx, tmp.resolve("cache"), 10_000_000, "lg-" + tag, new VirtualClock());
        CacheStaging staging = new CacheStaging(cache, jdbc, 1_000_000, RecallMetrics.NONE, ids -> { }); // no requests to pin for
        long volume = jdbc.queryForObject("INSERT INTO volume (label) VALUES (?) RETURNING id", Long.class, "G" + tag);
        FileWork f = file("/it/" + tag + "/given-up");
        jdbc.update("INSERT INTO segment (file_id, volume_id, offset_bytes) VALUES (?, ?, 0)", f.id(), volume);
        Staging.Slot slot = staging.reserve("G" + tag, List.of(f)).getFirst();
        long adler = SimulatedContent.writeTo(f.name(), f.sizeBytes(), slot.target());
        // another instance took the file's lapsed claim while the database was away from this one
        cache.abort(slot.handle(), "claim's lease expired (instance gone)");

        Staging.Committed c = staging.commit(f, "G" + tag, slot, adler);

        assertThat(c.verdict()).isEqualTo(Staging.Verdict.LOST);
        assertThat(c.reason()).startsWith("staged copy lost before it was verified");
        assertThat(jdbc.queryForObject("SELECT state FROM segment WHERE file_id = ?", String.class, f.id()))
                .as("the tape copy is not blamed").isEqualTo("ok");
    }
}
