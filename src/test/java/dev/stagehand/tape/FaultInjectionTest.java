package dev.stagehand.tape;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.stagehand.platform.VirtualClock;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Each injected fault reaches the caller typed, and drives, accessors and volumes are consistent after. */
class FaultInjectionTest {

    @TempDir
    Path tmp;

    final VirtualClock clock = new VirtualClock();
    final FaultPlan faults = new FaultPlan();
    final SimulatedLibrary lib = SimulatedLibrary.builder(clock).drives(2).accessors(1).root(tmp)
            .mountTimeout(Duration.ofMinutes(10)).faults(faults).build();

    static SegmentRead seg(long id, String vol, long offset, long size) {
        return new SegmentRead(id, "/data/f" + id, vol, offset, size, null);
    }

    static TapeFailure failure(CompletableFuture<?> f) {
        assertThat(f).isCompletedExceptionally();
        try {
            f.join();
            throw new AssertionError("no failure");
        } catch (CompletionException e) {
            assertThat(e.getCause()).isInstanceOf(TapeFailure.class);
            return (TapeFailure) e.getCause();
        }
    }

    void mounted(String drive, String volume) {
        CompletableFuture<Void> m = lib.mount(drive, volume);
        clock.runUntilIdle();
        assertThat(m).isCompleted();
    }

    /**
     * A corrupt write stores one altered byte, so the copy's Adler32 always differs from its source's. (An earlier
     * version altered the first byte of every 64 KiB block: on java.util.Random content those flips often
     * cancelled out in Adler32, and the archive's checksum check saw a good copy.)
     */
    @Test
    void aCorruptWriteAltersOneByteAndTheCopysChecksumAlwaysShowsIt() throws Exception {
        SimulatedLibrary writer = SimulatedLibrary.builder(clock).drives(1).accessors(1).root(tmp.resolve("w")).faults(faults).build();
        CompletableFuture<Void> m = writer.mount("drive01", "W1");
        clock.runUntilIdle();
        assertThat(m).isCompleted();
        for (int i = 0; i < 20; i++) {
            byte[] data = new byte[1_000_000];
            new java.util.Random(("/cap/f" + i).hashCode()).nextBytes(data);
            Path src = java.nio.file.Files.write(tmp.resolve("src" + i), data);
            FileWrite w = new FileWrite(100 + i, "/cap/f" + i, src, data.length);
            faults.corruptWrite(w.fileName());
            WriteBatch batch = writer.write("drive01", List.of(w));
            clock.runUntilIdle();
            WriteBatch.WrittenSegment seg = batch.result(w).join();
            java.util.zip.Adler32 sum = new java.util.zip.Adler32();
            sum.update(data);
            assertThat(seg.adler32()).as("file %d", i).isNotEqualTo(sum.getValue());
            Path back = tmp.resolve("back" + i);
            SegmentRead r = new SegmentRead(100 + i, w.fileName(), "W1", seg.offsetBytes(), data.length, back);
            writer.read("drive01", List.of(r)).result(r);
            clock.runUntilIdle();
            byte[] stored = java.nio.file.Files.readAllBytes(back);
            int differ = 0;
            for (int j = 0; j < data.length; j++) if (stored[j] != data[j]) differ++;
            assertThat(differ).as("bytes altered in file %d", i).isEqualTo(1);
        }
    }

    @Test
    void badSegmentFailsWithMediaErrorAndTheRestAreRead() {
        faults.badSegment("V1", "/data/f2");
        mounted("drive01", "V1");
        SegmentRead a = seg(1, "V1", 0, 400_000_000L), b = seg(2, "V1", 400_000_000L, 400_000_000L),
                c = seg(3, "V1", 800_000_000L, 400_000_000L);
        ReadBatch batch = lib.read("drive01", List.of(a, b, c));
        clock.runUntilIdle();
        assertThat(batch.result(a)).isCompleted();
        TapeFailure f = failure(batch.result(b));
        assertThat(f.kind()).isEqualTo(TapeFailure.Kind.MEDIA_ERROR);
        assertThat(f.volume()).isEqualTo("V1");
        assertThat(f.drive()).isEqualTo("drive01");
        assertThat(batch.result(c)).isCompleted();
        assertThat(lib.drive("drive01").state()).isEqualTo(DriveState.MOUNTED_IDLE);
        assertThat(lib.stats().segmentsFailed()).isEqualTo(1);
    }

    @Test
    void corruptSegmentIsDeliveredWithOneByteAlteredAndItsChecksumShowsIt() throws Exception {
        faults.corruptSegment("V1", "/data/f2");
        SimulatedLibrary lib = SimulatedLibrary.builder(clock).drives(1).accessors(1).root(tmp.resolve("lib")).faults(faults).build();
        lib.mount("drive01", "V1");
        clock.runUntilIdle();
        long size = 1_000_003L;
        SegmentRead good = new SegmentRead(1, "/data/f1", "V1", 0, size, tmp.resolve("out/f1"));
        SegmentRead bad = new SegmentRead(2, "/data/f2", "V1", size, size, tmp.resolve("out/f2"));
        ReadBatch batch = lib.read("drive01", List.of(good, bad));
        clock.runUntilIdle();
        ReadResult g = batch.result(good).join(), b = batch.result(bad).join(); // no error: the corruption is silent
        assertThat(g.adler32()).isEqualTo(SimulatedContent.adler32("/data/f1", size));
        assertThat(b.adler32()).isNotEqualTo(SimulatedContent.adler32("/data/f2", size));
        // what was reported is what is on disk: the writer's streamed checksum tells the truth
        java.util.zip.Adler32 onDisk = new java.util.zip.Adler32();
        onDisk.update(java.nio.file.Files.readAllBytes(bad.target()));
        assertThat(onDisk.getValue()).isEqualTo(b.adler32());
        assertThat(java.nio.file.Files.size(bad.target())).isEqualTo(size);
        assertThat(lib.stats().segmentsFailed()).isZero();
    }

    @Test
    void theCopyReadFirstIsTheCorruptOneWhicheverVolumeItIsOn() throws Exception {
        faults.corruptFirstCopy("/data/f9");
        SimulatedLibrary lib = SimulatedLibrary.builder(clock).drives(2).accessors(1).root(tmp.resolve("lib")).faults(faults).build();
        lib.mount("drive01", "V2");
        lib.mount("drive02", "V1");
        clock.runUntilIdle();
        long size = 500_000L;
        long good = SimulatedContent.adler32("/data/f9", size);
        SegmentRead onV2 = new SegmentRead(9, "/data/f9", "V2", 0, size, tmp.resolve("out/a"));
        SegmentRead onV1 = new SegmentRead(9, "/data/f9", "V1", 0, size, tmp.resolve("out/b"));
        SegmentRead again = new SegmentRead(9, "/data/f9", "V2", 0, size, tmp.resolve("out/c"));
        ReadBatch first = lib.read("drive01", List.of(onV2));
        clock.runUntilIdle();
        ReadBatch other = lib.read("drive02", List.of(onV1));
        ReadBatch same = lib.read("drive01", List.of(again));
        clock.runUntilIdle();
        assertThat(first.result(onV2).join().adler32()).isNotEqualTo(good);
        assertThat(other.result(onV1).join().adler32()).as("the other copy is good").isEqualTo(good);
        assertThat(same.result(again).join().adler32()).as("the corrupt copy stays corrupt").isNotEqualTo(good);
    }

    @Test
    void driveFailingMidReadFailsEverythingQueuedAndKeepsTheVolumeUntilRecovered() {
        mounted("drive01", "V1");
        SegmentRead a = seg(1, "V1", 0, 4_000_000_000L), b = seg(2, "V1", 4_000_000_000L, 400_000_000L);
        ReadBatch batch = lib.read("drive01", List.of(a, b));
        faults.failDrive("drive01"); // the next segment started: b (a is under way already)
        clock.runUntilIdle();
        assertThat(batch.result(a)).isCompleted();
        assertThat(failure(batch.result(b)).kind()).isEqualTo(TapeFailure.Kind.DRIVE_FAILURE);
        assertThat(lib.drive("drive01")).isEqualTo(new DriveStatus("drive01", DriveState.FAILED, "V1", 4_000_000_000L));
        assertThat(batch.done()).isCompleted();
        // a failed drive refuses work; its volume cannot be mounted elsewhere while stuck in it
        assertThat(failure(lib.mount("drive01", "V2")).kind()).isEqualTo(TapeFailure.Kind.DRIVE_FAILURE);
        assertThat(failure(lib.read("drive01", List.of(b)).result(b)).kind()).isEqualTo(TapeFailure.Kind.DRIVE_FAILURE);
        assertThat(failure(lib.dismount("drive01")).kind()).isEqualTo(TapeFailure.Kind.DRIVE_FAILURE);
        CompletableFuture<Void> elsewhere = lib.mount("drive02", "V1");
        assertThat(failure(elsewhere).kind()).isEqualTo(TapeFailure.Kind.VOLUME_UNAVAILABLE);
        assertThat(lib.drive("drive02").state()).isEqualTo(DriveState.EMPTY);
        // the operator's recovery takes the cartridge out; then the volume mounts in the other drive
        CompletableFuture<Void> rec = lib.recover("drive01");
        clock.runUntilIdle();
        assertThat(rec).isCompleted();
        assertThat(lib.drive("drive01")).isEqualTo(new DriveStatus("drive01", DriveState.EMPTY, null, 0));
        mounted("drive02", "V1");
        assertThat(lib.freeAccessors()).isEqualTo(1);
    }

    @Test
    void mountThatNeverCompletesTimesOutAndLeavesTheDriveFailedAndTheAccessorFree() {
        faults.hangMount("V1");
        double t0 = clock.elapsedSeconds();
        CompletableFuture<Void> m = lib.mount("drive01", "V1");
        double[] failedAt = new double[1];
        m.whenComplete((v, e) -> failedAt[0] = clock.elapsedSeconds());
        clock.runUntilIdle();
        TapeFailure f = failure(m);
        assertThat(f.kind()).isEqualTo(TapeFailure.Kind.TIMEOUT);
        assertThat(failedAt[0] - t0).isCloseTo(600, within(1e-9));
        assertThat(lib.drive("drive01")).isEqualTo(new DriveStatus("drive01", DriveState.FAILED, "V1", 0));
        assertThat(lib.freeAccessors()).isEqualTo(1);
        // other drives keep working; after recovery the volume mounts fine (the hang was one-off)
        mounted("drive02", "V2");
        lib.recover("drive01");
        clock.runUntilIdle();
        assertThat(lib.drive("drive01").state()).isEqualTo(DriveState.EMPTY);
        mounted("drive01", "V1");
    }

    @Test
    void mountTimeoutWhileWaitingForTheAccessorWithdrawsTheMove() {
        SimulatedLibrary busy = SimulatedLibrary.builder(clock).drives(2).accessors(1).root(tmp)
                .mountTimeout(Duration.ofSeconds(5)).faults(faults).build();
        faults.hangMount("V1"); // drive01's load hangs; its accessor move still completes
        CompletableFuture<Void> m1 = busy.mount("drive01", "V1");
        CompletableFuture<Void> m2 = busy.mount("drive02", "V2"); // waits behind m1's 6.7 s move: times out at 5 s
        clock.runUntilIdle();
        assertThat(failure(m1).kind()).isEqualTo(TapeFailure.Kind.TIMEOUT);
        assertThat(failure(m2).kind()).isEqualTo(TapeFailure.Kind.TIMEOUT);
        assertThat(busy.drive("drive02")).isEqualTo(new DriveStatus("drive02", DriveState.EMPTY, null, 0));
        assertThat(busy.drive("drive01").state()).isEqualTo(DriveState.FAILED);
        assertThat(busy.freeAccessors()).isEqualTo(1);
    }

    @Test
    void missingVolumeIsUnavailableAndTheDriveStaysEmpty() {
        faults.missingVolume("V9");
        CompletableFuture<Void> m = lib.mount("drive01", "V9");
        clock.runUntilIdle();
        TapeFailure f = failure(m);
        assertThat(f.kind()).isEqualTo(TapeFailure.Kind.VOLUME_UNAVAILABLE);
        assertThat(f.volume()).isEqualTo("V9");
        assertThat(lib.drive("drive01")).isEqualTo(new DriveStatus("drive01", DriveState.EMPTY, null, 0));
        faults.restoreVolume("V9");
        mounted("drive01", "V9");
    }

    @Test
    void faultsFromConfigurationStrings() {
        FaultPlan p = FaultPlan.of(List.of("V1:/data/f1"), List.of("drive02"), List.of("V3"), List.of("V4"));
        assertThat(p.isBad("V1", "/data/f1")).isTrue();
        assertThat(p.isMissing("V4")).isTrue();
        assertThat(p.takeHang("V3")).isTrue();
        assertThat(p.takeHang("V3")).isFalse();
        assertThat(p.takeDriveFailure("drive02")).isTrue();
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> FaultPlan.of(List.of("nocolon"), List.of(), List.of(), List.of()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("VOLUME:file-name");
    }
}
