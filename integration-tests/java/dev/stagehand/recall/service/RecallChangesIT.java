package dev.stagehand.recall.service;

import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.ItDb;
import dev.stagehand.cache.DiskCache;
import dev.stagehand.platform.VirtualClock;
import dev.stagehand.recall.RecallProperties;
import dev.stagehand.recall.RecallQueues;
import dev.stagehand.recall.scheduler.FileWork;
import dev.stagehand.tape.FaultPlan;
import dev.stagehand.tape.SimulatedLibrary;
import dev.stagehand.tape.TapeModel;
import java.nio.file.Path;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * What operators and the library change under a running scheduler reaches it: a volume the library reports
 * unavailable is disabled in the catalog (its files go to their other copies or fail with the reason), and a
 * priority changed in the database re-ranks the request's queued files. A request whose transaction committed
 * long after it began (its creation time) is still taken in.
 */
@SpringBootTest(properties = {"stagehand.recall.enabled=false"})
class RecallChangesIT {

    @Autowired
    JdbcTemplate jdbc;

    @Autowired
    JdbcClient db;

    @Autowired
    TransactionTemplate tx;

    @TempDir
    Path tmp;

    static RecallProperties props(String instance) {
        return props(instance, Duration.ofMinutes(5));
    }

    /** {@code mountAge}: how old a volume's oldest request must be before it is worth a mount on its own. */
    static RecallProperties props(String instance, Duration mountAge) {
        return new RecallProperties(true, "tape-aware", 20_000_000L, Duration.ZERO, Duration.ofMinutes(10), instance,
                500_000_000_000L, 10_000, mountAge, Duration.ofHours(4), Duration.ofMinutes(5),
                2_000_000_000_000L, 20_000, 4, Map.of(), Map.of());
    }

    private long volume(String label) {
        return jdbc.queryForObject("INSERT INTO volume (label) VALUES (?) RETURNING id", Long.class, label);
    }

    private long file(String name, long... volumeIds) {
        long size = 1_000_000;
        long id = ItDb.simulatedFile(jdbc, name, size);
        for (long v : volumeIds) jdbc.update("INSERT INTO segment (file_id, volume_id, offset_bytes) VALUES (?, ?, 0)", id, v);
        return id;
    }

    private UUID request(int priority, long... files) {
        UUID id = UUID.randomUUID();
        jdbc.update("INSERT INTO stage_request (id, owner, experiment, priority, file_count) VALUES (?, 'it', 'atlas', ?, ?)",
                id, priority, files.length);
        for (int i = 0; i < files.length; i++) {
            jdbc.update("INSERT INTO stage_request_file (request_id, file_id, ordinal) VALUES (?, ?, ?)", id, files[i], i + 1);
        }
        return id;
    }

    @Test
    void anUnavailableVolumeIsDisabledAndAPriorityChangeReachesTheQueue() {
        String tag = UUID.randomUUID().toString().substring(0, 8);
        String gone = "G" + tag, other = "O" + tag;
        long g = volume(gone), o = volume(other);
        long twoCopies = file("/it/" + tag + "/two", g, o), onlyGone = file("/it/" + tag + "/only");
        jdbc.update("INSERT INTO segment (file_id, volume_id, offset_bytes) VALUES (?, ?, 5000000)", onlyGone, g);
        UUID req = request(0, twoCopies, onlyGone);

        VirtualClock clock = new VirtualClock();
        SimulatedLibrary lib = SimulatedLibrary.builder(clock).name("c").drives(1).accessors(1).root(tmp.resolve("lib"))
                .faults(new FaultPlan().missingVolume(gone)).build();
        DiskCache cache = TestCaches.cache(db, tx, tmp.resolve("cache"), 10_000_000_000L, "c-" + tag, clock);
        RecallService s = new RecallService(jdbc, lib, clock, TapeModel.lto9(), props("c-" + tag), cache);
        s.start();
        for (int round = 0; round < 40; round++) {
            s.poll();
            clock.advance(Duration.ofSeconds(30));
            if (!jdbc.queryForObject("SELECT state FROM stage_request WHERE id = ?", String.class, req).matches("submitted|active")) break;
        }
        Map<String, Object> vol = jdbc.queryForMap("SELECT state, state_reason FROM volume WHERE id = ?", g);
        assertThat(vol.get("state")).isEqualTo("disabled");
        assertThat((String) vol.get("state_reason")).contains("VOLUME_UNAVAILABLE");
        assertThat(s.engine().unavailableVolumes()).containsExactly(gone);
        assertThat(jdbc.queryForObject("SELECT state FROM stage_request_file WHERE request_id = ? AND file_id = ?", String.class,
                req, twoCopies)).isEqualTo("on_disk"); // read from the other copy
        assertThat(jdbc.queryForObject("SELECT state FROM stage_request_file WHERE request_id = ? AND file_id = ?", String.class,
                req, onlyGone)).isEqualTo("failed");

        // a priority set in the database reaches the scheduler's queue at the next intake round
        long v1 = volume("P" + tag), v2 = volume("Q" + tag);
        long f1 = file("/it/" + tag + "/p"), f2 = file("/it/" + tag + "/q");
        jdbc.update("INSERT INTO segment (file_id, volume_id, offset_bytes) VALUES (?, ?, 0)", f1, v1);
        jdbc.update("INSERT INTO segment (file_id, volume_id, offset_bytes) VALUES (?, ?, 0)", f2, v2);
        UUID low = request(0, f1);
        s.poll(); // taken in: queued at priority 0 (the drive is busy or the mount waits for the next pass)
        assertThat(s.engine().model().request(low.toString()).priority()).isEqualTo(0);
        jdbc.update("UPDATE stage_request SET priority = 7 WHERE id = ?", low);
        s.poll();
        assertThat(s.engine().model().request(low.toString()).priority()).isEqualTo(7);
        assertThat(s.engine().model().file(f1).priority()).isEqualTo(7);
        lib.close();
    }

    @Test
    void aRequestCommittedLongAfterItsCreationTimeIsTakenInByTheSweep() {
        String tag = UUID.randomUUID().toString().substring(0, 8);
        long a = file("/it/" + tag + "/late", volume("A" + tag)), b = file("/it/" + tag + "/early", volume("B" + tag));
        Scheduler sch = scheduler("l-" + tag, props("l-" + tag));
        VirtualClock clock = sch.clock();
        SimulatedLibrary lib = sch.library();
        RecallService s = sch.service();
        UUID early = request(0, b);
        s.poll();
        assertThat(s.engine().model().request(early.toString())).isNotNull();
        // a submission whose transaction began five minutes ago (a huge request, a slow client) commits only now
        UUID late = request(0, a);
        jdbc.update("UPDATE stage_request SET created_at = now() - interval '5 minutes' WHERE id = ?", late);
        s.poll();
        assertThat(s.engine().model().request(late.toString())).as("outside the round's window").isNull();

        clock.advance(RecallService.SWEEP);
        s.poll();
        assertThat(s.engine().model().request(late.toString())).as("taken in by the sweep").isNotNull();
        for (int round = 0; round < 40; round++) {
            clock.advance(Duration.ofSeconds(30));
            s.poll();
            if (jdbc.queryForObject("SELECT state FROM stage_request WHERE id = ?", String.class, late).equals("done")) break;
        }
        assertThat(jdbc.queryForObject("SELECT state FROM stage_request_file WHERE request_id = ?", String.class, late))
                .isEqualTo("on_disk");
        lib.close();
    }

    /**
     * The engine held a file as on disk that had left the cache (the statement that tells it so was lost to a
     * database error), so a new request for it ended at once inside the engine while its row waited for ever. The
     * sweep forgets ended requests and takes in again any still open in the rows: the file is read and the request
     * ends. (Before, the sweep handed the engine the request it still held, which threw at every sweep.)
     */
    @Test
    void aRequestEndedInTheSchedulerButOpenInTheRowsIsTakenInAgainByTheSweep() {
        String tag = UUID.randomUUID().toString().substring(0, 8);
        long f = file("/it/" + tag + "/f", volume("F" + tag)), g = file("/it/" + tag + "/g", volume("H" + tag));
        Scheduler sch = scheduler("s-" + tag, props("s-" + tag, Duration.ZERO));
        VirtualClock clock = sch.clock();
        SimulatedLibrary lib = sch.library();
        DiskCache cache = sch.cache();
        RecallService s = sch.service();
        // urgent: ahead of any request other tests left open in the shared database, which this scheduler takes in too
        UUID first = request(9, f);
        jdbc.update("UPDATE stage_request SET created_at = now() - interval '10 minutes' WHERE id = ?", first);
        // read before the next sweep (a minute on): until then the engine holds the file as on disk
        untilEnded(s, clock, first, Duration.ofSeconds(5), 10);
        assertThat(s.engine().model().file(f).state()).isEqualTo(FileWork.State.ON_DISK);

        // the copy leaves the cache and the rows say so, but the engine is never told
        assertThat(cache.discardCopy(f, "test: gone")).isTrue();
        jdbc.update("UPDATE recall_file SET state = 'queued', path = NULL WHERE file_id = ?", f);
        UUID again = request(9, f);
        s.poll();
        assertThat(s.engine().model().request(again.toString()).finished()).as("ended at once in the engine").isTrue();
        // a request created two minutes later (by the database's clock; the test does not wait) moves the round's
        // window past it
        UUID newer = request(9, g);
        jdbc.update("UPDATE stage_request SET created_at = now() + interval '2 minutes' WHERE id = ?", newer);
        s.poll();
        assertThat(jdbc.queryForObject("SELECT state FROM stage_request WHERE id = ?", String.class, again)).matches("submitted|active");

        clock.advance(RecallService.SWEEP);
        untilEnded(s, clock, again, Duration.ofSeconds(30), 60);
        assertThat(jdbc.queryForObject("SELECT state FROM stage_request_file WHERE request_id = ?", String.class, again))
                .isEqualTo("on_disk");
        assertThat(cache.lookup(java.util.List.of(f)).get(f).cached()).isTrue();
        untilEnded(s, clock, newer, Duration.ofSeconds(30), 60);
        clock.advance(RecallService.SWEEP);
        s.poll();
        assertThat(s.engine().heldRequestIds()).as("ended requests are not held for ever")
                .doesNotContain(first.toString(), again.toString(), newer.toString());
        lib.close();
    }

    /**
     * A request waiting since before the scheduler started (a restart) keeps its age: the engine's arrival is its
     * creation, not the round that took it in. The queue view (console, gauges) takes the queued files from the
     * engine and the ones being read from the rows, and agrees with the view read from the rows alone.
     */
    @Test
    void aRequestTakenInAfterARestartKeepsItsAgeAndTheQueueViewAgreesWithTheRows() {
        String tag = UUID.randomUUID().toString().substring(0, 8);
        String v = "K" + tag, w = "W" + tag;
        long kv = volume(v), wv = volume(w);
        long f1 = file("/it/" + tag + "/1", kv), f2 = file("/it/" + tag + "/2"), f3 = file("/it/" + tag + "/3", wv);
        jdbc.update("INSERT INTO segment (file_id, volume_id, offset_bytes) VALUES (?, ?, 1000000)", f2, kv);
        UUID waiting = request(0, f1, f2, f3);
        jdbc.update("UPDATE stage_request SET created_at = now() - interval '2 hours' WHERE id = ?", waiting);
        // f3 is being read by another instance
        jdbc.update("""
                INSERT INTO recall_file (file_id, state, volume, claimed_by, lease_until)
                VALUES (?, 'staging', ?, 'other', now() + interval '1 hour')""", f3, w);
        jdbc.update("UPDATE stage_request_file SET state = 'staging' WHERE request_id = ? AND file_id = ?", waiting, f3);
        Instant created = jdbc.queryForObject("SELECT created_at FROM stage_request WHERE id = ?", Timestamp.class, waiting).toInstant();

        Scheduler sch = scheduler("a-" + tag, props("a-" + tag));
        RecallService s = sch.service();
        s.poll(); // taken in; the virtual clock does not move, so the mount has not ended and nothing is claimed here
        var engine = s.engine();
        double waited = engine.now() - engine.model().request(waiting.toString()).arrival(); // on the engine's (virtual) clock
        assertThat(waited).isBetween(7200.0, 7210.0);

        RecallQueues.Snapshot fromScheduler = new RecallQueueView(jdbc, () -> s).snapshot();
        RecallQueues.Snapshot fromRows = new RecallQueueView(jdbc, () -> null).snapshot();
        assertThat(fromScheduler.fromScheduler()).isTrue();
        assertThat(fromRows.fromScheduler()).isFalse();
        for (RecallQueues.Snapshot snap : List.of(fromScheduler, fromRows)) {
            Map<String, RecallQueues.VolumeLoad> mine = snap.volumes().stream().filter(l -> l.volume() != null && l.volume().endsWith(tag))
                    .collect(java.util.stream.Collectors.toMap(RecallQueues.VolumeLoad::volume, l -> l));
            assertThat(mine).containsOnlyKeys(v, w);
            assertThat(mine.get(v).queued()).isEqualTo(2);
            assertThat(mine.get(v).staging()).isZero();
            assertThat(mine.get(v).bytes()).isEqualTo(2_000_000);
            assertThat(mine.get(w).queued()).isZero();
            assertThat(mine.get(w).staging()).isEqualTo(1);
            for (RecallQueues.VolumeLoad l : mine.values()) {
                assertThat(Duration.between(created, l.oldest()).abs()).as(l.toString()).isLessThan(Duration.ofSeconds(10));
            }
            assertThat(snap.experiments()).anySatisfy(e -> {
                assertThat(e.experiment()).isEqualTo("atlas");
                assertThat(e.state()).isEqualTo("staging");
                assertThat(e.files()).isGreaterThanOrEqualTo(1);
            });
        }
        jdbc.update("UPDATE stage_request SET state = 'cancelled' WHERE id = ?", waiting);
        jdbc.update("DELETE FROM recall_file WHERE file_id IN (?, ?, ?)", f1, f2, f3);
        sch.library().close();
    }

    /**
     * A file whose only copies are lost or on a disabled volume fails at intake with the reason, and its request
     * with it when nothing else is left; a file beside it with a usable copy is queued as usual.
     */
    @Test
    void aFileWithNoUsableCopyFailsAtIntakeWithTheReason() {
        String tag = UUID.randomUUID().toString().substring(0, 8);
        long ok = volume("U" + tag), disabled = volume("D" + tag);
        jdbc.update("UPDATE volume SET state = 'disabled' WHERE id = ?", disabled);
        long lost = file("/it/" + tag + "/lost"), off = file("/it/" + tag + "/off"), fine = file("/it/" + tag + "/fine", ok);
        jdbc.update("INSERT INTO segment (file_id, volume_id, offset_bytes, state) VALUES (?, ?, 0, 'lost')", lost, ok);
        jdbc.update("INSERT INTO segment (file_id, volume_id, offset_bytes) VALUES (?, ?, 0)", off, disabled);
        UUID both = request(0, lost, off), mixed = request(0, lost, fine);
        Scheduler sch = scheduler("n-" + tag, props("n-" + tag));
        sch.service().poll();
        for (long f : List.of(lost, off)) {
            Map<String, Object> row = jdbc.queryForMap("SELECT state, error FROM recall_file WHERE file_id = ?", f);
            assertThat(row.get("state")).isEqualTo("failed");
            assertThat((String) row.get("error")).contains("no usable tape copy");
        }
        assertThat(jdbc.queryForObject("SELECT state FROM stage_request WHERE id = ?", String.class, both)).isEqualTo("failed");
        assertThat(jdbc.queryForObject("SELECT state FROM stage_request_file WHERE request_id = ? AND file_id = ?", String.class,
                mixed, lost)).isEqualTo("failed");
        assertThat(jdbc.queryForObject("SELECT state FROM recall_file WHERE file_id = ?", String.class, fine)).isEqualTo("queued");
        assertThat(sch.service().engine().model().file(fine)).as("queued in the engine").isNotNull();
        jdbc.update("UPDATE stage_request SET state = 'cancelled' WHERE id = ?", mixed);
        sch.library().close();
    }

    record Scheduler(VirtualClock clock, SimulatedLibrary library, DiskCache cache, RecallService service) {}

    /** A started scheduler on a one-drive simulated library and a cache of its own, on a virtual clock. */
    private Scheduler scheduler(String name, RecallProperties props) {
        VirtualClock clock = new VirtualClock();
        SimulatedLibrary lib = SimulatedLibrary.builder(clock).name(name).drives(1).accessors(1).root(tmp.resolve("lib")).build();
        DiskCache cache = TestCaches.cache(db, tx, tmp.resolve("cache"), 10_000_000_000L, name, clock);
        RecallService s = new RecallService(jdbc, lib, clock, TapeModel.lto9(), props, cache);
        s.start();
        return new Scheduler(clock, lib, cache, s);
    }

    private void untilEnded(RecallService s, VirtualClock clock, UUID request, Duration step, int rounds) {
        for (int round = 0; round < rounds; round++) {
            s.poll();
            if (!jdbc.queryForObject("SELECT state FROM stage_request WHERE id = ?", String.class, request).matches("submitted|active")) return;
            clock.advance(step);
        }
        throw new AssertionError("request " + request + " did not end: "
                + jdbc.queryForList("SELECT state FROM stage_request_file WHERE request_id = ?", String.class, request));
    }
}
