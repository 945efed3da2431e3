package dev.stagehand.tape;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.stagehand.platform.VirtualClock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.zip.Adler32;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The simulated library's timings against tape-model.md, on the virtual clock. */
class SimulatedLibraryTest {

    @TempDir
    Path tmp;

    final VirtualClock clock = new VirtualClock();
    final TapeModel model = TapeModel.lto9();

    SimulatedLibrary library(int drives, int accessors) {
        return SimulatedLibrary.builder(clock).drives(drives).accessors(accessors).root(tmp.resolve("tape")).build();
    }

    static SegmentRead seg(long id, String vol, long offset, long size) {
        return new SegmentRead(id, "/data/f" + id, vol, offset, size, null);
    }

    double secondsSinceStart(Instant t) {
        return Duration.between(clock.start(), t).toNanos() / 1e9;
    }

    @Test
    void firstFileOfAnUnmountedVolumeIsReadAfterMountLoadAndTransfer() {
        SimulatedLibrary lib = library(4, 1);
        SegmentRead s = seg(1, "V00001", 0, 400_000_000L);
        CompletableFuture<ReadResult> result = lib.mount("drive01", "V00001")
                .thenCompose(v -> lib.read("drive01", List.of(s)).result(s));
        clock.runUntilIdle();
        ReadResult r = result.join();
        assertThat(secondsSinceStart(r.finishedAt())).isEqualTo(24.7); // r + L + 1.0, exactly
        assertThat(r.locateSeconds()).isZero();
        assertThat(lib.drive("drive01")).isEqualTo(new DriveStatus("drive01", DriveState.MOUNTED_IDLE, "V00001", 400_000_000L));
        assertThat(lib.headOffset("drive01")).isEqualTo(400_000_000L);
    }

    @Test
    void segmentsAreLocatedThenReadOneByOneAndBackToBackFilesStream() {
        SimulatedLibrary lib = library(1, 1);
        long cw = (long) model.wrapCapacity();
        SegmentRead a = seg(1, "V1", cw / 2, 1_000_000_000L);          // forward on wrap 0
        SegmentRead b = seg(2, "V1", cw / 2 + 1_000_000_000L, 400_000_000L); // right behind a: streams on
        SegmentRead c = seg(3, "V1", cw / 4, 400_000_000L);              // behind the head on wrap 0
        lib.mount("drive01", "V1");
        clock.runUntilIdle();
        double t0 = clock.elapsedSeconds();
        ReadBatch batch = lib.read("drive01", List.of(a, b, c));
        List<DriveState> seen = new ArrayList<>();
        clock.runUntilIdle();
        ReadResult ra = batch.result(a).join(), rb = batch.result(b).join(), rc = batch.result(c).join();
        double locA = model.locateSeconds(0, a.offsetBytes());
        assertThat(ra.locateSeconds()).isCloseTo(locA, within(1e-9));
        assertThat(secondsSinceStart(ra.finishedAt()) - t0).isCloseTo(locA + 2.5, within(1e-6));
        assertThat(rb.locateSeconds()).isZero();
        assertThat(secondsSinceStart(rb.finishedAt()) - t0).isCloseTo(locA + 3.5, within(1e-6));
        double locC = model.locateSeconds(b.offsetBytes() + b.sizeBytes(), c.offsetBytes());
        assertThat(locC).isGreaterThan(4.3 + 11.3);
        assertThat(secondsSinceStart(rc.finishedAt()) - t0).isCloseTo(locA + 3.5 + locC + 1.0, within(1e-6));
        assertThat(batch.done()).isCompleted();
        LibraryStats st = lib.stats();
        assertThat(st.mounts()).isEqualTo(1);
        assertThat(st.segmentsRead()).isEqualTo(3);
        assertThat(st.locateSeconds()).isCloseTo(locA + locC, within(1e-6));
        assertThat(st.readSeconds()).isCloseTo(4.5, within(1e-9));
        assertThat(st.drives().get("drive01").readSeconds()).isCloseTo(4.5, within(1e-9));
    }

    /**
     * CTA's drive "down": a drive disabled while it holds a volume reads the list under way, refuses a new one
     * (DRIVE_DOWN: the scheduler may ask before its next round sees the down), and is DISABLED once unloaded.
     */
    @Test
    void aMountedDriveDisabledGoesDownOnceItsVolumeIsUnloaded() {
        SimulatedLibrary lib = library(1, 1);
        lib.mount("drive01", "V1");
        clock.runUntilIdle();
        SegmentRead s = seg(1, "V1", 0, 400_000_000L);
        CompletableFuture<ReadResult> r = lib.read("drive01", List.of(s)).result(s);
        lib.setEnabled("drive01", false);
        assertThat(lib.drive("drive01").downRequested()).isTrue();
        clock.runUntilIdle();
        assertThat(r).as("the list under way is read").isCompleted();
        assertThat(lib.drive("drive01")).isEqualTo(new DriveStatus("drive01", DriveState.MOUNTED_IDLE, "V1", 400_000_000L, true));
        SegmentRead s2 = seg(2, "V1", 400_000_000L, 400_000_000L);
        CompletableFuture<ReadResult> r2 = lib.read("drive01", List.of(s2)).result(s2);
        clock.runUntilIdle();
        assertThat(r2).isCompletedExceptionally();
        assertThat(r2.handle((v, e) -> ((TapeFailure) e).kind()).join()).isEqualTo(TapeFailure.Kind.DRIVE_DOWN);
        assertThat(lib.drive("drive01").state()).isEqualTo(DriveState.MOUNTED_IDLE);
        lib.dismount("drive01");
        clock.runUntilIdle();
        assertThat(lib.drive("drive01")).isEqualTo(new DriveStatus("drive01", DriveState.DISABLED, null, 0));
        lib.setEnabled("drive01", true);
        assertThat(lib.drive("drive01").state()).isEqualTo(DriveState.EMPTY);
    }

    /**
     * A drive that failed while going down (or whose mount the stop cut off) keeps the request across a restart:
     * recovered, it is DISABLED, as without the restart; it was back in service. One still holding its volume is
     * still going down.
     */
    @Test
    void aDriveGoingDownIsStillGoingDownAfterARestartEvenWhenItFailed() {
        SimulatedLibrary lib = SimulatedLibrary.builder(clock).drives(3).accessors(1).root(tmp.resolve("tape"))
                .initialDrives(List.of(new DriveStatus("drive01", DriveState.FAILED, "V1", 0, true),
                        new DriveStatus("drive02", DriveState.MOUNTING, "V2", 0, true),
                        new DriveStatus("drive03", DriveState.MOUNTED_IDLE, "V3", 0, true))).build();
        assertThat(lib.drive("drive01")).isEqualTo(new DriveStatus("drive01", DriveState.FAILED, "V1", 0, true));
        assertThat(lib.drive("drive02")).as("its cartridge back in its slot").isEqualTo(new DriveStatus("drive02", DriveState.DISABLED, null, 0));
        assertThat(lib.drive("drive03")).isEqualTo(new DriveStatus("drive03", DriveState.MOUNTED_IDLE, "V3", 0, true));
        lib.recover("drive01");
        lib.dismount("drive03");
        clock.runUntilIdle();
        assertThat(lib.drive("drive01")).isEqualTo(new DriveStatus("drive01", DriveState.DISABLED, null, 0));
        assertThat(lib.drive("drive03")).isEqualTo(new DriveStatus("drive03", DriveState.DISABLED, null, 0));
    }

    @Test
    void unloadAfter60GigabytesTakes195Seconds() {
        SimulatedLibrary lib = library(1, 1);
        SegmentRead s = seg(1, "V1", 0, 60_000_000_000L);
        lib.mount("drive01", "V1");
        clock.runUntilIdle();
        lib.read("drive01", List.of(s));
        clock.runUntilIdle();
        double start = clock.elapsedSeconds();
        CompletableFuture<Void> d = lib.dismount("drive01");
        clock.advance(Duration.ofMillis(194_999));
        assertThat(lib.drive("drive01").state()).isEqualTo(DriveState.UNLOADING);
        assertThat(lib.freeAccessors()).isEqualTo(1); // the accessor is not held during the rewind
        clock.advance(Duration.ofMillis(2));
        assertThat(lib.freeAccessors()).isZero(); // moving it out now
        clock.runUntilIdle();
        assertThat(d).isCompleted();
        assertThat(clock.elapsedSeconds() - start).isCloseTo(195 + 6.7, within(1e-9));
        assertThat(lib.drive("drive01")).isEqualTo(new DriveStatus("drive01", DriveState.EMPTY, null, 0));
        assertThat(lib.stats().dismounts()).isEqualTo(1);
    }

    @Test
    void twoDrivesContendingForOneAccessorWaitForIt() {
        SimulatedLibrary lib = library(2, 1);
        CompletableFuture<Void> m1 = lib.mount("drive01", "V1");
        CompletableFuture<Void> m2 = lib.mount("drive02", "V2");
        List<Double> done = new ArrayList<>();
        m1.thenRun(() -> done.add(clock.elapsedSeconds()));
        m2.thenRun(() -> done.add(clock.elapsedSeconds()));
        clock.runUntilIdle();
        // the second move starts when the first ends: 6.7 + 6.7 + 17
        assertThat(done).containsExactly(23.7, 30.4);
        assertThat(lib.stats().accessorWaitSeconds()).isCloseTo(6.7, within(1e-9));
        assertThat(lib.stats().accessorBusySeconds()).isCloseTo(13.4, within(1e-9));
    }

    @Test
    void withTwoAccessorsBothMountsRunAtOnce() {
        SimulatedLibrary lib = library(3, 2);
        List<Double> done = new ArrayList<>();
        for (int i = 1; i <= 3; i++)
            lib.mount("drive0" + i, "V" + i).thenRun(() -> done.add(clock.elapsedSeconds()));
        clock.runUntilIdle();
        assertThat(done).containsExactly(23.7, 23.7, 30.4);
    }

    @Test
    void realBytesWithTheirAdler32WhenATargetIsGiven() throws Exception {
        SimulatedLibrary lib = library(1, 1);
        Path target = tmp.resolve("cache/f1");
        long size = 3 * SimulatedContent.BLOCK + 12345;
        SegmentRead s = new SegmentRead(1, "/atlas/data/file-1.root", "V1", 0, size, target);
        lib.mount("drive01", "V1").thenCompose(v -> lib.read("drive01", List.of(s)).result(s));
        clock.runUntilIdle();
        byte[] bytes = Files.readAllBytes(target);
        Adler32 a = new Adler32();
        a.update(bytes);
        assertThat(bytes).hasSize((int) size);
        assertThat(lib.stats().segmentsRead()).isEqualTo(1);
        ReadBatch again = null;
        assertThat(a.getValue()).isEqualTo(SimulatedContent.adler32(s.fileName(), size));
        // the same file always has the same content
        Path second = tmp.resolve("cache/f1-again");
        SegmentRead s2 = new SegmentRead(1, s.fileName(), "V1", 0, size, second);
        again = lib.read("drive01", List.of(s2));
        clock.runUntilIdle();
        assertThat(again.result(s2).join().adler32()).isEqualTo(a.getValue());
        assertThat(Files.readAllBytes(second)).isEqualTo(bytes);
    }

    @Test
    void writtenFilesAreAppendedAtEndOfDataAndReadBack() throws Exception {
        SimulatedLibrary lib = library(1, 1);
        Path src1 = tmp.resolve("in1"), src2 = tmp.resolve("in2");
        byte[] b1 = new byte[1_000_000], b2 = new byte[777];
        new java.util.Random(7).nextBytes(b1);
        new java.util.Random(8).nextBytes(b2);
        Files.write(src1, b1);
        Files.write(src2, b2);
        lib.setEndOfData("W1", 5_000_000L);
        FileWrite w1 = new FileWrite(11, "/arch/one", src1, b1.length), w2 = new FileWrite(12, "/arch/two", src2, b2.length);
        lib.mount("drive01", "W1");
        clock.runUntilIdle();
        WriteBatch wb = lib.write("drive01", List.of(w1, w2));
        clock.runUntilIdle();
        WriteBatch.WrittenSegment r1 = wb.result(w1).join(), r2 = wb.result(w2).join();
        assertThat(r1.offsetBytes()).isEqualTo(5_000_000L);
        assertThat(r2.offsetBytes()).isEqualTo(5_000_000L + b1.length);
        Adler32 a = new Adler32();
        a.update(b1);
        assertThat(r1.adler32()).isEqualTo(a.getValue());
        assertThat(lib.endOfData("W1")).isEqualTo(5_000_000L + b1.length + b2.length);

        // a new library on the same root (a restart) reads them back and knows the end of data
        SimulatedLibrary again = library(1, 1);
        assertThat(again.endOfData("W1")).isEqualTo(5_000_000L + b1.length + b2.length);
        Path t = tmp.resolve("back");
        SegmentRead s = new SegmentRead(11, "/arch/one", "W1", r1.offsetBytes(), b1.length, t);
        again.mount("drive01", "W1").thenCompose(v -> again.read("drive01", List.of(s)).result(s));
        clock.runUntilIdle();
        assertThat(Files.readAllBytes(t)).isEqualTo(b1);
    }

    @Test
    void cancellingASegmentDropsItAndTheRestAreRead() {
        SimulatedLibrary lib = library(1, 1);
        SegmentRead a = seg(1, "V1", 0, 4_000_000_000L), b = seg(2, "V1", 4_000_000_000L, 400_000_000L),
                c = seg(3, "V1", 4_400_000_000L, 400_000_000L);
        lib.mount("drive01", "V1");
        clock.runUntilIdle();
        ReadBatch batch = lib.read("drive01", List.of(a, b, c));
        batch.cancel(b);
        clock.advance(Duration.ofSeconds(5)); // half-way through a
        batch.cancel(a); // abandoned while reading
        clock.runUntilIdle();
        assertThat(batch.result(a)).isCancelled();
        assertThat(batch.result(b)).isCancelled();
        assertThat(batch.result(c).join().locateSeconds()).isGreaterThan(0); // the head stopped inside a
        assertThat(batch.done()).isCompleted();
        assertThat(lib.drive("drive01").state()).isEqualTo(DriveState.MOUNTED_IDLE);
        assertThat(lib.stats().segmentsRead()).isEqualTo(1);
    }

    @Test
    void dismountCancelsWhatIsQueuedAndLeavesTheDriveEmpty() {
        SimulatedLibrary lib = library(1, 1);
        SegmentRead a = seg(1, "V1", 0, 4_000_000_000L), b = seg(2, "V1", 4_000_000_000L, 400_000_000L);
        lib.mount("drive01", "V1");
        clock.runUntilIdle();
        ReadBatch batch = lib.read("drive01", List.of(a, b));
        clock.advance(Duration.ofSeconds(1));
        CompletableFuture<Void> d = lib.dismount("drive01");
        clock.runUntilIdle();
        assertThat(batch.result(a)).isCancelled();
        assertThat(batch.result(b)).isCancelled();
        assertThat(d).isCompleted();
        assertThat(lib.drive("drive01").state()).isEqualTo(DriveState.EMPTY);
        assertThat(lib.freeAccessors()).isEqualTo(1);
    }

    @Test
    void eventsFollowEveryTransition() {
        List<String> log = new ArrayList<>();
        SimulatedLibrary lib = SimulatedLibrary.builder(clock).drives(1).root(tmp).events(new LibraryEvents() {
            @Override
            public void driveChanged(String library, DriveStatus status, Instant at) {
                log.add(status.state().name());
            }

            @Override
            public void segmentRead(String drive, ReadResult result) {
                log.add("read " + result.segment().fileId());
            }

            @Override
            public void dismounted(String drive, String volume, Instant at) {
                log.add("dismounted " + volume);
            }
        }).build();
        SegmentRead a = seg(1, "V1", 1_000_000_000L, 400_000_000L);
        lib.mount("drive01", "V1").thenCompose(v -> lib.read("drive01", List.of(a)).done())
                .thenCompose(v -> lib.dismount("drive01"));
        clock.runUntilIdle();
        assertThat(log).containsExactly("MOUNTING", "MOUNTED_IDLE", "LOCATING", "READING", "read 1", "MOUNTED_IDLE",
                "UNLOADING", "EMPTY", "dismounted V1");
    }

    @Test
    void persistedDrivesAreRestored() {
        SimulatedLibrary lib = SimulatedLibrary.builder(clock).drives(3).root(tmp).initialDrives(List.of(
                new DriveStatus("drive01", DriveState.READING, "V7", 123),
                new DriveStatus("drive02", DriveState.FAILED, "V8", 0),
                new DriveStatus("drive09", DriveState.MOUNTED_IDLE, "V9", 0))).build();
        assertThat(lib.drives()).containsExactly(
                new DriveStatus("drive01", DriveState.MOUNTED_IDLE, "V7", 123),
                new DriveStatus("drive02", DriveState.FAILED, "V8", 0),
                new DriveStatus("drive03", DriveState.EMPTY, null, 0));
        // the tape left mounted can be dismounted at once
        lib.dismount("drive01");
        clock.runUntilIdle();
        assertThat(lib.drive("drive01").state()).isEqualTo(DriveState.EMPTY);
    }

    /** A cartridge move cut off by a restart: the drive used to come back MOUNTED_IDLE with a tape never loaded. */
    @Test
    void aMountOrDismountCutOffByARestartComesBackEmpty() {
        SimulatedLibrary lib = SimulatedLibrary.builder(clock).drives(2).root(tmp).initialDrives(List.of(
                new DriveStatus("drive01", DriveState.MOUNTING, "V7", 0),
                new DriveStatus("drive02", DriveState.UNLOADING, "V8", 500))).build();
        assertThat(lib.drives()).containsExactly(new DriveStatus("drive01", DriveState.EMPTY, null, 0),
                new DriveStatus("drive02", DriveState.EMPTY, null, 0));
        // the volume is in its slot: it mounts anywhere
        lib.mount("drive02", "V7");
        clock.runUntilIdle();
        assertThat(lib.drive("drive02")).isEqualTo(new DriveStatus("drive02", DriveState.MOUNTED_IDLE, "V7", 0));
    }

    /**
     * What the recall scheduler counts against the accessors beside its own exchanges: mounts under way on the other
     * drives (the archive's), not their dismounts, and not a mount its caller gave up on.
     */
    @Test
    void mountsUnderWayBesidesTheCallersDrivesAreCountedNotDismountsNorAbandonedMounts() {
        SimulatedLibrary lib = library(3, 1);
        lib.mount("drive03", "W1");
        assertThat(lib.exchangesUnderWayBesides(List.of())).isEqualTo(1);
        assertThat(lib.exchangesUnderWayBesides(List.of("drive03"))).isZero();
        assertThat(lib.reserveMount("drive01", List.of(), 1)).as("the budget of 1 taken by drive03's mount").isFalse();
        assertThat(lib.reserveMount("drive01", List.of(), 2)).isTrue();
        assertThat(lib.reserveMount("drive03", List.of(), 1)).as("its own mount is not counted").isTrue();
        clock.runUntilIdle();
        assertThat(lib.exchangesUnderWayBesides(List.of())).as("loaded").isZero();

        lib.dismount("drive03");
        assertThat(lib.drive("drive03").state()).isEqualTo(DriveState.UNLOADING);
        assertThat(lib.exchangesUnderWayBesides(List.of())).as("a dismount").isZero();
        clock.runUntilIdle();

        CompletableFuture<Void> given = lib.mount("drive02", "V2");
        clock.advance(Duration.ofSeconds(1)); // moving in
        given.cancel(false);
        assertThat(lib.drive("drive02").state()).isEqualTo(DriveState.MOUNTING);
        assertThat(lib.exchangesUnderWayBesides(List.of())).as("given up: its caller no longer counts it").isZero();
        clock.runUntilIdle();
    }

    @Test
    void cancelledMountsPutTheDriveBackByThemselves() {
        SimulatedLibrary lib = library(2, 1);
        lib.mount("drive01", "V1");
        CompletableFuture<Void> waiting = lib.mount("drive02", "V2"); // behind drive01's move
        waiting.cancel(false);
        assertThat(lib.drive("drive02")).isEqualTo(new DriveStatus("drive02", DriveState.EMPTY, null, 0));
        clock.runUntilIdle();
        assertThat(lib.stats().accessorBusySeconds()).isCloseTo(6.7, within(1e-9)); // no move for drive02

        CompletableFuture<Void> loading = lib.mount("drive02", "V2");
        clock.advance(Duration.ofSeconds(10)); // moved in, loading
        loading.cancel(false);
        clock.runUntilIdle();
        // it loads, then goes straight back to its slot
        assertThat(lib.drive("drive02")).isEqualTo(new DriveStatus("drive02", DriveState.EMPTY, null, 0));
        assertThat(lib.stats().dismounts()).isEqualTo(1);
        assertThat(lib.freeAccessors()).isEqualTo(1);
    }

    @Test
    void wrongUseIsRefusedClearly() {
        SimulatedLibrary lib = library(1, 1);
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> lib.mount("nope", "V1"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no drive 'nope'");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> lib.read("drive01", List.of(seg(1, "V1", 0, 1))))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("drive drive01 holds null");
        lib.mount("drive01", "V1");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> lib.mount("drive01", "V2"))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("not empty");
        clock.runUntilIdle();
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> lib.read("drive01", List.of(seg(1, "V2", 0, 1))))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("is on volume V2");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> lib.setEndOfData("V1", -1))
                .isInstanceOf(IllegalArgumentException.class);
        assertThat(lib.drive("drive01").state()).isEqualTo(DriveState.MOUNTED_IDLE);
    }
}
