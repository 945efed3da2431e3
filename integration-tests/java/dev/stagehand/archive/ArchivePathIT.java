package dev.stagehand.archive;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.stagehand.ItDb;
import dev.stagehand.archive.internal.ArchiveFlusher;
import dev.stagehand.archive.internal.JdbcArchiveBuffer;
import dev.stagehand.archive.internal.LandingWatcher;
import dev.stagehand.cache.CacheProperties;
import dev.stagehand.cache.Checksums;
import dev.stagehand.cache.DiskCache;
import dev.stagehand.platform.EntryError;
import dev.stagehand.platform.VirtualClock;
import dev.stagehand.recall.RecallProperties;
import dev.stagehand.recall.StageRequests;
import dev.stagehand.recall.StageRequests.NewStageRequest;
import dev.stagehand.recall.service.RecallService;
import dev.stagehand.tape.DriveRoles;
import dev.stagehand.tape.DriveState;
import dev.stagehand.tape.FaultPlan;
import dev.stagehand.tape.SimulatedLibrary;
import dev.stagehand.tape.TapeModel;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.transaction.support.TransactionTemplate;
import org.springframework.util.unit.DataSize;

/**
 * The archive path on PostgreSQL and the simulated library (virtual clock): registration, family
 * co-location and write order, segments in the catalog, read-back through the recall path with matching
 * checksums, two copies on different volumes, back-pressure and eviction, and write failures.
 */
// the same context as PipelineIT (each distinct context keeps a connection pool open for the whole run)
@SpringBootTest(properties = {"stagehand.recall.enabled=false", "stagehand.transfer.queue.enabled=false"})
class ArchivePathIT {

    static final long MB = 1_000_000;

    @Autowired JdbcTemplate jdbc;
    @Autowired JdbcClient db;
    @Autowired TransactionTemplate tx;
    @Autowired StageRequests requests;

    @TempDir Path tmp;

    final String tag = UUID.randomUUID().toString().substring(0, 8);
    final VirtualClock clock = new VirtualClock();
    final FaultPlan faults = new FaultPlan();
    final List<Object> events = Collections.synchronizedList(new ArrayList<>());
    Path landing;
    /** How long a flush claim lasts unless renewed (wall clock: the database's now()). */
    Duration lease = Duration.ofMinutes(10);
    SimulatedLibrary lib;
    /** Mounts the library started, as "drive volume". */
    final List<String> mountsStarted = Collections.synchronizedList(new ArrayList<>());
    JdbcArchiveBuffer buffer;
    ArchiveFlusher flusher;
    RecallService recall;

    /** IT classes share the database: archive work other tests left must not be flushed or counted here. */
    @BeforeEach
    void retireLeftovers() {
        ItDb.retireArchiveBuffer(jdbc);
        jdbc.update("UPDATE archive_volume SET family = coalesce(family, 'retired'), copy_no = coalesce(copy_no, 1), state = 'full', "
                + "claimed_by = NULL WHERE state <> 'full'");
    }

    @AfterEach
    void stop() {
        jdbc.execute("DROP TRIGGER IF EXISTS it_fault ON segment");
        jdbc.execute("DROP TRIGGER IF EXISTS it_fault ON archive_copy");
        if (recall != null) recall.stop();
        if (lib != null) lib.close();
        retireLeftovers(); // nor leave any for other tests' flushers
    }

    static ArchiveProperties props(Path landing, long capacity, double high, double low, long volumeCapacity, List<String> pool,
                                   Duration retryBackoff, Duration lease) {
        return new ArchiveProperties(true, landing, DataSize.ofBytes(capacity), high, low, Duration.ofSeconds(30), 10_000, "it",
                Map.of("single", 1, "dual", 2), "single", Map.of(), DataSize.ofBytes(volumeCapacity),
                new ArchiveProperties.Pool("X", 0, pool),
                new ArchiveProperties.Flush(Duration.ZERO, DataSize.ofBytes(1), Duration.ZERO, DataSize.ofGigabytes(1), 5000,
                        lease, retryBackoff, Duration.ZERO),
                new ArchiveProperties.Watch(false, Duration.ofSeconds(10)), Duration.ofSeconds(30), "it-" + UUID.randomUUID());
    }

    /** A library of {@code drives} drives, the last {@code writeDrives} writing; volumes of {@code volumeCapacity} bytes. */
    void start(int drives, int writeDrives, long volumeCapacity, int poolSize, long bufferCapacity, List<EvictionHold> holds) {
        landing = tmp.resolve("landing");
        TapeModel small = TapeModel.lto9().withCapacity(volumeCapacity);
        lib = SimulatedLibrary.builder(clock).name("a" + tag).drives(drives).accessors(1).model(small)
                .root(tmp.resolve("tape")).faults(faults)
                .events(new dev.stagehand.tape.LibraryEvents() {
                    @Override public void mountStarted(String drive, String volume, Instant at) {
                        mountsStarted.add(drive + " " + volume);
                    }
                }).build();
        List<String> pool = new ArrayList<>();
        for (int i = 1; i <= poolSize; i++) pool.add(String.format("A%s%02d", tag, i));
        ArchiveProperties p = props(landing, bufferCapacity, 0.8, 0.5, volumeCapacity, pool, Duration.ZERO, lease);
        buffer = new JdbcArchiveBuffer(jdbc, tx, p, volumeCapacity, holds);
        DriveRoles roles = new DriveRoles(writeDrives);
        flusher = new ArchiveFlusher(jdbc, tx, lib, roles.writeDrives(lib.layout()), p, volumeCapacity, events::add, p.instanceId());
        flusher.start();
        Path cacheDir = tmp.resolve("cache");
        Clock c = new Clock() {
            @Override public ZoneId getZone() { return ZoneOffset.UTC; }
            @Override public Clock withZone(ZoneId zone) { return this; }
            @Override public Instant instant() { return clock.now(); }
        };
        DiskCache cache = new DiskCache(db, tx, new CacheProperties(List.of(new CacheProperties.Directory(cacheDir,
                DataSize.ofGigabytes(1), true)), "arc-" + tag), c, null);
        cache.start();
        recall = new RecallService(jdbc, roles.forReading(lib), clock, small, new RecallProperties(true, "tape-aware", 100 * MB,
                Duration.ZERO, Duration.ofMinutes(10), "arc-" + tag, 500_000_000_000L, 10_000, Duration.ofMinutes(5),
                Duration.ofHours(4), Duration.ofMinutes(5), 2_000_000_000_000L, 20_000, 4, Map.of(), Map.of()), cache);
        recall.start();
    }

    /** Writes a file of random bytes into the landing area; returns its absolute path. */
    Path land(String rel, long size) throws IOException {
        return landAt(tag + "/" + rel, size); // names unique to this run: the database outlives test runs
    }

    Path landAt(String rel, long size) throws IOException {
        Path p = landing.resolve(rel);
        Files.createDirectories(p.getParent());
        Random r = new Random(rel.hashCode());
        byte[] buf = new byte[64 * 1024];
        try (OutputStream out = Files.newOutputStream(p)) {
            for (long left = size; left > 0; ) {
                r.nextBytes(buf);
                int n = (int) Math.min(buf.length, left);
                out.write(buf, 0, n);
                left -= n;
            }
        }
        return p;
    }

    NewArchiveFile entry(Path p, String dataset, String storageClass) throws IOException {
        return new NewArchiveFile(p.toString(), Files.size(p), null, dataset, "it", null, storageClass);
    }

    /** Flush rounds on the virtual clock until {@code done} (or fails after many rounds). */
    void flushUntil(BooleanSupplier done) {
        for (int i = 0; i < 400; i++) {
            if (done.getAsBoolean()) return;
            flusher.poll();
            clock.advance(Duration.ofSeconds(20));
        }
        assertThat(done.getAsBoolean()).as(() -> "flushing finished; this test's copies: " + copies()).isTrue();
    }

    /** This test's tape copies, with who holds them and where they went (for failure messages). */
    String copies() {
        return jdbc.queryForList("""
                SELECT f.name, c.copy_no, c.state, c.attempts, c.claimed_by, v.label, v.library, c.error FROM archive_copy c
                  JOIN file f ON f.id = c.file_id LEFT JOIN volume v ON v.id = c.volume_id WHERE f.name LIKE ? ORDER BY f.name, c.copy_no""",
                "%" + tag + "%").toString();
    }

    long count(String sql, Object... args) {
        return jdbc.queryForObject(sql, Long.class, args);
    }

    long archived(List<Long> ids) {
        return count("SELECT count(*) FROM archive_file WHERE file_id = ANY(?) AND state IN ('archived', 'evictable', 'evicted')",
                (Object) ids.toArray(Long[]::new));
    }

    record Seg(long fileId, String volume, long offset, int copy) {}

    List<Seg> segments(List<Long> ids) {
        return jdbc.query("""
                SELECT c.file_id, v.label, s.offset_bytes, c.copy_no FROM archive_copy c
                  JOIN segment s ON s.file_id = c.file_id AND s.volume_id = c.volume_id JOIN volume v ON v.id = s.volume_id
                 WHERE c.file_id = ANY(?) AND c.state = 'done' ORDER BY c.copy_no, c.seq""",
                (rs, i) -> new Seg(rs.getLong(1), rs.getString(2), rs.getLong(3), rs.getInt(4)), (Object) ids.toArray(Long[]::new));
    }

    @Test
    void aDatasetLandsCoLocatedInWriteOrderAndIsRecalledWithMatchingChecksums() throws Exception {
        start(3, 1, 25 * MB, 6, 500 * MB, List.of());
        // two datasets registered interleaved: each must still land on its own volumes, in its own order
        List<NewArchiveFile> files = new ArrayList<>();
        List<Path> a = new ArrayList<>(), b = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            a.add(land("raw/run1/a" + i, MB));
            files.add(entry(a.get(i), "ds-a-" + tag, null));
            if (i < 10) {
                b.add(land("raw/run1/b" + i, MB));
                files.add(entry(b.get(i), "ds-b-" + tag, null));
            }
        }
        List<ArchiveBuffer.ArchiveFileStatus> st = buffer.register(files);
        assertThat(st).hasSize(50).allSatisfy(s -> {
            assertThat(s.state()).isEqualTo("queued");
            assertThat(s.adler32()).isEqualTo(Checksums.adler32Of(Path.of(s.path())));
        });
        // the catalog has them, with their dataset and checksum
        assertThat(count("SELECT count(*) FROM file f JOIN dataset d ON d.id = f.dataset_id WHERE d.name = ? AND f.adler32 IS NOT NULL",
                "ds-a-" + tag)).isEqualTo(40);
        List<Long> aIds = st.stream().filter(s -> s.dataset().equals("ds-a-" + tag)).map(ArchiveBuffer.ArchiveFileStatus::fileId).toList();
        List<Long> bIds = st.stream().filter(s -> s.dataset().equals("ds-b-" + tag)).map(ArchiveBuffer.ArchiveFileStatus::fileId).toList();
        List<Long> all = st.stream().map(ArchiveBuffer.ArchiveFileStatus::fileId).toList();

        flushUntil(() -> archived(all) == 50 && !flusher.busy());

        // as few volumes as possible: 40 MB on 25 MB volumes is 2 volumes, 10 MB is 1; no volume shared
        List<Seg> sa = segments(aIds), sb = segments(bIds);
        Set<String> va = new HashSet<>(), vb = new HashSet<>();
        sa.forEach(s -> va.add(s.volume()));
        sb.forEach(s -> vb.add(s.volume()));
        assertThat(va).hasSize(2);
        assertThat(vb).hasSize(1);
        assertThat(va).doesNotContainAnyElementsOf(vb);
        // write order: registration order is tape order, the first volume filled before the second
        assertWriteOrder(sa, aIds);
        assertWriteOrder(sb, bIds);
        assertThat(buffer.volumes("ds-a-" + tag)).extracting(ArchiveBuffer.FamilyVolume::state).containsExactly("full", "open");
        assertThat(buffer.volumes("ds-a-" + tag).get(0).files()).isEqualTo(25);
        // one event per archived file, and the query agrees
        assertThat(events).hasSize(50);
        assertThat(buffer.archivedSince(Instant.EPOCH, 100_000).stream().map(FileArchived::fileId).toList()).containsAll(all);
        assertThat(buffer.locate(aIds.get(0))).contains(a.get(0).toRealPath());
        // the write drive let its last volume go: recall can mount it
        assertThat(lib.drive(lib.layout().drives().get(2)).state()).isEqualTo(DriveState.EMPTY);

        // read back through the recall path (stage requests, recall scheduler, disk cache verifying Adler32)
        List<String> names = jdbc.queryForList("SELECT name FROM file WHERE id = ANY(?) ORDER BY id", String.class,
                (Object) all.toArray(Long[]::new));
        UUID req = requests.submit("it", new NewStageRequest(null, names, null, 3600L, null, "it")).request().id();
        for (int i = 0; i < 300; i++) {
            recall.poll();
            clock.advance(Duration.ofSeconds(20));
            if ("done".equals(jdbc.queryForObject("SELECT state FROM stage_request WHERE id = ?", String.class, req))) break;
        }
        assertThat(jdbc.queryForObject("SELECT state FROM stage_request WHERE id = ?", String.class, req)).isEqualTo("done");
        assertThat(count("SELECT count(*) FROM stage_request_file WHERE request_id = ? AND state = 'on_disk'", req)).isEqualTo(50);
        // the staged copies have the very bytes that landed
        jdbc.query("""
                SELECT cf.path, a.path FROM cache_file cf JOIN archive_file a ON a.file_id = cf.file_id
                 WHERE cf.file_id = ANY(?) AND cf.state = 'verified'""", rs -> {
            try {
                assertThat(Checksums.adler32Of(Path.of(rs.getString(1)))).isEqualTo(Checksums.adler32Of(Path.of(rs.getString(2))));
                assertThat(Files.mismatch(Path.of(rs.getString(1)), Path.of(rs.getString(2)))).isEqualTo(-1L);
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        }, (Object) all.toArray(Long[]::new));
        assertThat(count("SELECT count(*) FROM cache_file WHERE file_id = ANY(?) AND state = 'verified'",
                (Object) all.toArray(Long[]::new))).isEqualTo(50);
        recall.stop();
        recall = null;
        requests.release(req, null); // unpin: the copies may go from the cache
    }

    /** Segments (in copy, sequence order) run along the volumes in registration order with growing offsets. */
    static void assertWriteOrder(List<Seg> segs, List<Long> idsInRegistrationOrder) {
        assertThat(segs.stream().map(Seg::fileId).toList()).isEqualTo(idsInRegistrationOrder);
        for (int i = 1; i < segs.size(); i++) {
            Seg p = segs.get(i - 1), s = segs.get(i);
            if (p.volume().equals(s.volume())) assertThat(s.offset()).isGreaterThan(p.offset());
            else assertThat(segs.subList(i, segs.size())).noneMatch(x -> x.volume().equals(p.volume()));
        }
    }

    @Test
    void onlyTheConfiguredPoolOfThisLibraryIsWritten() throws Exception {
        // a configured label the catalog already knows in another library is left out of the pool
        jdbc.update("INSERT INTO volume (label, library) VALUES (?, 'elsewhere')", "A" + tag + "01");
        start(4, 1, 50 * MB, 3, 500 * MB, List.of());
        // blanks an earlier configuration left: one of this library outside today's pool, one of another
        // library; both sort before the pool's labels
        for (String[] v : new String[][] {{"A" + tag + "00", lib.layout().name()}, {"0" + tag, "elsewhere"}}) {
            jdbc.update("INSERT INTO volume (label, library) VALUES (?, ?)", v[0], v[1]);
            jdbc.update("INSERT INTO archive_volume (volume_id) SELECT id FROM volume WHERE label = ?", v[0]);
        }
        List<NewArchiveFile> files = new ArrayList<>();
        for (int i = 0; i < 4; i++) files.add(entry(land("pool/f" + i, 2 * MB), "ds-pool-" + tag, "single"));
        List<Long> ids = buffer.register(files).stream().map(ArchiveBuffer.ArchiveFileStatus::fileId).toList();
        flushUntil(() -> archived(ids) == 4 && !flusher.busy());
        assertThat(segments(ids)).extracting(Seg::volume).containsOnly("A" + tag + "02");
        assertThat(jdbc.queryForList("""
                SELECT v.label FROM archive_volume av JOIN volume v ON v.id = av.volume_id
                 WHERE v.label IN (?, ?, ?) AND av.state = 'blank' ORDER BY v.label""", String.class,
                "A" + tag + "00", "0" + tag, "A" + tag + "01")).containsExactly("0" + tag, "A" + tag + "00");
        assertThat(count("SELECT count(*) FROM archive_volume av JOIN volume v ON v.id = av.volume_id WHERE v.label = ?",
                "A" + tag + "01")).isZero();
    }

    @Test
    void aTwoCopyStorageClassLandsOnTwoDifferentVolumes() throws Exception {
        start(4, 2, 50 * MB, 6, 500 * MB, List.of());
        List<NewArchiveFile> files = new ArrayList<>();
        for (int i = 0; i < 12; i++) files.add(entry(land("dual/f" + i, 2 * MB), "ds-dual-" + tag, "dual"));
        List<Long> ids = buffer.register(files).stream().map(ArchiveBuffer.ArchiveFileStatus::fileId).toList();
        assertThat(count("SELECT count(*) FROM archive_copy WHERE file_id = ANY(?)", (Object) ids.toArray(Long[]::new))).isEqualTo(24);
        flushUntil(() -> archived(ids) == 12 && !flusher.busy());
        List<Seg> segs = segments(ids);
        assertThat(segs).hasSize(24);
        for (long id : ids) {
            List<Seg> mine = segs.stream().filter(s -> s.fileId() == id).toList();
            assertThat(mine).extracting(Seg::copy).containsExactlyInAnyOrder(1, 2);
            assertThat(mine.get(0).volume()).isNotEqualTo(mine.get(1).volume());
        }
        // every copy-1 volume differs from every copy-2 volume, and each copy is on one volume only
        Set<String> v1 = new HashSet<>(), v2 = new HashSet<>();
        segs.forEach(s -> (s.copy() == 1 ? v1 : v2).add(s.volume()));
        assertThat(v1).hasSize(1);
        assertThat(v2).hasSize(1);
        assertThat(v1).doesNotContainAnyElementsOf(v2);
        assertThat(buffer.file(ids.get(0)).orElseThrow().segments()).hasSize(2);
    }

    @Test
    void theBufferRefusesPastItsHighWaterMarkAndEvictsOnlyReleasedArchivedFiles() throws Exception {
        Set<Long> held = Collections.synchronizedSet(new HashSet<>());
        EvictionHold hold = ids -> ids.stream().filter(id -> !held.contains(id)).toList();
        start(3, 1, 100 * MB, 2, 10 * MB, List.of(hold)); // high-water 8 MB, low-water 5 MB
        List<NewArchiveFile> first = new ArrayList<>();
        for (int i = 0; i < 7; i++) first.add(entry(land("bp/f" + i, MB), "ds-bp-" + tag, null));
        List<Long> ids = new ArrayList<>(buffer.register(first).stream().map(ArchiveBuffer.ArchiveFileStatus::fileId).toList());
        List<NewArchiveFile> more = List.of(entry(land("bp/g0", MB), "ds-bp-" + tag, null), entry(land("bp/g1", MB), "ds-bp-" + tag, null));
        long files = count("SELECT count(*) FROM file");
        assertThatThrownBy(() -> buffer.register(more)).isInstanceOfSatisfying(ArchiveRejected.class, e -> {
            assertThat(e.kind()).isEqualTo(ArchiveRejected.Kind.BUFFER_FULL);
            assertThat(e.retryAfter()).isPositive();
            assertThat(e.getMessage()).contains("high-water mark");
        });
        assertThat(count("SELECT count(*) FROM file")).isEqualTo(files); // nothing stored
        assertThat(Files.exists(Path.of(more.get(0).path()))).isTrue(); // nothing dropped

        // not archived yet: eviction leaves everything, however full the buffer is
        assertThat(buffer.evict()).isZero();
        held.add(ids.get(0));
        flushUntil(() -> archived(ids) == 7 && !flusher.busy());
        // 7 MB is above the 5 MB low-water mark: the oldest released files go, the held one stays
        int evicted = buffer.evict();
        assertThat(evicted).isEqualTo(2);
        assertThat(buffer.file(ids.get(0)).orElseThrow().state()).isIn("archived", "evictable"); // never evicted while held
        assertThat(buffer.locate(ids.get(0))).isPresent();
        assertThat(buffer.file(ids.get(1)).orElseThrow().state()).isEqualTo("evicted");
        assertThat(buffer.file(ids.get(2)).orElseThrow().state()).isEqualTo("evicted");
        assertThat(buffer.locate(ids.get(1))).isEmpty();
        assertThat(Files.exists(Path.of(buffer.file(ids.get(1)).orElseThrow().path()))).isFalse();
        assertThat(buffer.usage().usedBytes()).isEqualTo(5 * MB);
        // room again: the producer's retry is accepted
        assertThat(buffer.register(more)).hasSize(2);
        assertThat(buffer.usage().usedBytes()).isEqualTo(7 * MB);
    }

    /**
     * Eviction deletes the bytes that were registered (and are on tape), not bytes written over them since: the same
     * name landed again with other content (refused registration while the first was there) stays, never on tape.
     */
    @Test
    void evictionLeavesInPlaceBytesWrittenOverTheRegisteredFile() throws Exception {
        start(3, 1, 100 * MB, 2, 10 * MB, List.of()); // high-water 8 MB, low-water 5 MB
        List<Path> paths = new ArrayList<>();
        List<NewArchiveFile> files = new ArrayList<>();
        for (int i = 0; i < 7; i++) {
            paths.add(land("ow/f" + i, MB));
            files.add(entry(paths.get(i), "ds-ow-" + tag, null));
        }
        List<Long> ids = buffer.register(files).stream().map(ArchiveBuffer.ArchiveFileStatus::fileId).toList();
        flushUntil(() -> archived(ids) == 7 && !flusher.busy());
        byte[] other = new byte[(int) MB];
        new Random(9).nextBytes(other);
        Files.write(paths.get(0), other); // its producer wrote the same name again: same size, other bytes
        Files.setLastModifiedTime(paths.get(1), java.nio.file.attribute.FileTime.from(Instant.now().plusSeconds(60))); // touched only

        assertThat(buffer.evict()).as("7 MB down to the 5 MB low-water mark").isEqualTo(2);
        assertThat(state(ids.get(0))).isEqualTo("evicted");
        assertThat(state(ids.get(1))).isEqualTo("evicted");
        assertThat(Files.readAllBytes(paths.get(0))).as("the new bytes, never on tape").isEqualTo(other);
        assertThat(paths.get(1)).as("the registered bytes, on tape").doesNotExist();
        assertThat(paths.get(2)).exists();
    }

    @Test
    void aWriteFailureIsRetriedAndNothingCountsAsArchivedBeforeItsSegmentIsIn() throws Exception {
        start(3, 1, 100 * MB, 3, 500 * MB, List.of());
        String writer = lib.layout().drives().get(2);
        faults.failDrive(writer);
        List<NewArchiveFile> files = new ArrayList<>();
        for (int i = 0; i < 5; i++) files.add(entry(land("fail/f" + i, 4 * MB), "ds-fail-" + tag, null));
        List<Long> ids = buffer.register(files).stream().map(ArchiveBuffer.ArchiveFileStatus::fileId).toList();
        flushUntil(() -> lib.drive(writer).state() == DriveState.FAILED && !flusher.busy());
        flusher.poll();
        clock.advance(Duration.ofMinutes(5));
        Long[] arr = ids.toArray(Long[]::new);
        assertThat(count("SELECT count(*) FROM archive_file WHERE file_id = ANY(?) AND state IN ('archived', 'evictable', 'evicted')",
                (Object) arr)).isZero();
        assertThat(count("SELECT count(*) FROM segment WHERE file_id = ANY(?)", (Object) arr)).isZero();
        ArchiveBuffer.ArchiveFileStatus first = buffer.file(ids.get(0)).orElseThrow();
        assertThat(first.state()).isEqualTo("queued");
        assertThat(first.attempts()).isEqualTo(1);
        assertThat(first.error()).containsIgnoringCase("drive");
        assertThat(buffer.evict()).isZero();

        lib.recover(writer);
        clock.advance(Duration.ofMinutes(1));
        flushUntil(() -> archived(ids) == 5 && !flusher.busy());
        List<Seg> segs = segments(ids);
        assertThat(segs).hasSize(5);
        assertWriteOrder(segs, ids);
        assertThat(buffer.file(ids.get(0)).orElseThrow().attempts()).isEqualTo(1); // the failure stays on record
    }

    /** Makes the database refuse, with an error, the {@code event}s (INSERT, UPDATE) of {@code table} rows {@code when} selects. */
    void refuse(String event, String table, String when) {
        jdbc.execute("""
                CREATE OR REPLACE FUNCTION it_fault() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN RAISE EXCEPTION 'refused by the test'; END $$""");
        jdbc.execute("CREATE TRIGGER it_fault BEFORE " + event + " ON " + table + " FOR EACH ROW WHEN (" + when
                + ") EXECUTE FUNCTION it_fault()");
    }

    /** Flush rounds, with wall-clock time passing (leases are on the database's clock), until {@code done} or 30 s. */
    void flushUntilWallClock(BooleanSupplier done) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!done.getAsBoolean() && System.nanoTime() < deadline) {
            flusher.poll();
            clock.advance(Duration.ofSeconds(20));
            Thread.sleep(200);
        }
        assertThat(done.getAsBoolean()).as(() -> "flushing finished; this test's copies: " + copies()).isTrue();
    }

    /**
     * A write whose record fails (the database refuses it) leaves its copy 'writing' only until its claim lapses:
     * the claim is no longer renewed, so the copy is queued and written again, and the family goes on.
     */
    @Test
    void aWriteWhoseRecordFailsIsWrittenAgainOnceItsClaimLapses() throws Exception {
        lease = Duration.ofSeconds(2);
        start(3, 1, 100 * MB, 2, 500 * MB, List.of());
        List<NewArchiveFile> files = new ArrayList<>();
        for (int i = 0; i < 3; i++) files.add(entry(land("rec/f" + i, MB), "ds-rec-" + tag, null));
        List<Long> ids = buffer.register(files).stream().map(ArchiveBuffer.ArchiveFileStatus::fileId).toList();
        refuse("INSERT", "segment", "NEW.file_id = " + ids.get(1));
        flushUntil(() -> archived(ids) == 2 && !flusher.busy());
        assertThat(count("SELECT count(*) FROM archive_copy WHERE file_id = ? AND state = 'writing'", ids.get(1))).isEqualTo(1);
        jdbc.execute("DROP TRIGGER it_fault ON segment");

        flushUntilWallClock(() -> archived(ids) == 3 && !flusher.busy());
        assertThat(segments(ids)).hasSize(3);
        assertThat(count("SELECT count(*) FROM archive_copy WHERE file_id = ANY(?) AND state <> 'done'",
                (Object) ids.toArray(Long[]::new))).isZero();
    }

    /**
     * Polls until the flusher has claimed {@code id} (its mount under way on the virtual clock), then gives the claim to
     * another instance: what a flusher whose lease lapsed while it stalled finds.
     */
    void claimThenTakeOver(long id) {
        for (int i = 0; i < 20 && !flusher.busy(); i++) flusher.poll();
        assertThat(flusher.busy()).isTrue();
        jdbc.update("UPDATE archive_copy SET claimed_by = 'it-taken-over', lease_until = now() + interval '1 hour' WHERE file_id = ?", id);
    }

    /** The test's clean-up: fails {@code id}'s copy and file for good, the claim given away released. */
    void failForGood(long id) {
        jdbc.update("UPDATE archive_copy SET state = 'failed', claimed_by = NULL, lease_until = NULL, volume_id = NULL WHERE file_id = ?", id);
        jdbc.update("UPDATE archive_file SET state = 'failed' WHERE file_id = ?", id);
    }

    /**
     * A flusher whose claim lapsed and was taken over (it stalled past its lease: a long pause, the database away)
     * and whose write then fails leaves the new holder's claim alone: it used to put the copy back in the queue
     * under that holder, for a third instance to write it again beside it.
     */
    @Test
    void aFailureAfterTheClaimWasTakenOverLeavesTheNewHoldersClaimAlone() throws Exception {
        start(3, 1, 100 * MB, 3, 500 * MB, List.of());
        String writer = lib.layout().drives().get(2);
        long id = registeredOne("over/f0", "ds-over-" + tag);
        String claim = "SELECT state || ' ' || coalesce(claimed_by, '-') FROM archive_copy WHERE file_id = ?";
        claimThenTakeOver(id);
        faults.failDrive(writer);
        for (int i = 0; i < 100 && flusher.busy(); i++) clock.advance(Duration.ofSeconds(20));
        assertThat(flusher.busy()).as("the failed list is done with").isFalse();
        try {
            assertThat(jdbc.queryForObject(claim, String.class, id)).isEqualTo("writing it-taken-over");
        } finally {
            failForGood(id);
        }
    }

    /**
     * A write whose result fails the file for good (its buffer file changed) after its claim lapsed and was taken over
     * leaves the new holder's claim and the file alone: the late result is discarded. It failed the copy under the
     * holder (and the file with it) while the holder was still writing it.
     */
    @Test
    void aFileIsNotFailedForGoodByAWriteWhoseClaimWasTakenOver() throws Exception {
        start(3, 1, 100 * MB, 3, 500 * MB, List.of());
        Path p = land("overfail/f0", MB);
        long id = buffer.register(List.of(entry(p, "ds-overfail-" + tag, null))).get(0).fileId();
        String claim = "SELECT state || ' ' || coalesce(claimed_by, '-') || ' ' || attempts FROM archive_copy WHERE file_id = ?";
        claimThenTakeOver(id);
        byte[] other = new byte[(int) MB];
        new Random(5).nextBytes(other);
        Files.write(p, other); // the tape copy will not match, and the buffer file no longer has the registered bytes
        try {
            for (int i = 0; i < 100 && flusher.busy(); i++) clock.advance(Duration.ofSeconds(20));
            assertThat(flusher.busy()).as("the late list is done with").isFalse();
            assertThat(jdbc.queryForObject(claim, String.class, id)).isEqualTo("writing it-taken-over 0");
            assertThat(state(id)).isEqualTo("writing");
        } finally {
            failForGood(id);
        }
    }

    /**
     * A tape copy that fails its checksum after its claim was taken over is not counted against the copy (nor fails it
     * for good at the last allowed mismatch): the copy is the new holder's. Its volume is still closed (the spot is bad
     * whoever holds the copy).
     */
    @Test
    void aChecksumMismatchAfterTheClaimWasTakenOverIsNotCounted() throws Exception {
        start(3, 1, 100 * MB, 3, 500 * MB, List.of());
        long id = registeredOne("overmm/f0", "ds-overmm-" + tag);
        faults.corruptWrite(buffer.file(id).orElseThrow().name());
        jdbc.update("UPDATE archive_copy SET mismatches = ? WHERE file_id = ?", 2, id); // one short of ArchiveFlusher.MAX_MISMATCHES (3): this one would fail it for good
        String claim = "SELECT state || ' ' || coalesce(claimed_by, '-') || ' ' || mismatches FROM archive_copy WHERE file_id = ?";
        claimThenTakeOver(id);
        try {
            for (int i = 0; i < 100 && flusher.busy(); i++) clock.advance(Duration.ofSeconds(20));
            assertThat(flusher.busy()).as("the late list is done with").isFalse();
            assertThat(jdbc.queryForObject(claim, String.class, id)).isEqualTo("writing it-taken-over 2");
            assertThat(state(id)).isEqualTo("writing");
            assertThat(buffer.volumes("ds-overmm-" + tag)).extracting(ArchiveBuffer.FamilyVolume::state).containsExactly("full");
        } finally {
            failForGood(id);
        }
    }

    /**
     * A write that lands after its claim lapsed and was taken over (this instance stalled past its lease) is discarded: the
     * copy keeps its new holder's claim and gets no segment beside the holder's, and the file is not archived by it. It
     * was recorded under the holder's feet ('done', the file archived while the holder still wrote or failed, then a
     * second segment). The file is not lost: written again once the holder lets go, numbered after the discarded bytes.
     */
    @Test
    void aWriteLandingAfterItsClaimWasTakenOverIsDiscarded() throws Exception {
        start(3, 1, 100 * MB, 3, 500 * MB, List.of());
        long first = registeredOne("late/f0", "ds-late-" + tag);
        flushUntil(() -> archived(List.of(first)) == 1 && !flusher.busy());
        long id = registeredOne("late/f1", "ds-late-" + tag);
        String claim = "SELECT state || ' ' || coalesce(claimed_by, '-') FROM archive_copy WHERE file_id = ?";
        claimThenTakeOver(id);
        for (int i = 0; i < 100 && flusher.busy(); i++) clock.advance(Duration.ofSeconds(20));
        assertThat(flusher.busy()).as("the late list is done with").isFalse();
        assertThat(jdbc.queryForObject(claim, String.class, id)).isEqualTo("writing it-taken-over");
        assertThat(count("SELECT count(*) FROM segment WHERE file_id = ?", id)).isZero();
        assertThat(state(id)).isEqualTo("writing");
        assertThat(events).noneMatch(e -> e instanceof FileArchived a && a.fileId() == id);

        // the holder lets go (its own write failed): the copy is written again, after the discarded bytes
        jdbc.update("UPDATE archive_copy SET state = 'queued', claimed_by = NULL, lease_until = NULL, volume_id = NULL WHERE file_id = ?", id);
        flushUntil(() -> archived(List.of(id)) == 1 && !flusher.busy());
        assertThat(buffer.file(id).orElseThrow().segments()).singleElement().satisfies(w -> {
            assertThat(w.volume()).isEqualTo(segments(List.of(first)).get(0).volume());
            assertThat(w.offsetBytes()).isEqualTo(2 * MB);
            assertThat(w.fseq()).as("the third tape file on its volume").isEqualTo(3);
        });
    }

    /**
     * A write on tape whose record never reached the catalog (a crash, or the record failing, in between) leaves a file
     * on the volume the catalog does not count: the next file's tape file number was one short, and every later one on
     * that volume. The next write finds the library's offset past the catalog's end of data: from there on the volume's
     * segments are recorded without a number (unknown) rather than a wrong one, and the family goes on writing it.
     */
    @Test
    void aWriteNotRecordedLeavesNoWrongFileSequenceNumbers() throws Exception {
        lease = Duration.ofSeconds(2);
        start(3, 1, 100 * MB, 2, 500 * MB, List.of());
        List<NewArchiveFile> files = new ArrayList<>();
        for (int i = 0; i < 3; i++) files.add(entry(land("fseq/f" + i, MB), "ds-fseq-" + tag, null));
        List<Long> ids = buffer.register(files).stream().map(ArchiveBuffer.ArchiveFileStatus::fileId).toList();
        refuse("INSERT", "segment", "NEW.file_id = " + ids.get(1));
        flushUntil(() -> archived(List.of(ids.get(0), ids.get(2))) == 2 && !flusher.busy());
        ArchiveBuffer.WrittenCopy third = buffer.file(ids.get(2)).orElseThrow().segments().get(0);
        assertThat(third.offsetBytes()).as("the third tape file: the second's bytes are before it").isEqualTo(2 * MB);
        assertThat(third.fseq()).as("not numbered as the second").isNull();
        jdbc.execute("DROP TRIGGER it_fault ON segment");

        flushUntilWallClock(() -> archived(ids) == 3 && !flusher.busy());
        ArchiveBuffer.WrittenCopy second = buffer.file(ids.get(1)).orElseThrow().segments().get(0);
        assertThat(second.volume()).isEqualTo(third.volume());
        assertThat(second.offsetBytes()).isEqualTo(3 * MB);
        assertThat(second.fseq()).isNull();
        assertThat(buffer.file(ids.get(0)).orElseThrow().segments().get(0).fseq()).isEqualTo(1);
        assertThat(buffer.volumes("ds-fseq-" + tag)).extracting(ArchiveBuffer.FamilyVolume::state).containsExactly("open");
    }

    /**
     * A write landing before the catalog's end of data (the volume written over, or a site script whose HSM reports no
     * byte positions, 0 for every file) leaves the numbers unknown but the volume open: closing it would have closed
     * every volume of such a script after its first file.
     */
    @Test
    void aWriteBeforeTheCatalogsEndOfDataLeavesTheVolumeOpenWithoutNumbers() throws Exception {
        start(3, 1, 100 * MB, 2, 500 * MB, List.of());
        long first = buffer.register(List.of(entry(land("behind/f0", MB), "ds-behind-" + tag, null))).get(0).fileId();
        flushUntil(() -> archived(List.of(first)) == 1 && !flusher.busy());
        assertThat(buffer.file(first).orElseThrow().segments().get(0).fseq()).isEqualTo(1);
        jdbc.update("""
                UPDATE archive_volume SET end_of_data = end_of_data + 10000000
                 WHERE volume_id = (SELECT volume_id FROM segment WHERE file_id = ?)""", first);
        long second = buffer.register(List.of(entry(land("behind/f1", MB), "ds-behind-" + tag, null))).get(0).fileId();
        flushUntil(() -> archived(List.of(second)) == 1 && !flusher.busy());
        ArchiveBuffer.WrittenCopy w = buffer.file(second).orElseThrow().segments().get(0);
        assertThat(w.volume()).isEqualTo(buffer.file(first).orElseThrow().segments().get(0).volume());
        assertThat(w.offsetBytes()).isEqualTo(MB);
        assertThat(w.fseq()).as("numbers unknown from here on").isNull();
        assertThat(buffer.volumes("ds-behind-" + tag)).extracting(ArchiveBuffer.FamilyVolume::state).containsExactly("open");
    }

    /**
     * A write the catalog recorded that the tape does not have (its end of data ends before it: a failed flush, a driver
     * crash): the library's next write lands where that one is recorded, and the segments from there on point at
     * nothing. They are marked suspect, as a bad checksum does, and the copy is written again from the buffer. They
     * stayed ok: a recall read whatever the tape held there, and the file left the buffer with no good copy.
     */
    @Test
    void segmentsBeyondTheLibrarysEndOfDataAreMarkedSuspectAndWrittenAgain() throws Exception {
        start(3, 1, 100 * MB, 2, 500 * MB, List.of());
        List<NewArchiveFile> files = new ArrayList<>();
        for (int i = 0; i < 2; i++) files.add(entry(land("eod/f" + i, MB), "ds-eod-" + tag, null));
        List<Long> ids = buffer.register(files).stream().map(ArchiveBuffer.ArchiveFileStatus::fileId).toList();
        flushUntil(() -> archived(ids) == 2 && !flusher.busy());
        ArchiveBuffer.WrittenCopy lost = buffer.file(ids.get(1)).orElseThrow().segments().get(0);
        assertThat(lost.offsetBytes()).isEqualTo(MB);
        lib.setEndOfData(lost.volume(), MB); // the tape ends after the first file: the second's write is not on it

        long next = buffer.register(List.of(entry(land("eod/f2", MB), "ds-eod-" + tag, null))).get(0).fileId();
        flushUntil(() -> archived(List.of(next)) == 1 && !flusher.busy());
        ArchiveBuffer.WrittenCopy w = buffer.file(next).orElseThrow().segments().get(0);
        assertThat(w.volume()).isEqualTo(lost.volume());
        assertThat(w.offsetBytes()).as("where the library's end of data was").isEqualTo(MB);
        String segState = "SELECT state FROM segment WHERE file_id = ?";
        assertThat(jdbc.queryForObject(segState, String.class, ids.get(1))).as("points at nothing").isEqualTo("suspect");
        assertThat(jdbc.queryForObject(segState, String.class, ids.get(0))).isEqualTo("ok");
        assertThat(jdbc.queryForObject(segState, String.class, next)).isEqualTo("ok");

        buffer.evict(); // the eviction round queues bad copies of files still in the buffer
        flushUntil(() -> state(ids.get(1)).equals("archived") && !flusher.busy());
        assertThat(buffer.file(ids.get(1)).orElseThrow().segments()).singleElement().satisfies(again -> {
            assertThat(again.offsetBytes()).as("written again after the last write").isEqualTo(2 * MB);
            assertThat(jdbc.queryForObject(segState, String.class, ids.get(1))).isEqualTo("ok");
        });
    }

    /**
     * A volume whose library reports byte positions, written again from its start (relabelled, reclaimed by the HSM):
     * the next write lands at offset 0, before every segment the catalog has there, and they are all marked suspect.
     * Offset 0 alone is skipped only on volumes without positions (a script answering 0 for every file).
     */
    @Test
    void aWriteAtTheStartOfAVolumeWithPositionsMarksItsEarlierSegmentsSuspect() throws Exception {
        start(3, 1, 100 * MB, 2, 500 * MB, List.of());
        List<NewArchiveFile> files = new ArrayList<>();
        for (int i = 0; i < 2; i++) files.add(entry(land("bot/f" + i, MB), "ds-bot-" + tag, null));
        List<Long> ids = buffer.register(files).stream().map(ArchiveBuffer.ArchiveFileStatus::fileId).toList();
        flushUntil(() -> archived(ids) == 2 && !flusher.busy());
        String volume = buffer.file(ids.get(0)).orElseThrow().segments().get(0).volume();
        lib.setEndOfData(volume, 0); // the tape holds nothing any more

        long next = buffer.register(List.of(entry(land("bot/f2", MB), "ds-bot-" + tag, null))).get(0).fileId();
        flushUntil(() -> archived(List.of(next)) == 1 && !flusher.busy());
        ArchiveBuffer.WrittenCopy w = buffer.file(next).orElseThrow().segments().get(0);
        assertThat(w.volume()).isEqualTo(volume);
        assertThat(w.offsetBytes()).as("the library's end of data").isZero();
        String segState = "SELECT state FROM segment WHERE file_id = ?";
        assertThat(jdbc.queryForObject(segState, String.class, ids.get(0))).as("written over").isEqualTo("suspect");
        assertThat(jdbc.queryForObject(segState, String.class, ids.get(1))).as("written over").isEqualTo("suspect");
        assertThat(jdbc.queryForObject(segState, String.class, next)).isEqualTo("ok");
    }

    /** A mount failure whose requeue fails still frees the drive; the claims lapse and the files are written. */
    @Test
    void aMountFailureWhoseRequeueFailsStillFreesTheDrive() throws Exception {
        lease = Duration.ofSeconds(2);
        start(3, 1, 100 * MB, 2, 500 * MB, List.of());
        faults.missingVolume("A" + tag + "01"); // the first blank of the pool: its mount fails
        refuse("UPDATE", "archive_copy", "OLD.state = 'writing' AND NEW.state = 'queued' AND NEW.family = 'ds-mnt-" + tag + "'");
        List<NewArchiveFile> files = new ArrayList<>();
        for (int i = 0; i < 2; i++) files.add(entry(land("mnt/f" + i, MB), "ds-mnt-" + tag, null));
        List<Long> ids = buffer.register(files).stream().map(ArchiveBuffer.ArchiveFileStatus::fileId).toList();
        flusher.poll();
        for (int i = 0; i < 50 && flusher.busy(); i++) {
            clock.advance(Duration.ofSeconds(20));
            Thread.sleep(20);
        }
        assertThat(flusher.busy()).as("the write drive is free after the failed mount").isFalse();
        assertThat(count("SELECT count(*) FROM archive_copy WHERE file_id = ANY(?) AND state = 'writing'",
                (Object) ids.toArray(Long[]::new))).as("the requeue was refused").isEqualTo(2);
        jdbc.execute("DROP TRIGGER it_fault ON archive_copy");
        faults.restoreVolume("A" + tag + "01");

        flushUntilWallClock(() -> archived(ids) == 2 && !flusher.busy());
        assertThat(segments(ids)).hasSize(2);
    }

    String state(long id) {
        return buffer.file(id).orElseThrow().state();
    }

    /**
     * With no retry backoff, a mount failing at once (the family's volume is in a read drive) is retried by the next
     * poll, not from within the failed one: the failure and the poll called each other until the stack overflowed.
     * A volume busy in another drive is not unavailable: it stays the family's, and is written once free.
     */
    @Test
    void aMountFailingAtOnceWithNoBackoffIsRetriedByTheNextPoll() throws Exception {
        start(3, 1, 100 * MB, 2, 500 * MB, List.of());
        String reader = lib.layout().drives().get(0), writer = lib.layout().drives().get(2);
        String v1 = "A" + tag + "01";
        List<Long> first = List.of(registeredOne("zb/f0", "ds-zb-" + tag));
        flushUntil(() -> archived(first) == 1 && !flusher.busy() && lib.drive(writer).state() == DriveState.EMPTY);
        recall.stop(); // the read drive is the test's
        recall = null;
        lib.mount(reader, v1);
        for (int i = 0; i < 100 && lib.drive(reader).state() != DriveState.MOUNTED_IDLE; i++) clock.advance(Duration.ofSeconds(20));
        assertThat(lib.drive(reader).state()).isEqualTo(DriveState.MOUNTED_IDLE);

        long id = registeredOne("zb/f1", "ds-zb-" + tag);
        for (int i = 1; i <= 3; i++) {
            flusher.poll(); // the mount fails at once: once per poll
            assertThat(flusher.busy()).isFalse();
            assertThat(buffer.file(id).orElseThrow().attempts()).as(this::copies).isEqualTo(i);
            assertThat(state(id)).isEqualTo("queued");
        }
        assertThat(buffer.file(id).orElseThrow().error()).contains("volume is in drive");
        assertThat(volumeState(v1)).startsWith("available open");

        lib.dismount(reader);
        flushUntil(() -> archived(List.of(id)) == 1 && !flusher.busy());
        assertThat(segments(List.of(id))).extracting(Seg::volume).containsExactly(v1);
    }

    /** Lands a file of 1 MB at {@code name} and registers it for {@code family}; its id. */
    long registeredOne(String name, String family) throws IOException {
        return buffer.register(List.of(entry(land(name, MB), family, null))).getFirst().fileId();
    }

    String volumeState(String label) {
        return jdbc.queryForObject("""
                SELECT v.state || ' ' || av.state || ' ' || coalesce(v.state_reason, '') FROM volume v
                  JOIN archive_volume av ON av.volume_id = v.id WHERE v.label = ?""", String.class, label);
    }

    /**
     * A volume the library reports unavailable (not in it) is disabled with the library's reason and the family
     * moves on to another: it was the family's open volume for ever, its mount retried at every backoff. An empty
     * one goes back to the pool, taken again once an operator makes it available; one holding files is closed.
     */
    @Test
    void aFamilyLeavesAVolumeTheLibraryReportsUnavailable() throws Exception {
        start(3, 1, 100 * MB, 3, 500 * MB, List.of());
        String writer = lib.layout().drives().get(2);
        String v1 = "A" + tag + "01", v2 = "A" + tag + "02", v3 = "A" + tag + "03";
        faults.missingVolume(v1); // the first blank of the pool
        List<NewArchiveFile> files = new ArrayList<>();
        for (int i = 0; i < 2; i++) files.add(entry(land("una/f" + i, MB), "ds-una-" + tag, null));
        List<Long> ids = buffer.register(files).stream().map(ArchiveBuffer.ArchiveFileStatus::fileId).toList();
        flushUntil(() -> archived(ids) == 2 && !flusher.busy() && lib.drive(writer).state() == DriveState.EMPTY);
        assertThat(segments(ids)).extracting(Seg::volume).containsOnly(v2);
        assertThat(volumeState(v1)).startsWith("disabled blank archive: ").contains("not in the library");
        assertThat(buffer.file(ids.get(0)).orElseThrow().attempts()).as("not the file's fault").isZero();

        // the family's volume, now holding its files, goes missing too: closed, and the next file goes to the last blank
        faults.missingVolume(v2);
        List<Long> next = List.of(registeredOne("una/f2", "ds-una-" + tag));
        flushUntil(() -> archived(next) == 1 && !flusher.busy() && lib.drive(writer).state() == DriveState.EMPTY);
        assertThat(segments(next)).extracting(Seg::volume).containsExactly(v3);
        assertThat(volumeState(v2)).startsWith("disabled full archive: ");
        assertThat(buffer.volumes("ds-una-" + tag)).extracting(ArchiveBuffer.FamilyVolume::volume, ArchiveBuffer.FamilyVolume::state)
                .containsExactly(org.assertj.core.groups.Tuple.tuple(v2, "full"), org.assertj.core.groups.Tuple.tuple(v3, "open"));

        // an operator puts the first back and makes it available: a new family takes it as a blank
        faults.restoreVolume(v1);
        jdbc.update("UPDATE volume SET state = 'available', state_reason = NULL WHERE label = ?", v1);
        List<Long> other = List.of(registeredOne("una/g0", "ds-una2-" + tag));
        flushUntil(() -> archived(other) == 1 && !flusher.busy());
        assertThat(segments(other)).extracting(Seg::volume).containsExactly(v1);
    }


    /**
     * A family's open volume that an operator disables (a suspect cartridge) is not appended to while disabled:
     * the family opens another, and the disabled one stays open, not closed, so the family goes back to it once
     * it is made available again.
     */
    @Test
    void aFamilyDoesNotWriteToAnOpenVolumeAnOperatorDisabled() throws Exception {
        start(3, 1, 100 * MB, 3, 500 * MB, List.of());
        String v1 = "A" + tag + "01", v2 = "A" + tag + "02";
        String family = "ds-dis-" + tag;
        List<Long> first = List.of(registeredOne("dis/f0", family));
        flushUntil(() -> archived(first) == 1 && !flusher.busy());
        assertThat(segments(first)).extracting(Seg::volume).containsExactly(v1);

        jdbc.update("UPDATE volume SET state = 'disabled', state_reason = 'operator: suspect cartridge' WHERE label = ?", v1);
        List<Long> second = List.of(registeredOne("dis/f1", family));
        flushUntil(() -> archived(second) == 1 && !flusher.busy());
        assertThat(segments(second)).extracting(Seg::volume).as("not on the disabled volume").containsExactly(v2);
        assertThat(volumeState(v1)).as("left as the operator set it, and still open").startsWith("disabled open ")
                .contains("operator: suspect cartridge");

        jdbc.update("UPDATE volume SET state = 'available', state_reason = NULL WHERE label = ?", v1);
        List<Long> third = List.of(registeredOne("dis/f2", family));
        flushUntil(() -> archived(third) == 1 && !flusher.busy());
        assertThat(segments(third)).extracting(Seg::volume).as("back to the older open volume").containsExactly(v1);
        assertThat(buffer.volumes(family)).extracting(ArchiveBuffer.FamilyVolume::volume, ArchiveBuffer.FamilyVolume::state)
                .containsExactlyInAnyOrder(org.assertj.core.groups.Tuple.tuple(v1, "open"), org.assertj.core.groups.Tuple.tuple(v2, "open"));
    }


    /**
     * A buffer file whose bytes changed after registration fails for good with its reason: it is not written
     * again every retry, and no volume is closed for it (each mismatch used to close one, burning the pool).
     */
    @Test
    void aBufferFileChangedAfterRegistrationFailsForGoodAndClosesNoVolume() throws Exception {
        start(3, 1, 100 * MB, 3, 500 * MB, List.of());
        List<Path> paths = new ArrayList<>();
        List<NewArchiveFile> files = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            paths.add(land("chg/f" + i, MB));
            files.add(entry(paths.get(i), "ds-chg-" + tag, null));
        }
        List<Long> ids = buffer.register(files).stream().map(ArchiveBuffer.ArchiveFileStatus::fileId).toList();
        byte[] other = new byte[(int) MB];
        new Random(7).nextBytes(other);
        Files.write(paths.get(1), other); // rewritten in place by its producer: same size, other bytes

        flushUntil(() -> state(ids.get(1)).equals("failed") && archived(List.of(ids.get(0), ids.get(2))) == 2 && !flusher.busy());
        ArchiveBuffer.ArchiveFileStatus changed = buffer.file(ids.get(1)).orElseThrow();
        assertThat(changed.error()).contains("changed after registration");
        assertThat(changed.attempts()).isEqualTo(1);
        // a retry cannot help a changed file: refused, and it stays failed
        assertThatThrownBy(() -> buffer.retry(ids.get(1))).isInstanceOfSatisfying(ArchiveRejected.class, e -> {
            assertThat(e.kind()).isEqualTo(ArchiveRejected.Kind.CONFLICT);
            assertThat(e.getMessage()).contains("no longer has the registered bytes").contains("register it anew");
        });
        assertThat(state(ids.get(1))).isEqualTo("failed");
        assertThat(buffer.volumes("ds-chg-" + tag)).extracting(ArchiveBuffer.FamilyVolume::state).containsExactly("open");
        assertThat(segments(ids)).extracting(Seg::volume).containsOnly("A" + tag + "01");
        // the changed file's copy is on the volume all the same, between the other two: the last is its third tape file
        assertThat(buffer.file(ids.get(2)).orElseThrow().segments()).extracting(ArchiveBuffer.WrittenCopy::fseq).containsExactly(3);
        for (int i = 0; i < 10; i++) { // later rounds leave it alone
            flusher.poll();
            clock.advance(Duration.ofMinutes(2));
        }
        assertThat(buffer.file(ids.get(1)).orElseThrow().attempts()).isEqualTo(1);
        assertThat(state(ids.get(1))).isEqualTo("failed");
        assertThat(paths.get(1)).exists(); // its bytes stay in the buffer
        assertThat(buffer.usage().files().get("failed")).isPositive();
        assertThat(buffer.evict()).isZero();
    }

    /** A buffer file deleted while queued fails for good with its reason; it was written again every backoff for ever. */
    @Test
    void aBufferFileDeletedWhileQueuedFailsForGood() throws Exception {
        start(3, 1, 100 * MB, 3, 500 * MB, List.of());
        List<Path> paths = new ArrayList<>();
        List<NewArchiveFile> files = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            paths.add(land("del/f" + i, MB));
            files.add(entry(paths.get(i), "ds-del-" + tag, null));
        }
        List<Long> ids = buffer.register(files).stream().map(ArchiveBuffer.ArchiveFileStatus::fileId).toList();
        Files.delete(paths.get(1)); // by someone, while it waits for tape

        flushUntil(() -> state(ids.get(1)).equals("failed") && archived(List.of(ids.get(0), ids.get(2))) == 2 && !flusher.busy());
        ArchiveBuffer.ArchiveFileStatus gone = buffer.file(ids.get(1)).orElseThrow();
        assertThat(gone.error()).contains("buffer file gone").contains(paths.get(1).toString());
        assertThat(gone.attempts()).isEqualTo(1);
        for (int i = 0; i < 5; i++) { // later rounds leave it alone
            flusher.poll();
            clock.advance(Duration.ofMinutes(2));
        }
        assertThat(buffer.file(ids.get(1)).orElseThrow().attempts()).isEqualTo(1);
        assertThat(buffer.volumes("ds-del-" + tag)).extracting(ArchiveBuffer.FamilyVolume::state).containsExactly("open");
        assertThatThrownBy(() -> buffer.retry(ids.get(1))).isInstanceOfSatisfying(ArchiveRejected.class,
                e -> assertThat(e.kind()).isEqualTo(ArchiveRejected.Kind.CONFLICT));
    }

    /**
     * A buffer file deleted before it reached tape fails with "register it anew": its producer lands the same bytes
     * again and registers them, and the file is queued and archived. The registration answered the failed status
     * without change, and the file waited for an operator's retry.
     */
    @Test
    void aDeletedBufferFileLandedAgainAndRegisteredIsWritten() throws Exception {
        start(3, 1, 100 * MB, 3, 500 * MB, List.of());
        Path p = land("again/f0", MB);
        long id = buffer.register(List.of(entry(p, "ds-again-" + tag, null))).get(0).fileId();
        Files.delete(p);
        flushUntil(() -> state(id).equals("failed") && !flusher.busy());
        assertThat(buffer.file(id).orElseThrow().error()).contains("register it anew");

        assertThat(land("again/f0", MB)).isEqualTo(p); // the same bytes at the same path
        ArchiveBuffer.ArchiveFileStatus again = buffer.register(List.of(entry(p, "ds-again-" + tag, null))).get(0);
        assertThat(again.fileId()).isEqualTo(id);
        assertThat(again.state()).as(this::copies).isEqualTo("queued");
        flushUntil(() -> archived(List.of(id)) == 1 && !flusher.busy());
        assertThat(segments(List.of(id))).hasSize(1);
    }

    /**
     * A file not on tape yet is deleted (cancelled) with everything of it: its queued copies leave their family's queue,
     * a copy already written leaves the catalog, and its name and path are registered anew with other bytes. A file that
     * failed because its buffer file changed could not be registered again under its name, for ever. One being written
     * now, or on tape, is not deleted.
     */
    @Test
    void aFileNotOnTapeYetIsDeletedWithItsCopiesAndItsNameRegisteredAnew() throws Exception {
        start(3, 1, 100 * MB, 6, 500 * MB, List.of());
        String ds = "ds-cxl-" + tag;
        // two copies: the first written, then the buffer file is written over and the second fails for good
        Path p = land("cxl/f0", MB);
        long id = buffer.register(List.of(entry(p, ds, "dual"))).get(0).fileId();
        String name = buffer.file(id).orElseThrow().name();
        flushUntil(() -> count("SELECT count(*) FROM archive_copy WHERE file_id = ? AND state = 'done'", id) == 1);
        byte[] other = new byte[(int) MB];
        new Random(11).nextBytes(other);
        Files.write(p, other);
        flushUntil(() -> state(id).equals("failed") && !flusher.busy());
        assertThat(buffer.file(id).orElseThrow().segments()).as(this::copies).hasSize(1);
        assertThatThrownBy(() -> buffer.register(List.of(entry(p, ds, "dual")))).isInstanceOfSatisfying(ArchiveRejected.class,
                e -> assertThat(e.errors().get(0).reason()).contains("not on tape yet (failed): delete it"));

        String onTape = buffer.file(id).orElseThrow().segments().get(0).volume();
        ArchiveBuffer.ArchiveFileStatus was = buffer.delete(id);
        assertThat(was.state()).isEqualTo("failed");
        assertThat(count("SELECT count(*) FROM file WHERE id = ? OR name = ?", id, name)).isZero();
        assertThat(count("SELECT count(*) FROM segment WHERE file_id = ?", id)).isZero();
        // its volume holds no file now (as CTA counts a tape's files); the copy written there stays counted as written
        ArchiveBuffer.FamilyVolume deletedFrom = familyVolume(onTape);
        assertThat(deletedFrom.files()).as("files on " + onTape + " after its only file was deleted").isZero();
        assertThat(deletedFrom.written()).isEqualTo(1);
        assertThat(count("SELECT count(*) FROM archive_copy WHERE file_id = ?", id)).isZero();
        assertThat(p).as("the producer's bytes stay").exists();
        assertThatThrownBy(() -> buffer.delete(id)).isInstanceOfSatisfying(ArchiveRejected.class,
                e -> assertThat(e.kind()).isEqualTo(ArchiveRejected.Kind.NOT_FOUND));
        ArchiveBuffer.ArchiveFileStatus anew = buffer.register(List.of(entry(p, ds, "dual"))).get(0);
        assertThat(anew.name()).isEqualTo(name);
        assertThat(anew.adler32()).isEqualTo(Checksums.adler32Of(p));
        flushUntil(() -> archived(List.of(anew.fileId())) == 1 && !flusher.busy());
        assertThat(segments(List.of(anew.fileId()))).hasSize(2);
        // each of the family's volumes counts the files it holds: the new file's, not the deleted one's
        for (ArchiveBuffer.WrittenCopy c : buffer.file(anew.fileId()).orElseThrow().segments()) {
            assertThat(familyVolume(c.volume()).files()).as("files on " + c.volume())
                    .isEqualTo((int) count("SELECT count(*) FROM segment s JOIN volume v ON v.id = s.volume_id WHERE v.label = ?", c.volume()))
                    .isEqualTo(1);
        }
        assertThat(familyVolume(onTape).written()).as("written to " + onTape).isGreaterThan(familyVolume(onTape).files());

        // a queued file leaves its family's queue; the file behind it is written
        String qs = "ds-cxq-" + tag;
        long q0 = registeredOne("cxl/q0", qs), q1 = registeredOne("cxl/q1", qs);
        assertThat(buffer.delete(q0).state()).isEqualTo("queued");
        assertThat(count("SELECT coalesce(sum(files), 0) FROM archive_family_queue WHERE family = ?", qs)).isEqualTo(1);
        // being written: refused, then written and archived: refused
        for (int i = 0; i < 20 && !flusher.busy(); i++) flusher.poll();
        assertThat(flusher.busy()).isTrue();
        assertThatThrownBy(() -> buffer.delete(q1)).isInstanceOfSatisfying(ArchiveRejected.class, e -> {
            assertThat(e.kind()).isEqualTo(ArchiveRejected.Kind.CONFLICT);
            assertThat(e.getMessage()).contains("being written to tape now");
        });
        flushUntil(() -> archived(List.of(q1)) == 1 && !flusher.busy());
        assertThat(count("SELECT count(*) FROM archive_family_queue WHERE family = ?", qs)).isZero();
        assertThatThrownBy(() -> buffer.delete(q1)).isInstanceOfSatisfying(ArchiveRejected.class,
                e -> assertThat(e.getMessage()).contains("is archived"));
        assertThat(state(q1)).isEqualTo("archived");
    }

    ArchiveBuffer.FamilyVolume familyVolume(String label) {
        return buffer.volumes(null).stream().filter(v -> v.volume().equals(label)).findFirst().orElseThrow();
    }

    /**
     * A file not on tape yet that finished stage requests named is deleted, and those requests keep it in their file list
     * (its name, the state it ended in, its error) and their counts. Any stage request row naming the file refused the
     * delete for ever (the rows' foreign key to the file): a request that failed on it, long over, kept the file from
     * being cancelled and registered anew. Refused still while a request is open, or holds the file pinned on disk.
     */
    @Test
    void aFileNamedOnlyByFinishedStageRequestsIsDeletedAndTheirHistoryKeepsIt() throws Exception {
        start(3, 1, 100 * MB, 3, 500 * MB, List.of());
        String ds = "ds-cxr-" + tag;
        long id = registeredOne("cxr/f0", ds), other = registeredOne("cxr/f1", ds);
        String name = buffer.file(id).orElseThrow().name(), otherName = buffer.file(other).orElseThrow().name();
        UUID failed = requests.submit("it", new NewStageRequest(null, List.of(name, otherName), null, 3600L, null, "it")).request().id();
        UUID pinned = requests.submit("it", new NewStageRequest(null, List.of(otherName), null, 3600L, null, "it")).request().id();
        assertThatThrownBy(() -> buffer.delete(id)).as("wanted by an open request").isInstanceOfSatisfying(ArchiveRejected.class, e -> {
            assertThat(e.kind()).isEqualTo(ArchiveRejected.Kind.CONFLICT);
            assertThat(e.getMessage()).contains("stage request " + failed);
        });
        // both end: the first failed on the file (not on tape) and had the other on disk, released; the second has the other pinned
        jdbc.update("""
                UPDATE stage_request_file SET state = 'failed', error = 'no usable tape copy', started_at = now(), finished_at = now()
                 WHERE request_id = ? AND file_id = ?""", failed, id);
        jdbc.update("UPDATE stage_request_file SET state = 'on_disk', released = true, finished_at = now() WHERE request_id = ? AND file_id = ?",
                failed, other);
        jdbc.update("UPDATE stage_request_file SET state = 'on_disk', finished_at = now() WHERE request_id = ?", pinned);
        jdbc.update("UPDATE stage_request SET state = CASE WHEN id = ? THEN 'failed' ELSE 'done' END, completed_at = now() WHERE id IN (?, ?)",
                failed, failed, pinned);

        assertThat(buffer.delete(id).state()).isEqualTo("queued");
        assertThat(count("SELECT count(*) FROM file WHERE id = ?", id)).isZero();
        StageRequests.StageRequestDetail f = requests.get(failed, 0, 10).orElseThrow();
        assertThat(f.request().state()).isEqualTo(StageRequests.RequestState.FAILED);
        assertThat(f.files()).extracting(StageRequests.RequestFile::path, r -> r.state().dbName(), StageRequests.RequestFile::error)
                .containsExactly(org.assertj.core.groups.Tuple.tuple(name, "failed", "no usable tape copy"),
                        org.assertj.core.groups.Tuple.tuple(otherName, "on_disk", null));
        assertThat(f.counts().get(StageRequests.FileState.FAILED)).isEqualTo(1);
        assertThat(f.counts().get(StageRequests.FileState.ON_DISK)).isEqualTo(1);
        assertThat(f.released()).isEqualTo(1);

        // a finished request holding the other file pinned on disk refuses its delete until released
        assertThatThrownBy(() -> buffer.delete(other)).as("pinned on disk for a finished request").isInstanceOfSatisfying(ArchiveRejected.class,
                e -> assertThat(e.getMessage()).contains("stage request " + pinned + " (the file pinned on disk"));
        jdbc.update("UPDATE stage_request_file SET released = true WHERE request_id = ?", pinned);
        assertThat(buffer.delete(other).state()).isEqualTo("queued");
        StageRequests.StageRequestDetail p = requests.get(pinned, 0, 10).orElseThrow();
        assertThat(p.files()).singleElement().satisfies(r -> {
            assertThat(r.path()).isEqualTo(otherName);
            assertThat(r.state()).isEqualTo(StageRequests.FileState.ON_DISK);
            assertThat(r.released()).isTrue();
            assertThat(r.finishedAt()).isNotNull();
        });
        assertThat(p.counts().get(StageRequests.FileState.ON_DISK)).isEqualTo(1);
        assertThat(p.counts().get(StageRequests.FileState.FAILED)).isZero();
        assertThat(p.released()).isEqualTo(1);
        assertThat(requests.get(failed, 0, 10).orElseThrow().files()).extracting(StageRequests.RequestFile::path).containsExactly(name, otherName);
        // a release naming the file (released already) leaves it as it ended
        assertThat(requests.release(pinned, List.of(otherName)).unchanged()).containsExactly(
                new StageRequests.Unchanged(otherName, StageRequests.FileState.ON_DISK));

        // its name is registered anew; the finished requests' history is left as it was
        long anew = buffer.register(List.of(entry(landing.resolve(tag + "/cxr/f0"), ds, null))).get(0).fileId();
        assertThat(buffer.file(anew).orElseThrow().name()).isEqualTo(name);
        assertThat(requests.get(failed, 0, 10).orElseThrow().files().get(0).state()).isEqualTo(StageRequests.FileState.FAILED);
    }

    /**
     * A file not on tape yet whose row failed in a stage request still open for its other files is deleted: it was
     * refused ("wanted by stage request ... (still open)"), so an operator could not clean up the failed file of an open
     * request. The request keeps it in its list as failed and ends failed with its other file; a row cancelled so
     * leaves its request to end done (a deleted cancelled file is no failure). Refused still while the row is queued.
     */
    @Test
    void aFailedFileOfAnOpenStageRequestIsDeletedAndTheRequestEndsWithItsOtherFiles() throws Exception {
        start(3, 1, 100 * MB, 3, 500 * MB, List.of());
        String ds = "ds-cxo-" + tag;
        long id = registeredOne("cxo/f0", ds), other = registeredOne("cxo/f1", ds), third = registeredOne("cxo/f2", ds);
        String name = buffer.file(id).orElseThrow().name(), otherName = buffer.file(other).orElseThrow().name(),
                thirdName = buffer.file(third).orElseThrow().name();
        UUID failing = requests.submit("it", new NewStageRequest(null, List.of(name, otherName), null, 3600L, null, "it")).request().id();
        UUID cancelling = requests.submit("it", new NewStageRequest(null, List.of(thirdName, otherName), null, 3600L, null, "it"))
                .request().id();
        assertThatThrownBy(() -> buffer.delete(id)).as("its row still queued").isInstanceOfSatisfying(ArchiveRejected.class,
                e -> assertThat(e.getMessage()).contains("stage request " + failing + " (still open)"));
        jdbc.update("""
                UPDATE stage_request_file SET state = 'failed', error = 'no usable tape copy', started_at = now(), finished_at = now()
                 WHERE request_id = ? AND file_id = ?""", failing, id);
        jdbc.update("UPDATE stage_request_file SET state = 'cancelled', finished_at = now() WHERE request_id = ? AND file_id = ?",
                cancelling, third);
        jdbc.update("UPDATE stage_request SET state = 'active' WHERE id IN (?, ?)", failing, cancelling);

        assertThat(buffer.delete(id).state()).isEqualTo("queued");
        assertThat(buffer.delete(third).state()).isEqualTo("queued");
        assertThat(count("SELECT count(*) FROM file WHERE id IN (?, ?)", id, third)).isZero();
        StageRequests.StageRequestDetail f = requests.get(failing, 0, 10).orElseThrow();
        assertThat(f.request().state()).as("open for its other file").isEqualTo(StageRequests.RequestState.ACTIVE);
        assertThat(f.files()).extracting(StageRequests.RequestFile::path, r -> r.state().dbName(), StageRequests.RequestFile::error)
                .containsExactly(org.assertj.core.groups.Tuple.tuple(name, "failed", "no usable tape copy"),
                        org.assertj.core.groups.Tuple.tuple(otherName, "queued", null));
        assertThat(f.counts().get(StageRequests.FileState.FAILED)).isEqualTo(1);

        // their other file ends on disk (no destination): each request ends, failed for the failed file, done for the cancelled
        jdbc.update("UPDATE stage_request_file SET state = 'on_disk', finished_at = now() WHERE file_id = ?", other);
        dev.stagehand.recall.request.RequestSettlement settlement = new dev.stagehand.recall.request.RequestSettlement(jdbc);
        assertThat(settlement.settleRequestsOf(other)).isEqualTo(2);
        assertThat(requests.get(failing, 0, 10).orElseThrow().request().state()).isEqualTo(StageRequests.RequestState.FAILED);
        StageRequests.StageRequestDetail c = requests.get(cancelling, 0, 10).orElseThrow();
        assertThat(c.request().state()).isEqualTo(StageRequests.RequestState.DONE);
        assertThat(c.files()).extracting(StageRequests.RequestFile::path, r -> r.state().dbName())
                .containsExactly(org.assertj.core.groups.Tuple.tuple(thirdName, "cancelled"), org.assertj.core.groups.Tuple.tuple(otherName, "on_disk"));
        assertThat(c.counts().get(StageRequests.FileState.CANCELLED)).isEqualTo(1);
    }

    /**
     * A file that failed its tape checksum again and again (the drive, not the buffer file) is not queued again by a
     * registration of the same bytes: each mismatch closes a volume, and only an operator's retry writes it again.
     */
    @Test
    void aFileThatFailedItsTapeChecksumIsNotQueuedAgainByARegistration() throws Exception {
        start(3, 1, 100 * MB, 5, 500 * MB, List.of());
        Path p = land("mmreg/f0", MB);
        long id = buffer.register(List.of(entry(p, "ds-mmreg-" + tag, null))).get(0).fileId();
        faults.corruptWrite(buffer.file(id).orElseThrow().name());
        flushUntil(() -> state(id).equals("failed") && !flusher.busy());
        assertThat(buffer.register(List.of(entry(p, "ds-mmreg-" + tag, null))).get(0).state()).isEqualTo("failed");
    }

    /**
     * A buffer path is free again once its file is evicted: a producer that lands each run's files at the same paths
     * (naming them itself) registers the next file there. The evicted file kept the path for ever and every later
     * registration of it was refused as "already registered".
     */
    @Test
    void aBufferPathIsRegisteredAgainOnceItsFileWasEvicted() throws Exception {
        start(3, 1, 100 * MB, 2, 10 * MB, List.of()); // high-water 8 MB, low-water 5 MB
        List<Path> paths = new ArrayList<>();
        List<NewArchiveFile> files = new ArrayList<>();
        for (int i = 0; i < 7; i++) {
            paths.add(land("slot/s" + i, MB));
            files.add(new NewArchiveFile(paths.get(i).toString(), MB, null, "ds-slot-" + tag, "it", "/slot-" + tag + "/run1/f" + i, null));
        }
        List<Long> ids = buffer.register(files).stream().map(ArchiveBuffer.ArchiveFileStatus::fileId).toList();
        flushUntil(() -> archived(ids) == 7 && !flusher.busy());
        assertThat(buffer.evict()).isEqualTo(2);
        int gone = state(ids.get(0)).equals("evicted") ? 0 : 1, kept = 6;
        assertThat(state(ids.get(gone))).isEqualTo("evicted");
        assertThat(state(ids.get(kept))).isNotEqualTo("evicted");

        byte[] next = new byte[(int) MB];
        new Random(11).nextBytes(next);
        Path slot = paths.get(gone);
        Files.write(slot, next); // run 2's file at the same path
        ArchiveBuffer.ArchiveFileStatus run2 = buffer.register(List.of(
                new NewArchiveFile(slot.toString(), MB, null, "ds-slot-" + tag, "it", "/slot-" + tag + "/run2/f" + gone, null))).get(0);
        assertThat(run2.state()).isEqualTo("queued");
        assertThat(run2.fileId()).isNotEqualTo(ids.get(gone));
        assertThat(buffer.fileByName(slot.toRealPath().toString())).map(ArchiveBuffer.ArchiveFileStatus::fileId).contains(run2.fileId());
        assertThat(buffer.locate(run2.fileId())).contains(slot.toRealPath());
        // a path whose file is still in the buffer stays its own
        assertThatThrownBy(() -> buffer.register(List.of(new NewArchiveFile(paths.get(kept).toString(), MB, null, "ds-slot-" + tag,
                "it", "/slot-" + tag + "/run2/f" + kept, null)))).isInstanceOfSatisfying(ArchiveRejected.class,
                e -> assertThat(e.kind()).isEqualTo(ArchiveRejected.Kind.CONFLICT));

        flushUntil(() -> archived(List.of(run2.fileId())) == 1 && !flusher.busy());
        assertThat(Files.readAllBytes(slot)).isEqualTo(next);
        assertThat(state(ids.get(gone))).isEqualTo("evicted");
    }

    /**
     * A write drive that fails with the family's volume in it keeps the volume until it is repaired: the family goes on
     * on another volume with the other write drive, and back to the first once it is out. The family counted as busy
     * in that drive and nothing of it was written (the buffer filling behind it) until the drive was repaired.
     */
    @Test
    void aFamilyGoesOnWhileItsVolumeIsStuckInAFailedDrive() throws Exception {
        start(4, 2, 100 * MB, 3, 500 * MB, List.of());
        String first = new DriveRoles(2).writeDrives(lib.layout()).get(0); // the drive a round offers work to first
        String v1 = "A" + tag + "01", v2 = "A" + tag + "02";
        String family = "ds-stuck-" + tag;
        faults.failDrive(first);
        List<Long> ids = List.of(registeredOne("stuck/f0", family));
        flushUntil(() -> lib.drive(first).state() == DriveState.FAILED && !flusher.busy());
        assertThat(lib.drive(first).volume()).isEqualTo(v1);
        assertThat(state(ids.get(0))).isEqualTo("queued");

        flushUntil(() -> archived(ids) == 1 && !flusher.busy());
        assertThat(segments(ids)).extracting(Seg::volume).containsExactly(v2);
        assertThat(volumeState(v1)).as("left open for the family").startsWith("available open");

        lib.recover(first);
        for (int i = 0; i < 100 && lib.drive(first).state() != DriveState.EMPTY; i++) clock.advance(Duration.ofSeconds(20));
        List<Long> next = List.of(registeredOne("stuck/f1", family));
        flushUntil(() -> archived(next) == 1 && !flusher.busy());
        assertThat(segments(next)).extracting(Seg::volume).as("back to the older open volume").containsExactly(v1);
    }

    /**
     * A producer that registers a file again (its first call's answer was lost) after the file was archived and evicted
     * is answered its status, as any registration of the same file again: it was refused "no such file", and the
     * producer took an archived file for one never registered. Another size or checksum is still refused.
     */
    @Test
    void aRegistrationRepeatedAfterTheFileWasEvictedIsAnswered() throws Exception {
        start(3, 1, 100 * MB, 2, 10 * MB, List.of()); // high-water 8 MB, low-water 5 MB
        List<NewArchiveFile> files = new ArrayList<>();
        for (int i = 0; i < 7; i++) files.add(entry(land("rep/f" + i, MB), "ds-rep-" + tag, null));
        List<ArchiveBuffer.ArchiveFileStatus> st = buffer.register(files);
        List<Long> ids = st.stream().map(ArchiveBuffer.ArchiveFileStatus::fileId).toList();
        flushUntil(() -> archived(ids) == 7 && !flusher.busy());
        assertThat(buffer.evict()).isEqualTo(2);
        int gone = state(ids.get(0)).equals("evicted") ? 0 : 1;
        assertThat(Path.of(files.get(gone).path())).doesNotExist();

        NewArchiveFile again = new NewArchiveFile(files.get(gone).path(), MB, st.get(gone).adler32(), "ds-rep-" + tag, "it", null, null);
        Path fresh = land("rep/g0", MB);
        List<ArchiveBuffer.ArchiveFileStatus> answer = buffer.register(List.of(again, entry(fresh, "ds-rep-" + tag, null)));
        assertThat(answer.get(0).fileId()).isEqualTo(ids.get(gone));
        assertThat(answer.get(0).state()).isEqualTo("evicted");
        assertThat(answer.get(0).segments()).hasSize(1);
        assertThat(answer.get(1).state()).isEqualTo("queued");

        for (NewArchiveFile other : List.of(
                new NewArchiveFile(again.path(), MB + 1, null, "ds-rep-" + tag, "it", null, null),
                new NewArchiveFile(again.path(), MB, "00000001", "ds-rep-" + tag, "it", null, null),
                new NewArchiveFile(again.path(), MB, null, "ds-rep-" + tag, "it", "/rep-" + tag + "/other-name", null)))
            assertThatThrownBy(() -> buffer.register(List.of(other))).as("%s", other).isInstanceOfSatisfying(ArchiveRejected.class, e -> {
                assertThat(e.kind()).isEqualTo(ArchiveRejected.Kind.INVALID);
                assertThat(e.errors().get(0).reason()).isEqualTo("no such file");
            });
    }

    /**
     * A two-copy file whose first copy is on tape while its second waits (here for a blank volume) is queued, not
     * writing: it showed 'writing' with nothing being written, for as long as the second copy waited.
     */
    @Test
    void aFileWhoseSecondCopyWaitsIsQueuedNotWriting() throws Exception {
        start(3, 1, 100 * MB, 1, 500 * MB, List.of()); // one blank: copy 2 has none
        long id = buffer.register(List.of(entry(land("half/f0", MB), "ds-half-" + tag, "dual"))).get(0).fileId();
        flushUntil(() -> buffer.file(id).orElseThrow().segments().size() == 1 && !flusher.busy());
        for (int i = 0; i < 5; i++) {
            flusher.poll();
            clock.advance(Duration.ofSeconds(20));
        }
        assertThat(buffer.file(id).orElseThrow().segments()).hasSize(1);
        assertThat(state(id)).as(this::copies).isEqualTo("queued");
    }

    /**
     * A tape copy a read found bad after its file was archived (a recall's checksum refused it: the segment suspect),
     * the file still in the buffer: its bytes there are the only good ones, so the copy is written again from them and
     * the file can then leave the buffer. It stayed evictable for ever (eviction wants every copy's segment ok).
     */
    @Test
    void aTapeCopyFoundBadWhileItsFileIsStillInTheBufferIsWrittenAgain() throws Exception {
        start(3, 1, 100 * MB, 2, 10 * MB, List.of()); // high-water 8 MB, low-water 5 MB
        List<NewArchiveFile> files = new ArrayList<>();
        for (int i = 0; i < 7; i++) files.add(entry(land("rw/f" + i, MB), "ds-rw-" + tag, null));
        List<Long> ids = buffer.register(files).stream().map(ArchiveBuffer.ArchiveFileStatus::fileId).toList();
        flushUntil(() -> archived(ids) == 7 && !flusher.busy());
        long bad = ids.get(0); // the oldest: the first eviction would take it
        jdbc.update("UPDATE segment SET state = 'suspect' WHERE file_id = ?", bad);

        assertThat(buffer.evict()).as("7 MB down to 5 MB: two files, not the one whose copy is bad").isEqualTo(2);
        assertThat(state(bad)).as(this::copies).isEqualTo("queued");
        assertThat(buffer.file(bad).orElseThrow().error()).contains("is no longer good (segment suspect: a read found it bad");
        // queued, but archived before: not a file that may be cancelled
        assertThatThrownBy(() -> buffer.delete(bad)).isInstanceOfSatisfying(ArchiveRejected.class, e -> {
            assertThat(e.kind()).isEqualTo(ArchiveRejected.Kind.CONFLICT);
            assertThat(e.getMessage()).contains("was archived at");
        });
        flushUntil(() -> state(bad).equals("archived") && !flusher.busy());
        assertThat(count("SELECT count(*) FROM segment WHERE file_id = ? AND state = 'ok'", bad)).as("written again").isEqualTo(1);
        assertThat(buffer.locate(bad)).as("its bytes stay until evicted").isPresent();
    }

    /**
     * A tape copy a read found bad after its file left the buffer, the file's other copy good: the bytes are read back
     * from the good copy into the landing area, the bad copy is written again, and the file leaves the buffer again. It
     * was never made again: the file was left with one good copy for ever.
     */
    @Test
    void aTapeCopyFoundBadAfterItsFileWasEvictedIsMadeAgainFromTheOtherCopy() throws Exception {
        start(3, 1, 100 * MB, 4, 10 * MB, List.of()); // high-water 8 MB, low-water 5 MB
        List<NewArchiveFile> files = new ArrayList<>();
        for (int i = 0; i < 7; i++) files.add(entry(land("rb/f" + i, MB), "ds-rb-" + tag, "dual"));
        List<Long> ids = buffer.register(files).stream().map(ArchiveBuffer.ArchiveFileStatus::fileId).toList();
        flushUntil(() -> archived(ids) == 7 && !flusher.busy());
        assertThat(buffer.evict()).isEqualTo(2);
        long bad = ids.get(0);
        assertThat(state(bad)).isEqualTo("evicted");
        String sum = buffer.file(bad).orElseThrow().adler32();
        String badVolume = jdbc.queryForObject("""
                SELECT v.label FROM archive_copy c JOIN volume v ON v.id = c.volume_id WHERE c.file_id = ? AND c.copy_no = 1""", String.class, bad);
        jdbc.update("UPDATE segment SET state = 'suspect' WHERE file_id = ? AND volume_id = (SELECT id FROM volume WHERE label = ?)", bad, badVolume);

        flushUntil(() -> state(bad).equals("archived") && !flusher.busy());
        ArchiveBuffer.ArchiveFileStatus again = buffer.file(bad).orElseThrow();
        assertThat(again.error()).contains("read back from");
        assertThat(count("SELECT count(*) FROM archive_copy c JOIN segment s ON s.file_id = c.file_id AND s.volume_id = c.volume_id "
                + "WHERE c.file_id = ? AND c.state = 'done' AND s.state = 'ok'", bad)).as(this::copies).isEqualTo(2);
        Path back = Path.of(again.path());
        assertThat(back).exists();
        assertThat(Checksums.adler32Of(back)).isEqualTo(sum);
        // and it leaves the buffer again like any archived file
        jdbc.update("UPDATE archive_file SET archived_at = now() - interval '1 day' WHERE file_id = ?", bad);
        buffer.evict();
        assertThat(state(bad)).isEqualTo("evicted");
        assertThat(back).doesNotExist();
    }

    /**
     * The read-back of a bad copy's good copy holds a lease renewed while it runs, as a write's is: a mount and read
     * longer than the lease left the claim lapsed, and the instance's other idle write drive claimed the same copy and
     * mounted the good volume for it too (the read done twice, or the second mount failing against the first).
     */
    @Test
    void aReadBackLongerThanTheLeaseIsNotClaimedAgain() throws Exception {
        lease = Duration.ofSeconds(2);
        start(4, 2, 100 * MB, 4, 10 * MB, List.of()); // two write drives; high-water 8 MB, low-water 5 MB
        List<String> writers = lib.layout().drives().subList(2, 4);
        List<NewArchiveFile> files = new ArrayList<>();
        for (int i = 0; i < 7; i++) files.add(entry(land("rbl/f" + i, MB), "ds-rbl-" + tag, "dual"));
        List<Long> ids = buffer.register(files).stream().map(ArchiveBuffer.ArchiveFileStatus::fileId).toList();
        flushUntil(() -> archived(ids) == 7 && !flusher.busy()
                && writers.stream().allMatch(d -> lib.drive(d).state() == DriveState.EMPTY));
        assertThat(buffer.evict()).isEqualTo(2);
        long bad = ids.get(0);
        jdbc.update("""
                UPDATE segment SET state = 'suspect' WHERE file_id = ?
                   AND volume_id = (SELECT volume_id FROM archive_copy WHERE file_id = ? AND copy_no = 1)""", bad, bad);
        String good = jdbc.queryForObject("""
                SELECT v.label FROM archive_copy c JOIN volume v ON v.id = c.volume_id WHERE c.file_id = ? AND c.copy_no = 2""", String.class, bad);
        mountsStarted.clear();

        flusher.poll(); // an empty write drive claims the read-back and mounts the good volume (the virtual clock stands still)
        assertThat(flusher.busy()).isTrue();
        assertThat(mountsStarted).singleElement().satisfies(m -> assertThat(m).endsWith(" " + good));
        String lease = "SELECT claimed_by IS NOT NULL AND lease_until > now() FROM archive_copy WHERE file_id = ? AND copy_no = 1";
        for (int i = 0; i < 3; i++) { // the mount outlasts the lease; the poller's rounds go on meanwhile
            Thread.sleep(1200);
            flusher.poll();
            assertThat(jdbc.queryForObject(lease, Boolean.class, bad)).as("the read-back's claim is current").isTrue();
        }
        assertThat(mountsStarted).as("the good volume mounted once, for the one read-back").hasSize(1);

        flushUntil(() -> state(bad).equals("archived") && !flusher.busy());
        assertThat(buffer.file(bad).orElseThrow().error()).contains("read back from " + good);
    }

    /** Tape copies that keep failing their checksum (a drive writing bad data) close at most a few volumes. */
    @Test
    void aCopyThatKeepsFailingItsChecksumOnTapeFailsAfterAFewVolumes() throws Exception {
        start(3, 1, 100 * MB, 5, 500 * MB, List.of());
        List<NewArchiveFile> files = List.of(entry(land("cap/f0", MB), "ds-cap-" + tag, null), entry(land("cap/f1", MB), "ds-cap-" + tag, null));
        List<Long> ids = buffer.register(files).stream().map(ArchiveBuffer.ArchiveFileStatus::fileId).toList();
        faults.corruptWrite(buffer.file(ids.get(0)).orElseThrow().name());

        flushUntil(() -> state(ids.get(0)).equals("failed") && archived(List.of(ids.get(1))) == 1 && !flusher.busy());
        ArchiveBuffer.ArchiveFileStatus bad = buffer.file(ids.get(0)).orElseThrow();
        assertThat(bad.error()).contains("does not match").contains("the buffer file is intact");
        assertThat(bad.attempts()).as(this::copies).isEqualTo(3);
        assertThat(buffer.volumes("ds-cap-" + tag)).extracting(ArchiveBuffer.FamilyVolume::state).containsExactly("full", "full", "full");
        assertThat(count("SELECT count(*) FROM archive_volume av JOIN volume v ON v.id = av.volume_id WHERE v.label LIKE ? AND av.state = 'blank'",
                "A" + tag + "%")).isEqualTo(2);

        // the drive is mended: an operator's retry writes it again, attempts counted anew, and it is archived
        faults.clear();
        assertThatThrownBy(() -> buffer.retry(ids.get(1))).isInstanceOfSatisfying(ArchiveRejected.class,
                e -> assertThat(e.kind()).isEqualTo(ArchiveRejected.Kind.CONFLICT)); // archived: nothing to retry
        assertThatThrownBy(() -> buffer.retry(-1)).isInstanceOfSatisfying(ArchiveRejected.class,
                e -> assertThat(e.kind()).isEqualTo(ArchiveRejected.Kind.NOT_FOUND));
        ArchiveBuffer.ArchiveFileStatus again = buffer.retry(ids.get(0));
        assertThat(again.state()).isEqualTo("queued");
        assertThat(again.attempts()).isZero();
        flushUntil(() -> archived(List.of(ids.get(0))) == 1 && !flusher.busy());
        assertThat(segments(List.of(ids.get(0)))).extracting(Seg::volume).containsExactly("A" + tag + "04");
    }

    /**
     * A drive that goes from one family's volume to another's lets the first volume go once it is back in its
     * slot: it kept the claim (renewed at every poll), and no other instance could append to that family.
     */
    @Test
    void aVolumeExchangedOutOfAWriteDriveIsFreeForAnotherInstance() throws Exception {
        start(3, 1, 100 * MB, 4, 500 * MB, List.of());
        List<Long> x = List.of(registeredOne("exch/x0", "ds-x-" + tag));
        List<Long> y = List.of(registeredOne("exch/y0", "ds-y-" + tag));
        // the one write drive writes x's volume, then exchanges it for a blank one for y
        flushUntil(() -> archived(x) == 1 && archived(y) == 1 && !flusher.busy());
        String vx = segments(x).get(0).volume(), vy = segments(y).get(0).volume();
        assertThat(vx).isNotEqualTo(vy);
        assertThat(jdbc.queryForList("SELECT av.claimed_by FROM archive_volume av JOIN volume v ON v.id = av.volume_id WHERE v.label = ?",
                String.class, vx)).as("%s is back in its slot", vx).containsExactly((String) null);

        // another instance with a drive of its own appends x's next file to x's volume
        ArchiveProperties p = props(landing, 500 * MB, 0.8, 0.5, 100 * MB, List.of("A" + tag + "03", "A" + tag + "04"),
                Duration.ZERO, lease);
        ArchiveFlusher other = new ArchiveFlusher(jdbc, tx, lib, List.of(lib.layout().drives().get(1)), p, 100 * MB, events::add,
                p.instanceId());
        other.start();
        List<Long> x1 = List.of(registeredOne("exch/x1", "ds-x-" + tag));
        for (int i = 0; i < 100 && !(archived(x1) == 1 && !other.busy()); i++) {
            other.poll();
            clock.advance(Duration.ofSeconds(20));
        }
        assertThat(archived(x1)).as(this::copies).isEqualTo(1);
        assertThat(segments(x1)).extracting(Seg::volume).containsExactly(vx);
    }

    /**
     * Only copies that failed their checksum count towards failing a file for good: failed mounts before (a drive or
     * library problem, counted for every file of the list) used to make the first mismatch the last.
     */
    @Test
    void onlyChecksumMismatchesCountTowardsFailingACopyForGood() throws Exception {
        start(3, 1, 100 * MB, 5, 500 * MB, List.of());
        String writer = lib.layout().drives().get(2);
        long id = registeredOne("mm/f0", "ds-mm-" + tag);
        for (int i = 0; i < 2; i++) { // the write drive fails twice under the file, and is mended each time
            faults.failDrive(writer);
            flushUntil(() -> lib.drive(writer).state() == DriveState.FAILED && !flusher.busy());
            lib.recover(writer);
            clock.advance(Duration.ofMinutes(1));
        }
        assertThat(buffer.file(id).orElseThrow().attempts()).as(this::copies).isEqualTo(2);
        assertThat(state(id)).isEqualTo("queued");
        faults.corruptWrite(buffer.file(id).orElseThrow().name());

        flushUntil(() -> state(id).equals("failed") && !flusher.busy());
        assertThat(buffer.volumes("ds-mm-" + tag)).as("a volume closed per mismatch").extracting(ArchiveBuffer.FamilyVolume::state)
                .containsExactly("full", "full", "full");
        assertThat(buffer.file(id).orElseThrow().attempts()).isEqualTo(5);
        assertThat(buffer.file(id).orElseThrow().error()).contains("does not match");
    }

    /**
     * Two instances taking up a new family at the same moment open one volume for it, not one each (both took a
     * blank, neither seeing the other's before its commit, and the family went on two volumes).
     */
    @Test
    void twoInstancesTakingUpANewFamilyAtOnceOpenOneVolume() throws Exception {
        start(3, 1, 100 * MB, 12, 500 * MB, List.of());
        List<String> pool = new ArrayList<>();
        for (int i = 1; i <= 12; i++) pool.add(String.format("A%s%02d", tag, i));
        ArchiveProperties p = props(landing, 500 * MB, 0.8, 0.5, 100 * MB, pool, Duration.ZERO, lease);
        ArchiveFlusher other = new ArchiveFlusher(jdbc, tx, lib, List.of(lib.layout().drives().get(1)), p, 100 * MB, events::add,
                p.instanceId());
        other.start();
        List<Long> ids = new ArrayList<>();
        java.util.concurrent.ExecutorService both = java.util.concurrent.Executors.newFixedThreadPool(2);
        try {
            for (int f = 0; f < 5; f++) { // a new family each round, both instances idle and polling at once
                ids.add(registeredOne("race/f" + f, "ds-race" + f + "-" + tag));
                java.util.concurrent.CyclicBarrier go = new java.util.concurrent.CyclicBarrier(2);
                var a = both.submit(() -> { go.await(); flusher.poll(); return null; });
                var b = both.submit(() -> { go.await(); other.poll(); return null; });
                a.get();
                b.get();
                for (int i = 0; i < 100 && (flusher.busy() || other.busy() || archived(ids) < ids.size()); i++) {
                    clock.advance(Duration.ofSeconds(20));
                    Thread.sleep(20);
                    flusher.poll();
                    other.poll();
                }
                assertThat(archived(ids)).as(this::copies).isEqualTo(ids.size());
            }
        } finally {
            both.shutdownNow();
        }
        for (int f = 0; f < 5; f++)
            assertThat(buffer.volumes("ds-race" + f + "-" + tag)).as("family %d's volumes", f).hasSize(1);
    }

    @Test
    void badRegistrationsAreRefusedWithTheirReasonAndStoreNothing() throws Exception {
        start(2, 1, 100 * MB, 1, 500 * MB, List.of());
        Path ok = land("bad/ok", MB);
        Path outside = Files.writeString(tmp.resolve("outside"), "x");
        long files = count("SELECT count(*) FROM file");
        List<NewArchiveFile> bad = List.of(
                entry(ok, "ds-bad-" + tag, null),
                new NewArchiveFile(ok.toString() + "-missing", 1L, null, "ds", null, null, null),
                new NewArchiveFile(outside.toString(), 1L, null, "ds", null, null, null),
                new NewArchiveFile(land("bad/sum", MB).toString(), MB, "00000001", "ds", null, null, null),
                new NewArchiveFile(land("bad/size", MB).toString(), MB + 1, null, "ds", null, null, null),
                new NewArchiveFile(land("bad/class", MB).toString(), MB, null, "ds", null, null, "triple"),
                new NewArchiveFile(land("bad/nods", MB).toString(), MB, null, null, null, null, null),
                new NewArchiveFile("../../etc/passwd", 1L, null, "ds", null, null, null));
        assertThatThrownBy(() -> buffer.register(bad)).isInstanceOfSatisfying(ArchiveRejected.class, e -> {
            assertThat(e.kind()).isEqualTo(ArchiveRejected.Kind.INVALID);
            assertThat(e.errors()).extracting(EntryError::index).containsExactly(1, 2, 3, 4, 5, 6, 7);
            assertThat(e.errors().get(2).reason()).contains("checksum mismatch");
            assertThat(e.errors().get(3).reason()).contains("the file has " + MB);
        });
        assertThat(count("SELECT count(*) FROM file")).isEqualTo(files);
        // the good file alone goes in; the same registration again is answered, not repeated
        long id = buffer.register(List.of(entry(ok, "ds-bad-" + tag, null))).get(0).fileId();
        assertThat(buffer.register(List.of(entry(ok, "ds-bad-" + tag, null))).get(0).fileId()).isEqualTo(id);
        assertThat(count("SELECT count(*) FROM archive_copy WHERE file_id = ?", id)).isEqualTo(1);
        // the same name with other bytes is a conflict
        Path other = land("bad/other", 2 * MB);
        assertThatThrownBy(() -> buffer.register(List.of(new NewArchiveFile(other.toString(), 2 * MB, null, "ds-bad-" + tag, null,
                buffer.file(id).orElseThrow().name(), null))))
                .isInstanceOfSatisfying(ArchiveRejected.class, e -> assertThat(e.kind()).isEqualTo(ArchiveRejected.Kind.CONFLICT));
    }

    /**
     * A landed backlog bigger than the buffer can ever take at once (eviction frees at most high-water minus
     * low-water) is registered in landing order as room allows, none refused and none dropped.
     */
    @Test
    void theWatcherRegistersABacklogBiggerThanTheRoomInParts() throws Exception {
        start(3, 1, 100 * MB, 2, 10 * MB, List.of()); // high-water 8 MB, low-water 5 MB
        List<Path> landed = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            Path p = landAt("it/ds-bl-" + tag + "/f" + (char) ('a' + i), MB);
            Files.writeString(p.resolveSibling(p.getFileName() + ".done"), "");
            landed.add(p);
        }
        LandingWatcher watcher = new LandingWatcher(buffer);
        assertThat(watcher.scan()).as("the first 8 MB").isEqualTo(8);
        assertThat(watcher.scan()).as("no room until eviction").isZero();
        for (int i = 0; i < 12; i++) {
            Path p = landed.get(i);
            boolean first8 = i < 8;
            assertThat(buffer.fileByName(p.toRealPath().toString()).isPresent()).as("f%d registered", i).isEqualTo(first8);
            assertThat(Files.exists(p.resolveSibling(p.getFileName() + ".done"))).as("f%d waits", i).isEqualTo(!first8);
            assertThat(p.resolveSibling(p.getFileName() + ".rejected")).doesNotExist();
        }
        List<Long> ids = jdbc.queryForList("SELECT f.id FROM file f JOIN dataset d ON d.id = f.dataset_id WHERE d.name = ? ORDER BY f.id",
                Long.class, "ds-bl-" + tag);
        flushUntil(() -> archived(ids) == 8 && !flusher.busy());
        assertThat(buffer.evict()).isEqualTo(3); // down to the low-water mark: 3 MB of room
        assertThat(watcher.scan()).isEqualTo(3);
        flushUntil(() -> archived(jdbc.queryForList("SELECT f.id FROM file f JOIN dataset d ON d.id = f.dataset_id WHERE d.name = ?",
                Long.class, "ds-bl-" + tag)) == 11 && !flusher.busy());
        buffer.evict();
        assertThat(watcher.scan()).as("the last one").isEqualTo(1);
        assertThat(count("SELECT count(*) FROM file f JOIN dataset d ON d.id = f.dataset_id WHERE d.name = ?", "ds-bl-" + tag)).isEqualTo(12);
    }

    /**
     * Files the buffer has no room for go in first landed first (when their markers appeared), whatever their
     * paths: in path order, a dataset sorting first that kept landing would keep one sorting after it out for ever.
     */
    @Test
    void theWatcherTakesTheFirstLandedFirstWhateverTheirPaths() throws Exception {
        start(3, 1, 100 * MB, 2, 10 * MB, List.of()); // high-water 8 MB
        java.nio.file.attribute.FileTime hourAgo = java.nio.file.attribute.FileTime.from(Instant.now().minus(Duration.ofHours(1)));
        List<Path> early = new ArrayList<>(), late = new ArrayList<>();
        for (int i = 0; i < 5; i++) { // landed an hour ago, in a dataset that sorts last
            Path p = landAt("it/ds-z-" + tag + "/f" + i, MB);
            Files.setLastModifiedTime(Files.writeString(p.resolveSibling(p.getFileName() + ".done"), ""), hourAgo);
            early.add(p);
        }
        for (int i = 0; i < 5; i++) { // landed now, in a dataset that sorts first
            Path p = landAt("it/ds-a-" + tag + "/f" + i, MB);
            Files.writeString(p.resolveSibling(p.getFileName() + ".done"), "");
            late.add(p);
        }
        assertThat(new LandingWatcher(buffer).scan()).as("8 MB of room").isEqualTo(8);
        for (Path p : early) assertThat(buffer.fileByName(p.toRealPath().toString())).as("%s landed first", p).isPresent();
        assertThat(late.stream().filter(p -> Files.exists(p.resolveSibling(p.getFileName() + ".done")))).as("waiting").hasSize(2);
    }

    /**
     * A landed file bigger than high-water minus low-water fits only below the low-water mark: eviction makes
     * that room for the file the watcher waits on, or the landing queue would stop at it for ever.
     */
    @Test
    void aLandedFileBiggerThanWhatEvictionUsuallyFreesGetsItsRoom() throws Exception {
        start(3, 1, 100 * MB, 2, 10 * MB, List.of()); // high-water 8 MB, low-water 5 MB
        List<Path> landed = new ArrayList<>();
        for (String n : List.of("a", "b", "c", "d", "e", "f-big", "g")) {
            Path p = landAt("it/ds-big-" + tag + "/" + n, n.equals("f-big") ? 6 * MB : MB);
            Files.writeString(p.resolveSibling(p.getFileName() + ".done"), "");
            landed.add(p);
        }
        LandingWatcher watcher = new LandingWatcher(buffer);
        assertThat(watcher.scan()).as("the five small files").isEqualTo(5);
        List<Long> ids = jdbc.queryForList("SELECT f.id FROM file f JOIN dataset d ON d.id = f.dataset_id WHERE d.name = ?",
                Long.class, "ds-big-" + tag);
        flushUntil(() -> archived(ids) == 5 && !flusher.busy());
        assertThat(buffer.evict()).as("down to 2 MB, below the 5 MB low-water mark: room for 6 MB").isEqualTo(3);
        assertThat(watcher.scan()).as("the big file").isEqualTo(1);
        assertThat(buffer.fileByName(landed.get(5).toRealPath().toString())).isPresent();
        assertThat(buffer.fileByName(landed.get(6).toRealPath().toString())).as("the next waits").isEmpty();
        flushUntil(() -> archived(jdbc.queryForList("SELECT f.id FROM file f JOIN dataset d ON d.id = f.dataset_id WHERE d.name = ?",
                Long.class, "ds-big-" + tag)) == 6 && !flusher.busy());
        buffer.evict();
        assertThat(watcher.scan()).as("the last one").isEqualTo(1);
    }

    @Test
    void theWatcherRegistersMarkedFilesAndLeavesTheRestInPlace() throws Exception {
        start(2, 1, 100 * MB, 1, 500 * MB, List.of());
        Path done = landAt("it/ds-w-" + tag + "/run/f1", MB);
        Files.writeString(done.resolveSibling("f1.done"), Checksums.adler32Of(done));
        Path unmarked = landAt("it/ds-w-" + tag + "/run/f2", MB); // still being written: no marker
        Path wrong = landAt("it/ds-w-" + tag + "/run/f3", MB);
        Files.writeString(wrong.resolveSibling("f3.done"), "deadbeef");
        assertThat(new LandingWatcher(buffer).scan()).isEqualTo(1);
        ArchiveBuffer.ArchiveFileStatus s = buffer.fileByName(done.toRealPath().toString()).orElseThrow();
        assertThat(s.dataset()).isEqualTo("ds-w-" + tag);
        assertThat(s.name()).isEqualTo("/it/ds-w-" + tag + "/run/f1");
        assertThat(Files.exists(done.resolveSibling("f1.done"))).isFalse();
        assertThat(buffer.fileByName(unmarked.toRealPath().toString())).isEmpty();
        assertThat(Files.exists(unmarked)).isTrue();
        assertThat(Files.readString(wrong.resolveSibling("f3.rejected"))).contains("checksum mismatch");
        assertThat(Files.exists(wrong)).isTrue();
    }
}
