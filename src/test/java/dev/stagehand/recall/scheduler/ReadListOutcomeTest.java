package dev.stagehand.recall.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.recall.scheduler.SchedulerConfig.Policy;
import dev.stagehand.tape.DriveStatus;
import dev.stagehand.tape.FileWrite;
import dev.stagehand.tape.LibraryLayout;
import dev.stagehand.tape.ReadBatch;
import dev.stagehand.tape.ReadResult;
import dev.stagehand.tape.SegmentRead;
import dev.stagehand.tape.TapeFailure;
import dev.stagehand.tape.TapeLibrary;
import dev.stagehand.tape.WriteBatch;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * In the service a read list's segment callbacks run on several threads and wait for the engine's monitor
 * in any order, so the library's "every segment completed" can be seen before the engine has recorded the
 * last segment's outcome. These tests replay that order deterministically: the library below completes a
 * list's {@link ReadBatch#done()} at once and hands each segment's outcome to the engine a second later.
 * The engine must still treat the list as under way until it has recorded every outcome.
 */
class ReadListOutcomeTest {

    static final long GB = 1_000_000_000L;

    /** Runs request r1 of three files, each with a copy on V1 and on V2, on two drives. */
    private static RecallEngine threeFilesOnTwoVolumes(TestClock clock, LateOutcomes library) {
        RecallEngine engine = new RecallEngine(library, clock, new TestCosts(), SchedulerConfig.defaults(Policy.TAPE_AWARE),
                QueueStore.IN_MEMORY, Staging.NONE, EngineListener.NONE);
        List<QueueModel.FileSpec> files = new ArrayList<>();
        for (int i = 1; i <= 3; i++) {
            files.add(new QueueModel.FileSpec(i, "/f" + i, GB, List.of(new Copy("V1", i * 10 * GB), new Copy("V2", i * 10 * GB)),
                    "exp", "ds", null));
        }
        clock.schedule(Duration.ZERO, () -> engine.submit("r1", Instant.EPOCH, 0, "exp", files));
        clock.run(20_000);
        return engine;
    }

    @Test
    void aDriveThatFailedUnderAReadListGetsNoFurtherListsAndItsFilesGoToTheirOtherCopies() {
        TestClock clock = new TestClock();
        LateOutcomes library = new LateOutcomes(clock, new FakeLibrary(clock, 2, 1));
        library.failing.add("d0");
        RecallEngine engine = threeFilesOnTwoVolumes(clock, library);

        assertThat(library.listsPerDrive.get("d0")).as("read lists handed to the drive that failed").isEqualTo(1);
        assertThat(engine.model().request("r1").finished()).isTrue();
        assertThat(engine.model().request("r1").failed()).isFalse();
        assertThat(engine.driveStates().get("d0")).startsWith("FAILED");
        assertThat(library.readOk).containsOnlyKeys(1L, 2L, 3L).allSatisfy((id, n) -> assertThat(n).isEqualTo(1));
    }

    @Test
    void aDriveWhoseLibraryRefusesAReadListLeavesServiceAndItsFilesGoToTheirOtherCopies() {
        TestClock clock = new TestClock();
        LateOutcomes library = new LateOutcomes(clock, new FakeLibrary(clock, 2, 1));
        library.refusing.add("d0");
        RecallEngine engine = threeFilesOnTwoVolumes(clock, library);

        assertThat(library.listsPerDrive.get("d0")).as("read lists asked of the drive that refused").isEqualTo(1);
        assertThat(engine.driveStates().get("d0")).startsWith("FAILED");
        assertThat(engine.model().request("r1").finished()).isTrue();
        assertThat(engine.model().request("r1").failed()).isFalse();
        assertThat(library.readOk).containsOnlyKeys(1L, 2L, 3L).allSatisfy((id, n) -> assertThat(n).isEqualTo(1));
    }

    @Test
    void aDriveGetsItsNextReadListOnlyOnceEveryOutcomeOfTheLastIsRecorded() {
        TestClock clock = new TestClock();
        LateOutcomes library = new LateOutcomes(clock, new FakeLibrary(clock, 1, 1));
        SchedulerConfig oneFilePerList = new SchedulerConfig(Policy.TAPE_AWARE, 0, 1, 0, 4 * 3600, 300,
                2_000_000_000_000L, 1, 150, 4, 3_000_000, Map.of(), Map.of());
        RecallEngine engine = new RecallEngine(library, clock, new TestCosts(), oneFilePerList, QueueStore.IN_MEMORY,
                Staging.NONE, EngineListener.NONE);
        List<QueueModel.FileSpec> files = new ArrayList<>();
        for (int i = 1; i <= 4; i++) {
            files.add(new QueueModel.FileSpec(i, "/f" + i, GB, List.of(new Copy("V1", i * 10 * GB)), "exp", "ds", null));
        }
        clock.schedule(Duration.ZERO, () -> engine.submit("r1", Instant.EPOCH, 0, "exp", files));
        clock.run(20_000);

        assertThat(engine.model().request("r1").finished()).isTrue();
        assertThat(library.listsPerDrive.get("d0")).isEqualTo(4);
        assertThat(library.listsWhileOutcomesPending).as("lists started while an outcome of the drive's last list was pending")
                .isZero();
    }

    /**
     * Reads through {@link FakeLibrary}, but completes each list's {@code done()} as soon as the library has
     * finished it and tells the engine each segment's outcome one second later. Drives in {@link #failing}
     * fail their first list with DRIVE_FAILURE and every later one at once, like a drive that broke; drives in
     * {@link #refusing} throw at their first list, like a library whose drive is not where the engine thinks.
     */
    static final class LateOutcomes implements TapeLibrary {
        final TestClock clock;
        final FakeLibrary library;
        final Set<String> failing = new HashSet<>();
        final Set<String> failed = new HashSet<>();
        final Set<String> refusing = new HashSet<>();
        final Map<String, Integer> listsPerDrive = new HashMap<>();
        final Map<String, Integer> pending = new HashMap<>();
        final Map<Long, Integer> readOk = new HashMap<>();
        int listsWhileOutcomesPending;

        LateOutcomes(TestClock clock, FakeLibrary library) {
            this.clock = clock;
            this.library = library;
        }

        @Override public LibraryLayout layout() { return library.layout(); }
        @Override public List<DriveStatus> drives() { return library.drives(); }
        @Override public CompletableFuture<Void> mount(String drive, String volume) { return library.mount(drive, volume); }
        @Override public CompletableFuture<Void> dismount(String drive) { return library.dismount(drive); }
        @Override public void setEnabled(String drive, boolean enabled) { library.setEnabled(drive, enabled); }
        @Override public CompletableFuture<Void> recover(String drive) { return library.recover(drive); }
        @Override public WriteBatch write(String drive, List<FileWrite> files) { return library.write(drive, files); }

        @Override
        public ReadBatch read(String drive, List<SegmentRead> segments) {
            listsPerDrive.merge(drive, 1, Integer::sum);
            if (refusing.remove(drive)) throw new IllegalStateException("drive " + drive + " is READING, not mounted and idle");
            if (pending.getOrDefault(drive, 0) > 0) listsWhileOutcomesPending++;
            pending.merge(drive, segments.size(), Integer::sum);
            Map<SegmentRead, CompletableFuture<ReadResult>> told = new IdentityHashMap<>();
            List<CompletableFuture<?>> finished = new ArrayList<>();
            boolean breaks = failing.remove(drive) || failed.contains(drive);
            ReadBatch inner = breaks ? null : library.read(drive, segments);
            for (SegmentRead s : segments) {
                CompletableFuture<ReadResult> out = new CompletableFuture<>();
                told.put(s, out);
                CompletableFuture<ReadResult> in = breaks
                        ? CompletableFuture.failedFuture(new TapeFailure(TapeFailure.Kind.DRIVE_FAILURE, drive, s.volume(), "drive broke"))
                        : inner.result(s);
                finished.add(in.handle((r, e) -> null));
                in.whenComplete((r, e) -> clock.schedule(Duration.ofSeconds(1), () -> {
                    pending.merge(drive, -1, Integer::sum);
                    if (e != null) {
                        out.completeExceptionally(e);
                    } else {
                        readOk.merge(s.fileId(), 1, Integer::sum);
                        out.complete(r);
                    }
                }));
            }
            if (breaks) failed.add(drive);
            CompletableFuture<Void> done = CompletableFuture.allOf(finished.toArray(CompletableFuture[]::new));
            return new ReadBatch() {
                @Override public CompletableFuture<ReadResult> result(SegmentRead s) { return told.get(s); }
                @Override public void cancel(SegmentRead s) { throw new UnsupportedOperationException(); }
                @Override public void cancelAll() { throw new UnsupportedOperationException(); }
                @Override public CompletableFuture<Void> done() { return done; }
            };
        }
    }
}
