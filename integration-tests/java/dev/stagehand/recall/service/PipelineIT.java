package dev.stagehand.recall.service;

import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.ItDb;
import dev.stagehand.cache.DiskCache;
import dev.stagehand.platform.VirtualClock;
import dev.stagehand.recall.StageRequests;
import dev.stagehand.recall.StageRequests.NewStageRequest;
import dev.stagehand.tape.DriveStatus;
import dev.stagehand.tape.FaultPlan;
import dev.stagehand.tape.FileWrite;
import dev.stagehand.tape.LibraryLayout;
import dev.stagehand.tape.ReadBatch;
import dev.stagehand.tape.SegmentRead;
import dev.stagehand.tape.SimulatedLibrary;
import dev.stagehand.tape.TapeLibrary;
import dev.stagehand.tape.TapeModel;
import dev.stagehand.tape.WriteBatch;
import dev.stagehand.transfer.TransferQueue;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The recall pipeline through the disk cache, on PostgreSQL and the simulated library (virtual clock):
 * backpressure when the cache is full, release under pressure, pin expiry and eviction, checksum
 * mismatches from corrupt segments, and dedup of stages in flight and of cached files.
 */
@SpringBootTest(properties = {"stagehand.recall.enabled=false", "stagehand.transfer.queue.enabled=false"})
class PipelineIT {

    static final long SIZE = 2_000_000;

    @Autowired JdbcTemplate jdbc;
    @Autowired JdbcClient db;
    @Autowired TransactionTemplate tx;
    @Autowired StageRequests requests;
    @Autowired TransferQueue transfers;

    @TempDir Path tmp;

    final String tag = UUID.randomUUID().toString().substring(0, 8);
    final VirtualClock clock = new VirtualClock();
    final FaultPlan faults = new FaultPlan();
    final List<SegmentRead> reads = Collections.synchronizedList(new ArrayList<>());
    final AtomicInteger mounts = new AtomicInteger();
    final List<UUID> submitted = new ArrayList<>();
    RecallService service;
    SimulatedLibrary sim;
    DiskCache cache;
    Path cacheDir;

    /** Counts mounts and records every segment read. */
    record Recording(TapeLibrary lib, List<SegmentRead> reads, AtomicInteger mounts) implements TapeLibrary {
        public LibraryLayout layout() { return lib.layout(); }
        public List<DriveStatus> drives() { return lib.drives(); }
        public CompletableFuture<Void> mount(String drive, String volume) { mounts.incrementAndGet(); return lib.mount(drive, volume); }
        public ReadBatch read(String drive, List<SegmentRead> segments) { reads.addAll(segments); return lib.read(drive, segments); }
        public WriteBatch write(String drive, List<FileWrite> files) { return lib.write(drive, files); }
        public CompletableFuture<Void> dismount(String drive) { return lib.dismount(drive); }
        public void setEnabled(String drive, boolean enabled) { lib.setEnabled(drive, enabled); }
        public CompletableFuture<Void> recover(String drive) { return lib.recover(drive); }
    }

    void start(long capacity) {
        start(capacity, 2, null);
    }

    void start(long capacity, int drives, TransferQueue handOff) {
        cacheDir = tmp.resolve("cache");
        cache = TestCaches.cache(db, tx, cacheDir, capacity, "pipe-" + tag, clock);
        sim = SimulatedLibrary.builder(clock).name("p" + tag).drives(drives).accessors(1)
                .root(tmp.resolve("lib")).faults(faults).build();
        TapeLibrary lib = new Recording(sim, reads, mounts);
        service = new RecallService(jdbc, lib, clock, TapeModel.lto9(), TwoSchedulersIT.props("pipe-" + tag, SIZE), cache, handOff);
        service.start();
    }

    /** IT classes run one at a time: work other classes left open must not compete for this test's drives and cache. */
    @org.junit.jupiter.api.BeforeEach
    void closeLeftovers() {
        ItDb.cancelOpenRequests(jdbc);
    }

    @AfterEach
    void end() {
        if (service != null) service.stop();
        // leave no open work behind for other tests' schedulers
        for (UUID id : submitted) {
            String state = jdbc.queryForObject("SELECT state FROM stage_request WHERE id = ?", String.class, id);
            if (state.equals("submitted") || state.equals("active")) requests.cancel(id, null);
        }
    }

    String volume(String v) {
        String label = "P" + tag + v;
        jdbc.update("INSERT INTO volume (label) VALUES (?)", label);
        return label;
    }

    /** A file with a segment on each volume (at offsets spread along the tape). */
    String file(String name, String... volumes) {
        String full = "/pipe/" + tag + "/" + name;
        long id = ItDb.simulatedFile(jdbc, full, SIZE);
        for (String v : volumes) {
            jdbc.update("INSERT INTO segment (file_id, volume_id, offset_bytes) SELECT ?, id, ? FROM volume WHERE label = ?",
                    id, Math.floorMod(full.hashCode(), 1000) * 10_000_000_000L, v);
        }
        return full;
    }

    UUID submit(List<String> files, long lifetimeSeconds) {
        UUID id = requests.submit("it", new NewStageRequest(null, files, null, lifetimeSeconds, null, "atlas")).request().id();
        submitted.add(id);
        return id;
    }

    /** Polls and lets simulated time pass; checks after every step that the cache was never overfilled. */
    void rounds(int n) {
        for (int i = 0; i < n; i++) {
            service.poll();
            clock.advance(Duration.ofSeconds(30));
            Map<String, Object> d = jdbc.queryForMap("SELECT used_bytes + reserved_bytes AS held, capacity_bytes FROM cache_directory WHERE path = ?",
                    cacheDir.toAbsolutePath().normalize().toString());
            assertThat(((Number) d.get("held")).longValue()).isLessThanOrEqualTo(((Number) d.get("capacity_bytes")).longValue());
        }
    }

    Map<String, Long> states(UUID id) {
        Map<String, Long> m = new java.util.TreeMap<>();
        jdbc.query("SELECT state, count(*) FROM stage_request_file WHERE request_id = ? GROUP BY state",
                rs -> { m.put(rs.getString(1), rs.getLong(2)); }, id);
        return m;
    }

    String requestState(UUID id) {
        return jdbc.queryForObject("SELECT state FROM stage_request WHERE id = ?", String.class, id);
    }

    long readsOf(String name) {
        synchronized (reads) {
            return reads.stream().filter(s -> s.fileName().equals(name)).count();
        }
    }

    @Test
    void aFullCacheMakesStagingWaitNothingFailsAndReleasesLetItResume() {
        start(3 * SIZE + SIZE / 2); // room for three files
        String v1 = volume("a"), v2 = volume("b");
        List<String> files = new ArrayList<>();
        for (int i = 0; i < 5; i++) files.add(file("full" + i, v1));
        for (int i = 5; i < 10; i++) files.add(file("full" + i, v2));
        UUID id = submit(files, 86_400);

        rounds(30);
        assertThat(states(id)).isEqualTo(Map.of("on_disk", 3L, "queued", 7L));
        assertThat(requestState(id)).isEqualTo("active");
        // backpressure: once full, no further volume is mounted however long it waits
        int mountsWhenFull = mounts.get();
        rounds(30);
        assertThat(mounts.get()).isEqualTo(mountsWhenFull);
        assertThat(states(id)).isEqualTo(Map.of("on_disk", 3L, "queued", 7L));

        // release under pressure: served at once (no wait behind the queued stages), and staging resumes
        List<String> onDisk = jdbc.queryForList("""
                SELECT f.name FROM stage_request_file x JOIN file f ON f.id = x.file_id
                 WHERE x.request_id = ? AND x.state = 'on_disk' ORDER BY f.name""", String.class, id);
        while (true) {
            requests.release(id, onDisk);
            assertThat(jdbc.queryForObject("SELECT count(*) FROM cache_pin p JOIN file f ON f.id = p.file_id WHERE p.owner = ? AND f.name = ANY(?)",
                    Long.class, id.toString(), onDisk.toArray(String[]::new))).isZero();
            rounds(20);
            onDisk = jdbc.queryForList("""
                    SELECT f.name FROM stage_request_file x JOIN file f ON f.id = x.file_id
                     WHERE x.request_id = ? AND x.state = 'on_disk' AND NOT x.released ORDER BY f.name""", String.class, id);
            if (onDisk.isEmpty()) break;
        }
        assertThat(states(id)).isEqualTo(Map.of("on_disk", 10L));
        assertThat(requestState(id)).isEqualTo("done");
        for (String f : files) assertThat(readsOf(f)).isEqualTo(1); // nothing read twice, nothing lost
        // released copies were evicted to make room, the last ones are still cached
        assertThat(jdbc.queryForObject("SELECT count(*) FROM cache_file cf JOIN file f ON f.id = cf.file_id "
                + "WHERE f.name LIKE ? AND cf.state = 'evicted'", Long.class, "/pipe/" + tag + "/%")).isGreaterThanOrEqualTo(7L);
    }

    @Test
    void filesCancelledOneByOneInAnOpenRequestAreNotReadFromTape() {
        start(100 * SIZE, 1, null); // one drive: the volume with more to read goes first, the other waits
        String v1 = volume("a"), v2 = volume("b");
        List<String> kept = List.of(file("k0", v1));
        List<String> dropped = new ArrayList<>();
        for (int i = 0; i < 4; i++) dropped.add(file("d" + i, v2));
        List<String> all = new ArrayList<>(kept);
        all.addAll(dropped);
        UUID id = submit(all, 86_400);
        service.poll(); // the scheduler holds all five files now

        requests.cancel(id, dropped); // the request stays open for k0
        rounds(20);
        assertThat(states(id)).isEqualTo(Map.of("cancelled", 4L, "on_disk", 1L));
        assertThat(requestState(id)).isEqualTo("done");
        for (String f : kept) assertThat(readsOf(f)).isEqualTo(1);
        for (String f : dropped) assertThat(readsOf(f)).as("cancelled before its read: %s", f).isZero();
    }

    @Test
    void aFailedDriveAnOperatorRecoversIsUsedAgainWithoutARestart() {
        start(100 * SIZE, 1, null);
        String v1 = volume("a");
        List<String> files = List.of(file("r0", v1), file("r1", v1), file("r2", v1));
        faults.failDrive("drive01"); // its first read breaks the drive, the cartridge stuck in it
        UUID id = submit(files, 86_400);
        rounds(10);
        assertThat(sim.drives().getFirst().state()).isEqualTo(dev.stagehand.tape.DriveState.FAILED);
        assertThat(states(id)).as("waiting for the volume stuck in the failed drive").isEqualTo(Map.of("queued", 3L));

        sim.recover("drive01"); // repaired: the cartridge goes back to its slot
        rounds(10);
        assertThat(states(id)).isEqualTo(Map.of("on_disk", 3L));
        assertThat(requestState(id)).isEqualTo("done");
    }

    @Test
    void expiredPinsLetTheirFilesBeEvictedForNewStages() {
        start(3 * SIZE + SIZE / 2);
        String v1 = volume("a"), v2 = volume("b");
        List<String> first = List.of(file("e0", v1), file("e1", v1), file("e2", v1));
        List<String> second = List.of(file("e3", v2), file("e4", v2), file("e5", v2));
        UUID a = submit(first, 3600); // pinned for an hour once on disk
        rounds(20);
        assertThat(requestState(a)).isEqualTo("done");
        UUID b = submit(second, 86_400);
        rounds(20); // well within a's disk lifetime: b waits, a's files stay
        assertThat(states(b)).isEqualTo(Map.of("queued", 3L));
        rounds(120); // an hour later a's pins have expired: the housekeeping purges them and b's files take their place
        assertThat(cache.purgeExpiredPins()).isGreaterThanOrEqualTo(0);
        assertThat(jdbc.queryForObject("SELECT count(*) FROM cache_pin WHERE owner = ? AND expires_at > ?", Long.class,
                a.toString(), java.sql.Timestamp.from(clock.now()))).isZero();
        assertThat(states(b)).isEqualTo(Map.of("on_disk", 3L));
        assertThat(requestState(b)).isEqualTo("done");
        assertThat(jdbc.queryForObject("SELECT count(*) FROM cache_file cf JOIN file f ON f.id = cf.file_id "
                + "WHERE f.name = ANY(?) AND cf.state = 'evicted'", Long.class, (Object) first.toArray(String[]::new))).isEqualTo(3L);
        // a's files, asked for again after eviction, are read again (once b lets go of the space)
        requests.release(b, null);
        UUID again = submit(List.of(first.getFirst()), 600);
        rounds(20);
        assertThat(states(again)).isEqualTo(Map.of("on_disk", 1L));
        assertThat(readsOf(first.getFirst())).isEqualTo(2);
    }

    @Test
    void aCorruptCopyIsRefusedMarkedSuspectAndRetriedFromTheSecondCopyOrFailedWithItsReason() {
        start(100 * SIZE);
        String v1 = volume("a"), v2 = volume("b");
        String twoCopies = file("c-two", v1, v2);
        String oneCopy = file("c-one", v1);
        String fine = file("c-fine", v1);
        faults.corruptSegment(v1, twoCopies);
        faults.corruptSegment(v1, oneCopy);
        UUID id = submit(List.of(twoCopies, oneCopy, fine), 86_400);
        rounds(40);
        assertThat(requestState(id)).isEqualTo("failed");
        Map<String, Map<String, Object>> byName = new java.util.HashMap<>();
        for (Map<String, Object> r : jdbc.queryForList("""
                SELECT f.name, x.state, x.error FROM stage_request_file x JOIN file f ON f.id = x.file_id WHERE x.request_id = ?""", id)) {
            byName.put((String) r.get("name"), r);
        }
        assertThat(byName.get(twoCopies).get("state")).isEqualTo("on_disk");
        assertThat(byName.get(fine).get("state")).isEqualTo("on_disk");
        assertThat(byName.get(oneCopy).get("state")).isEqualTo("failed");
        assertThat((String) byName.get(oneCopy).get("error")).contains("checksum mismatch").contains(v1).contains("Adler32");
        assertThat(readsOf(twoCopies)).isEqualTo(2);
        // the bad copies are suspect in the catalog, the good one still ok
        assertThat(jdbc.queryForList("""
                SELECT v.label || ' ' || s.state FROM segment s JOIN volume v ON v.id = s.volume_id JOIN file f ON f.id = s.file_id
                 WHERE f.name = ? ORDER BY v.label""", String.class, twoCopies)).containsExactly(v1 + " suspect", v2 + " ok");
        // nothing corrupt was handed on: the only verified copies carry the catalog checksum
        for (Map<String, Object> r : jdbc.queryForList("""
                SELECT cf.adler32, f.adler32 AS expected, cf.state FROM cache_file cf JOIN file f ON f.id = cf.file_id
                 WHERE f.name = ANY(?) AND cf.state = 'verified'""", (Object) new String[] {twoCopies, oneCopy, fine})) {
            assertThat(r.get("adler32")).isEqualTo(r.get("expected"));
        }
        assertThat(jdbc.queryForObject("SELECT count(*) FROM cache_file cf JOIN file f ON f.id = cf.file_id WHERE f.name = ? AND cf.state = 'verified'",
                Long.class, oneCopy)).isZero();
        assertThat(jdbc.queryForObject("SELECT count(*) FROM cache_file cf JOIN file f ON f.id = cf.file_id WHERE f.name = ANY(?) AND cf.state = 'corrupt'",
                Long.class, (Object) new String[] {twoCopies, oneCopy})).isEqualTo(2L);
    }

    /**
     * The intake takes no pins: a 10^6-file request's pins cost 24-28 s before its first mount. A file is pinned
     * for every request holding it when its read list reserves its space, before its copy can be verified (so
     * eviction never finds it unpinned), and a file being written when a request joins it is pinned at that
     * request's intake. Every file is still read once and held for its request's disk lifetime once on disk.
     */
    @Test
    void pinsAreTakenAReadListAtATimeBeforeTheCopyIsWrittenNotAtIntake() {
        start(100 * SIZE, 1, null); // one drive: one volume waits while the other is read
        String a = volume("a"), b = volume("b");
        List<String> all = List.of(file("a0", a), file("a1", a), file("a2", a), file("b0", b), file("b1", b), file("b2", b));
        UUID id = submit(all, 3_600);
        service.poll(); // the intake round
        assertThat(service.engine().model().request(id.toString()).files()).hasSize(6);
        assertThat(states(id)).isEqualTo(Map.of("queued", 6L));
        assertThat(pinned(id)).as("no pin at intake").isEmpty();

        // until the first read list is under way
        for (int i = 0; i < 60 && !states(id).containsKey("staging"); i++) {
            service.poll();
            clock.advance(Duration.ofSeconds(5));
            assertLiveCopiesPinned(id);
        }
        List<String> staging = jdbc.queryForList("""
                SELECT f.name FROM stage_request_file x JOIN file f ON f.id = x.file_id
                 WHERE x.request_id = ? AND x.state = 'staging' ORDER BY f.name""", String.class, id);
        assertThat(staging).isNotEmpty();
        // by the name's last part: the random tag before it may itself begin with a or b
        java.util.function.Predicate<String> onA = n -> n.substring(n.lastIndexOf('/') + 1).startsWith("a");
        String first = onA.test(staging.get(0)) ? a : b;
        List<String> firstVolume = all.stream().filter(n -> onA.test(n) == first.equals(a)).toList();
        List<String> otherVolume = all.stream().filter(n -> !firstVolume.contains(n)).toList();
        assertThat(pinned(id)).as("the read list's files, pinned as it reserved their space")
                .containsAll(staging).doesNotContainAnyElementsOf(otherVolume);

        // a second request joins a file being written: pinned at its intake, before the copy lands
        String inFlight = staging.get(staging.size() - 1);
        UUID joined = submit(List.of(inFlight, otherVolume.get(0)), 3_600);
        service.poll();
        assertThat(pinned(joined)).containsExactly(inFlight);

        for (int i = 0; i < 80 && !(requestState(id).equals("done") && requestState(joined).equals("done")); i++) {
            service.poll();
            clock.advance(Duration.ofSeconds(10));
            assertLiveCopiesPinned(id);
            assertLiveCopiesPinned(joined);
        }
        assertThat(requestState(id)).isEqualTo("done");
        assertThat(requestState(joined)).isEqualTo("done");
        for (String f : all) assertThat(readsOf(f)).as("reads of %s", f).isEqualTo(1);
        assertThat(pinned(id)).containsExactlyInAnyOrderElementsOf(all);
        assertThat(pinned(joined)).containsExactlyInAnyOrder(inFlight, otherVolume.get(0));
        assertThat(jdbc.queryForObject("SELECT min(expires_at) FROM cache_pin WHERE owner = ?", java.sql.Timestamp.class, id.toString())
                .toInstant()).isAfter(clock.now());
    }

    /** The request's unexpired pins, by file name. */
    List<String> pinned(UUID id) {
        return jdbc.queryForList("""
                SELECT f.name FROM cache_pin p JOIN file f ON f.id = p.file_id
                 WHERE p.owner = ? AND p.expires_at > ? ORDER BY f.name""", String.class, id.toString(), java.sql.Timestamp.from(clock.now()));
    }

    /** Every live copy (reserved, being written, verified) of the request's files carries the request's pin. */
    void assertLiveCopiesPinned(UUID id) {
        assertThat(jdbc.queryForList("""
                SELECT cf.path FROM stage_request_file x
                  JOIN cache_file cf ON cf.file_id = x.file_id AND cf.state IN ('reserved', 'writing', 'verified')
                 WHERE x.request_id = ? AND NOT x.released AND x.state NOT IN ('failed', 'cancelled')
                   AND NOT EXISTS (SELECT 1 FROM cache_pin p WHERE p.file_id = x.file_id AND p.owner = ?)""",
                String.class, id, id.toString())).as("copies of the request's files without its pin").isEmpty();
    }

    @Test
    void aStageInFlightIsJoinedAndACachedFileAnswersAtOnce() {
        start(100 * SIZE);
        String v1 = volume("a");
        String f = file("d0", v1), g = file("d1", v1);
        UUID first = submit(List.of(f, g), 86_400);
        // run until the read list is under way (claimed, not yet on disk)
        for (int i = 0; i < 40 && !jdbc.queryForList("SELECT state FROM stage_request_file WHERE request_id = ?", String.class, first).contains("staging"); i++) {
            service.poll();
            clock.advance(Duration.ofSeconds(5));
        }
        assertThat(states(first)).containsKey("staging");
        UUID second = submit(List.of(f), 86_400); // the same file while its stage runs: joined
        rounds(20);
        assertThat(requestState(first)).isEqualTo("done");
        assertThat(requestState(second)).isEqualTo("done");
        assertThat(readsOf(f)).isEqualTo(1);
        // on disk now: a new request is answered on the next poll without a tape read
        int mountsBefore = mounts.get();
        UUID third = submit(List.of(f, g), 86_400);
        service.poll();
        assertThat(requestState(third)).isEqualTo("done");
        assertThat(states(third)).isEqualTo(Map.of("on_disk", 2L));
        assertThat(readsOf(f)).isEqualTo(1);
        assertThat(readsOf(g)).isEqualTo(1);
        assertThat(mounts.get()).isEqualTo(mountsBefore);
        // each request holds its own pins for its disk lifetime
        assertThat(cache.pins(jdbc.queryForObject("SELECT id FROM file WHERE name = ?", Long.class, f)))
                .containsKeys(first.toString(), second.toString(), third.toString());
    }

    /**
     * A file on disk for a request still waiting for its other files loses its copy (deleted by hand, a disk
     * replaced): the next start of an instance drops the copy, and the file is read from tape again instead of
     * the request ending with a file that is not there.
     */
    @Test
    void aPinnedFileWhoseCopyIsGoneFromDiskIsReadFromTapeAgain() throws Exception {
        start(100 * SIZE, 1, null); // one drive: one volume waits while the other is read
        String a = file("g0", volume("a")), b = file("g1", volume("b"));
        UUID id = submit(List.of(a, b), 86_400);
        for (int i = 0; i < 200 && !states(id).containsKey("on_disk"); i++) {
            service.poll();
            clock.advance(Duration.ofSeconds(5));
        }
        assertThat(states(id)).containsEntry("on_disk", 1L);
        String landed = jdbc.queryForObject("SELECT f.name FROM stage_request_file x JOIN file f ON f.id = x.file_id "
                + "WHERE x.request_id = ? AND x.state = 'on_disk'", String.class, id);
        long landedId = jdbc.queryForObject("SELECT id FROM file WHERE name = ?", Long.class, landed);
        Path copy = cache.lookup(List.of(landedId)).get(landedId).path();
        java.nio.file.Files.delete(copy);
        // another instance sharing the directory starts: its inventory finds the copy gone
        TestCaches.cache(db, tx, cacheDir, 100 * SIZE, "pipe2-" + tag, clock);
        assertThat(cache.lookup(List.of(landedId))).isEmpty();

        for (int i = 0; i < 400 && !requestState(id).equals("done"); i++) {
            service.poll();
            clock.advance(Duration.ofSeconds(5));
        }
        assertThat(requestState(id)).isEqualTo("done");
        assertThat(states(id)).isEqualTo(Map.of("on_disk", 2L));
        assertThat(readsOf(landed)).as("read again from tape").isEqualTo(2);
        assertThat(readsOf(landed.equals(a) ? b : a)).isEqualTo(1);
        assertThat(cache.lookup(List.of(landedId)).get(landedId).path()).exists();
        assertThat(cache.pins(landedId)).containsKey(id.toString());
    }

    /**
     * A release drops a file's pin, not the transfer its request asked for (cancel is for that): a released file
     * whose copy is lost before its hand-off (found bad by another request's transfer, gone from disk) is read
     * again and sent. It was left on disk without a copy, never handed on, its request open for ever.
     */
    @Test
    void aReleasedFileWhoseCopyIsLostBeforeItsHandOffIsReadAgainAndSent() throws Exception {
        start(100 * SIZE, 1, transfers);
        HandedOn h = releasedOnDisk("rel0");
        assertThat(cache.discardCopy(h.fileId(), "test: found bad by another request's transfer")).isTrue();
        readAgainAndSent(h);
    }

    /** The same for a released file's copy evicted before its hand-off: released, it has no pin to keep it. */
    @Test
    void aReleasedFileEvictedBeforeItsHandOffIsReadAgainAndSent() throws Exception {
        start(SIZE, 1, transfers); // room for one file
        HandedOn h = releasedOnDisk("rel1");
        long other = ItDb.simulatedFile(jdbc, "/pipe/" + tag + "/other", SIZE);
        dev.stagehand.cache.Reservation r = cache.reserve(other, SIZE, "another recall").reservation();
        assertThat(cache.lookup(List.of(h.fileId()))).as("evicted for another file").isEmpty();
        cache.abort(r, "test: room for the file again");
        readAgainAndSent(h);
    }

    /** A one-file request with a destination whose file landed (its hand-off due at the next round), then released. */
    HandedOn releasedOnDisk(String file) {
        String name = file(file, volume("a"));
        UUID id = requests.submit("it", new NewStageRequest(null, List.of(name), null, 86_400L,
                "gsiftp://dest.example.org:2811/data/", "atlas")).request().id();
        submitted.add(id);
        long fileId = jdbc.queryForObject("SELECT id FROM file WHERE name = ?", Long.class, name);
        for (int i = 0; i < 200 && !states(id).containsKey("on_disk"); i++) {
            service.poll();
            clock.advance(Duration.ofSeconds(5));
        }
        assertThat(states(id)).isEqualTo(Map.of("on_disk", 1L));
        requests.release(id, null);
        assertThat(cache.pins(fileId)).isEmpty();
        return new HandedOn(id, name, fileId, "stage:" + id + ":" + fileId);
    }

    void readAgainAndSent(HandedOn h) {
        pollUntil(() -> !jdbc.queryForList(JOBS, String.class, h.correlation()).isEmpty());
        assertThat(readsOf(h.name())).as("read again from tape").isEqualTo(2);
        assertThat(jdbc.queryForList(JOBS, String.class, h.correlation())).containsExactly("queued");
        assertThat(states(h.id())).isEqualTo(Map.of("transferring", 1L));
        assertThat(cache.pins(h.fileId())).as("released: not pinned again").doesNotContainKey(h.id().toString());
        jdbc.update("UPDATE transfer_job SET state = 'done', finished_at = now() WHERE correlation = ?", h.correlation());
        service.poll();
        assertThat(requestState(h.id())).isEqualTo("done");
    }

    @Test
    void eachVerifiedFileGoesToTheTransferQueueAsSoonAsItIsOnDiskAndEndsWithItsTransfer() {
        start(100 * SIZE, 1, transfers);
        String v1 = volume("a"), v2 = volume("b");
        String a = file("t0", v1), b = file("t1", v2);
        UUID id = requests.submit("it", new NewStageRequest(null, List.of(a, b), null, 86_400L,
                "gsiftp://dest.example.org:2811/data/", "atlas")).request().id();
        submitted.add(id);
        String first = null;
        for (int i = 0; i < 200 && first == null; i++) {
            service.poll();
            clock.advance(Duration.ofSeconds(5));
            List<String> queued = jdbc.queryForList("SELECT correlation FROM transfer_job WHERE correlation LIKE ?", String.class,
                    "stage:" + id + ":%");
            if (!queued.isEmpty()) first = queued.getFirst();
        }
        assertThat(first).isNotNull();
        // handed on while the other file (another volume, one drive) is still waiting for tape
        Map<String, Long> st = states(id);
        assertThat(st.get("transferring")).isEqualTo(1L);
        assertThat(st.getOrDefault("queued", 0L) + st.getOrDefault("staging", 0L)).isEqualTo(1L);
        long firstFile = Long.parseLong(first.substring(first.lastIndexOf(':') + 1));
        Map<String, Object> job = jdbc.queryForMap("SELECT source, destination, size_bytes, adler32 FROM transfer_job WHERE correlation = ?", first);
        Map<String, Object> f = jdbc.queryForMap("SELECT f.name, f.adler32, cf.path FROM file f JOIN cache_file cf ON cf.file_id = f.id "
                + "AND cf.state = 'verified' WHERE f.id = ?", firstFile);
        assertThat(job.get("source")).isEqualTo(Path.of((String) f.get("path")).toUri().toString());
        assertThat(job.get("destination")).isEqualTo("gsiftp://dest.example.org:2811/data" + f.get("name"));
        assertThat(((Number) job.get("size_bytes")).longValue()).isEqualTo(SIZE);
        assertThat(((Number) job.get("adler32")).longValue()).isEqualTo(Long.parseLong(((String) f.get("adler32")).trim(), 16));

        // the movers finish it (as the drainer records it): the file is done and no longer pinned for the request
        jdbc.update("UPDATE transfer_job SET state = 'done', finished_at = now() WHERE correlation = ?", first);
        service.poll();
        assertThat(jdbc.queryForObject("SELECT state FROM stage_request_file WHERE request_id = ? AND file_id = ?", String.class, id, firstFile))
                .isEqualTo("done");
        assertThat(cache.pins(firstFile)).doesNotContainKey(id.toString());
        assertThat(requestState(id)).isEqualTo("active");

        // the other one arrives, is handed on, and its transfer fails: the file fails with the transfer's reason
        String second = null;
        for (int i = 0; i < 200 && second == null; i++) {
            service.poll();
            clock.advance(Duration.ofSeconds(5));
            List<String> queued = jdbc.queryForList("SELECT correlation FROM transfer_job WHERE correlation LIKE ? AND correlation <> ?",
                    String.class, "stage:" + id + ":%", first);
            if (!queued.isEmpty()) second = queued.getFirst();
        }
        assertThat(second).isNotNull();
        jdbc.update("UPDATE transfer_job SET state = 'failed', last_error = 'permission denied on dest.example.org', finished_at = now() "
                + "WHERE correlation = ?", second);
        service.poll();
        assertThat(requestState(id)).isEqualTo("failed");
        assertThat(jdbc.queryForList("SELECT error FROM stage_request_file WHERE request_id = ? AND state = 'failed'", String.class, id))
                .containsExactly("transfer failed: permission denied on dest.example.org");
        assertThat(jdbc.queryForObject("SELECT count(*) FROM transfer_job WHERE correlation LIKE ?", Long.class, "stage:" + id + ":%"))
                .isEqualTo(2L); // each file handed on exactly once
    }

    /**
     * A file whose transfer the mover refused for its source, its cached copy gone (deleted by hand, a disk
     * replaced), is read from tape again and handed on anew rather than failed: the file is safe on tape. The
     * request used to fail with "cannot read local file".
     */
    /** A one-file request with a destination, its file staged and handed on (its transfer queued). */
    record HandedOn(UUID id, String name, long fileId, String correlation) {}

    static final String JOBS = "SELECT state FROM transfer_job WHERE correlation = ? ORDER BY id";

    HandedOn handedOn(String file) {
        String name = file(file, volume("a"));
        long fileId = jdbc.queryForObject("SELECT id FROM file WHERE name = ?", Long.class, name);
        UUID id = requests.submit("it", new NewStageRequest(null, List.of(name), null, 86_400L,
                "gsiftp://dest.example.org:2811/data/", "atlas")).request().id();
        submitted.add(id);
        String correlation = "stage:" + id + ":" + fileId;
        pollUntil(() -> !jdbc.queryForList(JOBS, String.class, correlation).isEmpty());
        assertThat(jdbc.queryForList(JOBS, String.class, correlation)).containsExactly("queued");
        return new HandedOn(id, name, fileId, correlation);
    }

    void pollUntil(java.util.function.BooleanSupplier done) {
        for (int i = 0; i < 400 && !done.getAsBoolean(); i++) {
            service.poll();
            clock.advance(Duration.ofSeconds(5));
        }
    }

    /** Deletes the file's cached copy and fails its transfer as the drainer records the mover's refusal. */
    void copyGoneAndTransferRefused(HandedOn h) throws Exception {
        Path copy = cache.lookup(List.of(h.fileId())).get(h.fileId()).path();
        java.nio.file.Files.delete(copy);
        transferFailed(h, "BAD_REQUEST", "BAD_REQUEST: cannot read local file " + copy);
    }

    /** Fails the file's transfer as the drainer records a mover's failure of this class. */
    void transferFailed(HandedOn h, String errorClass, String error) {
        jdbc.update("UPDATE transfer_job SET state = 'failed', last_error_class = ?, last_error = ?, finished_at = now() "
                + "WHERE correlation = ?", errorClass, error, h.correlation());
    }

    /**
     * A cached copy whose bytes rotted on disk keeps its size: a transfer failing its checksum has the copy read
     * once, and a copy no longer matching the sum verified when it was staged is read from tape again. The request
     * used to fail after the mover's attempts, its file safe on tape.
     */
    @Test
    void aFileWhoseTransferFailsItsChecksumOnARottedCachedCopyIsReadFromTapeAgain() throws Exception {
        start(100 * SIZE, 1, transfers);
        HandedOn h = handedOn("rot0");
        Path copy = rot(h, 2, 0x40);
        transferFailed(h, "CHECKSUM_MISMATCH", "CHECKSUM_MISMATCH: local source " + copy + " read as ADLER32 0badc0de, catalog says 12345678");
        assertReadFromTapeAgain(h, copy);
        Path again = cache.lookup(List.of(h.fileId())).get(h.fileId()).path();
        assertThat(dev.stagehand.cache.Checksums.adler32Of(again))
                .isEqualTo(jdbc.queryForObject("SELECT adler32 FROM file WHERE id = ?", String.class, h.fileId()));
    }

    /**
     * The mover found the cached copy itself off the catalog's sum and failed it at once (SOURCE_CHECKSUM_MISMATCH,
     * no attempts spent on the same bytes): the copy is read here, discarded and the file read from tape again.
     */
    @Test
    void aFileWhoseTransferFindsItsCachedCopyOffItsSumIsReadFromTapeAgain() throws Exception {
        start(100 * SIZE, 1, transfers);
        HandedOn h = handedOn("rot2");
        Path copy = rot(h, 3, 0x08);
        transferFailed(h, "SOURCE_CHECKSUM_MISMATCH", "SOURCE_CHECKSUM_MISMATCH: local source " + copy
                + " reads as ADLER32 0badc0de, catalog says 12345678");
        assertReadFromTapeAgain(h, copy);
    }

    /** Flips a bit of the file's cached copy at 1/{@code part} of it: rotted on disk, its size unchanged. */
    Path rot(HandedOn h, int part, int bit) throws java.io.IOException {
        Path copy = cache.lookup(List.of(h.fileId())).get(h.fileId()).path();
        byte[] bytes = java.nio.file.Files.readAllBytes(copy);
        bytes[bytes.length / part] ^= (byte) bit;
        java.nio.file.Files.write(copy, bytes);
        return copy;
    }

    /** After the failed transfer is collected: the copy discarded as corrupt, the file read again, a transfer queued anew. */
    void assertReadFromTapeAgain(HandedOn h, Path copy) {
        service.poll();
        assertThat(states(h.id())).as("queued for tape again, not failed").isEqualTo(Map.of("queued", 1L));
        assertThat(jdbc.queryForObject("SELECT reason FROM cache_file WHERE file_id = ? AND state = 'corrupt' ORDER BY id DESC LIMIT 1",
                String.class, h.fileId())).startsWith("a transfer found its copy " + copy + " reads as ADLER32 ");
        pollUntil(() -> !jdbc.queryForList(JOBS, String.class, h.correlation()).isEmpty());
        assertThat(readsOf(h.name())).as("read again from tape").isEqualTo(2);
        assertThat(jdbc.queryForList(JOBS, String.class, h.correlation())).containsExactly("queued");
    }

    /** A checksum failure with the cached copy intact is the destination's (or the network's): it stands. */
    @Test
    void aChecksumFailureWithAnIntactCachedCopyStands() {
        start(100 * SIZE, 1, transfers);
        HandedOn h = handedOn("rot1");
        transferFailed(h, "CHECKSUM_MISMATCH", "CHECKSUM_MISMATCH: destination /data/rot1 has ADLER32 0badc0de, expected 12345678");
        service.poll();
        assertThat(requestState(h.id())).isEqualTo("failed");
        assertThat(jdbc.queryForObject("SELECT error FROM stage_request_file WHERE request_id = ?", String.class, h.id()))
                .isEqualTo("transfer failed: CHECKSUM_MISMATCH: destination /data/rot1 has ADLER32 0badc0de, expected 12345678");
        assertThat(readsOf(h.name())).isEqualTo(1);
        assertThat(cache.lookup(List.of(h.fileId())).get(h.fileId()).cached()).as("the copy kept").isTrue();
    }

    @Test
    void aFileWhoseTransferFindsItsCachedCopyGoneIsReadFromTapeAgainAndSentAnew() throws Exception {
        start(100 * SIZE, 1, transfers);
        HandedOn h = handedOn("r0");
        UUID id = h.id();
        long fileId = h.fileId();
        String a = h.name(), correlation = h.correlation(), jobs = JOBS;
        copyGoneAndTransferRefused(h);
        service.poll();
        assertThat(states(id)).as("queued for tape again, not failed").isEqualTo(Map.of("queued", 1L));
        assertThat(cache.lookup(List.of(fileId))).isEmpty();

        pollUntil(() -> !jdbc.queryForList(jobs, String.class, correlation).isEmpty());
        assertThat(readsOf(a)).as("read again from tape").isEqualTo(2);
        assertThat(jdbc.queryForList(jobs, String.class, correlation)).as("a transfer of its own").containsExactly("queued");
        assertThat(jdbc.queryForList(jobs, String.class, "stage-superseded:" + id + ":" + fileId)).containsExactly("failed");
        assertThat(states(id)).isEqualTo(Map.of("transferring", 1L));
        assertThat(cache.lookup(List.of(fileId)).get(fileId).path()).exists();

        jdbc.update("UPDATE transfer_job SET state = 'done', finished_at = now() WHERE correlation = ?", correlation);
        service.poll();
        assertThat(requestState(id)).isEqualTo("done");
        assertThat(states(id)).isEqualTo(Map.of("done", 1L));
    }

    /** A file whose staged copies keep going bad (a failing disk) is read again twice, then fails with the reason. */
    @Test
    void aFileWhoseCopiesKeepGoingBadFailsAfterTwoReadsAgain() throws Exception {
        start(100 * SIZE, 1, transfers);
        HandedOn h = handedOn("k0");
        UUID id = h.id();
        String a = h.name();
        // two earlier transfers of it were superseded, their copies found bad
        for (int i = 0; i < 2; i++) {
            jdbc.update("INSERT INTO transfer_job (correlation, source, destination, size_bytes, state, finished_at) "
                    + "VALUES (?, 'file:///gone', 'ftp://x/y', 1, 'failed', now())", "stage-superseded:" + id + ":" + h.fileId());
        }
        copyGoneAndTransferRefused(h);
        service.poll();
        assertThat(requestState(id)).isEqualTo("failed");
        assertThat(jdbc.queryForObject("SELECT error FROM stage_request_file WHERE request_id = ?", String.class, id))
                .startsWith("transfer failed: BAD_REQUEST: cannot read local file").endsWith("its copies were found bad 3 times)");
        assertThat(readsOf(a)).isEqualTo(1);
    }

    /** A destination down for longer than the disk lifetime: the copy stays pinned until its transfer ends. */
    @Test
    void aFileWaitingForItsTransferStaysPinnedPastItsDiskLifetime() {
        start(100 * SIZE, 1, transfers);
        String a = file("w0", volume("a"));
        UUID id = requests.submit("it", new NewStageRequest(null, List.of(a), null, 600L,
                "gsiftp://down.example.org:2811/data/", "atlas")).request().id();
        submitted.add(id);
        for (int i = 0; i < 200 && !states(id).containsKey("transferring"); i++) {
            service.poll();
            clock.advance(Duration.ofSeconds(5));
        }
        assertThat(states(id)).containsEntry("transferring", 1L);
        long fileId = jdbc.queryForObject("SELECT id FROM file WHERE name = ?", Long.class, a);
        // two hours of the transfer waiting (no mover takes it here): four times the 10 min disk lifetime
        for (int i = 0; i < 240; i++) {
            service.poll();
            clock.advance(Duration.ofSeconds(30));
        }
        assertThat(cache.pins(fileId).get(id.toString())).as("pin of the waiting file").isAfter(clock.now());
        assertThat(cache.pins(fileId).get(id.toString())).isBeforeOrEqualTo(clock.now().plusSeconds(600));
        // delivered at last: the pin goes, as for any delivered file
        jdbc.update("UPDATE transfer_job SET state = 'done', finished_at = now() WHERE correlation LIKE ?", "stage:" + id + ":%");
        service.poll();
        assertThat(requestState(id)).isEqualTo("done");
        assertThat(cache.pins(fileId)).doesNotContainKey(id.toString());
    }

    @Test
    void namesThatNeedEscapingReachTheirOwnDestinationAndAFileThatCannotBeSentFailsAloneWithoutBlockingOthers() {
        start(100 * SIZE, 2, transfers);
        String v = volume("e");
        // a space does not parse in a URL, '#' and '?' would cut the name short and send both files to one path
        String a = file("run 1#a?.dat", v), b = file("run 1#b%41.dat", v), c = file("c.dat", v);
        UUID ok = requests.submit("it", new NewStageRequest(null, List.of(a, b), null, 86_400L,
                "gsiftp://dest.example.org:2811/data/", "atlas")).request().id();
        UUID bad = requests.submit("it", new NewStageRequest(null, List.of(c), null, 86_400L,
                "gsiftp://dest.example.org:2811/data/", "atlas")).request().id();
        submitted.addAll(List.of(ok, bad));
        // a destination that passed an older validation or was changed by hand: no URL can be made of it
        jdbc.update("UPDATE stage_request SET destination = 'gsiftp://dest.example.org:2811/bad dir/' WHERE id = ?", bad);
        for (int i = 0; i < 200 && !(states(ok).equals(Map.of("transferring", 2L)) && requestState(bad).equals("failed")); i++) {
            service.poll();
            clock.advance(Duration.ofSeconds(5));
        }
        assertThat(states(ok)).isEqualTo(Map.of("transferring", 2L));
        List<String> dests = jdbc.queryForList("SELECT destination FROM transfer_job WHERE correlation LIKE ? ORDER BY destination",
                String.class, "stage:" + ok + ":%");
        assertThat(dests.stream().map(d -> java.net.URI.create(d).getPath()).toList()).containsExactly("/data" + a, "/data" + b);
        assertThat(dests.stream().map(d -> java.net.URI.create(d).getHost()).distinct().toList()).containsExactly("dest.example.org");
        assertThat(requestState(bad)).isEqualTo("failed");
        assertThat(jdbc.queryForObject("SELECT error FROM stage_request_file WHERE request_id = ?", String.class, bad))
                .startsWith("cannot be handed to the movers: ");
        assertThat(jdbc.queryForObject("SELECT count(*) FROM transfer_job WHERE correlation LIKE ?", Long.class, "stage:" + bad + ":%"))
                .isZero();
    }

    @Test
    void aRequestWhoseFilesAllEndedWithoutItsSettleIsEndedByTheNextSweep() {
        start(100 * SIZE);
        String v = volume("s");
        UUID id = submit(List.of(file("s0", v), file("s1", v)), 86_400);
        // an instance killed between a file's end and its request's settle: every file ended, the request open
        jdbc.update("UPDATE stage_request_file SET state = 'on_disk', finished_at = now() WHERE request_id = ?", id);
        jdbc.update("UPDATE stage_request SET state = 'active' WHERE id = ?", id);
        service.poll();
        assertThat(requestState(id)).isEqualTo("done");
        assertThat(jdbc.queryForObject("SELECT completed_at IS NOT NULL FROM stage_request WHERE id = ?", Boolean.class, id)).isTrue();
    }

    @Test
    void cancellingARequestCancelsTheTransfersOfItsFilesAlreadyHandedOn() {
        start(100 * SIZE, 1, transfers);
        String v = volume("x");
        UUID id = requests.submit("it", new NewStageRequest(null, List.of(file("x0", v)), null, 86_400L,
                "gsiftp://dest.example.org:2811/data/", "atlas")).request().id();
        submitted.add(id);
        for (int i = 0; i < 200 && !states(id).equals(Map.of("transferring", 1L)); i++) {
            service.poll();
            clock.advance(Duration.ofSeconds(5));
        }
        assertThat(states(id)).isEqualTo(Map.of("transferring", 1L));
        requests.cancel(id, null);
        service.poll();
        assertThat(jdbc.queryForList("SELECT state FROM transfer_job WHERE correlation LIKE ?", String.class, "stage:" + id + ":%"))
                .containsExactly("cancelled");
    }
}
