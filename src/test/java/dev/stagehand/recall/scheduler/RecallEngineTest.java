package dev.stagehand.recall.scheduler;

import static dev.stagehand.recall.scheduler.Harness.file;
import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.recall.scheduler.SchedulerConfig.Policy;
import dev.stagehand.tape.SegmentRead;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class RecallEngineTest {

    static final long GB = 1_000_000_000L;

    @Test
    void aFileRequestedByManyRequestsIsReadOnceAndAFileOnDiskIsNotReadAgain() {
        Harness h = new Harness(2, 1, SchedulerConfig.defaults(Policy.TAPE_AWARE));
        h.submitAt(0, "r1", 0, "exp", List.of(file(1, "V1", 0, GB), file(2, "V1", GB, GB), file(3, "V2", 5 * GB, GB)));
        h.submitAt(1, "r2", 0, "exp", List.of(file(2, "V1", GB, GB), file(3, "V2", 5 * GB, GB)));
        h.submitAt(20, "r3", 0, "exp", List.of(file(3, "V2", 5 * GB, GB))); // while being read or queued
        h.run();
        Map<Long, Long> readsPerFile = h.library.reads.stream().collect(Collectors.groupingBy(SegmentRead::fileId, Collectors.counting()));
        assertThat(readsPerFile).containsOnly(Map.entry(1L, 1L), Map.entry(2L, 1L), Map.entry(3L, 1L));
        for (String r : List.of("r1", "r2", "r3")) assertThat(h.engine.model().request(r).finished()).isTrue();

        double before = h.clock.seconds();
        h.submitAt(before + 10, "r4", 0, "exp", List.of(file(1, "V1", 0, GB), file(3, "V2", 5 * GB, GB)));
        h.run();
        RequestWork r4 = h.engine.model().request("r4");
        assertThat(r4.finished()).isTrue();
        assertThat(r4.completedAt()).isEqualTo(r4.arrival()); // latency 0: everything already on disk
        assertThat(h.library.reads).hasSize(3);
    }

    /**
     * A large request taken in slices: its first slice's volume is mounted and read before the rest has come, the
     * request stays open while it waits for its next slices, each file is read once, and it ends with the last.
     */
    @Test
    void aRequestTakenInSlicesIsReadFromItsFirstSliceOnAndEndsAfterItsLast() {
        Harness h = new Harness(2, 1, SchedulerConfig.defaults(Policy.TAPE_AWARE));
        h.clock.schedule(java.time.Duration.ZERO, () -> h.engine.submit("r", java.time.Instant.EPOCH, 0, "exp",
                List.of(file(1, "V1", 0, GB), file(2, "V1", GB, GB)), true));
        h.run();
        assertThat(h.library.reads).extracting(SegmentRead::fileId).as("the first slice read before the rest came")
                .containsExactlyInAnyOrder(1L, 2L);
        RequestWork r = h.engine.model().request("r");
        assertThat(r.finished()).as("more files to come").isFalse();
        assertThat(h.engine.openRequestIds()).containsExactly("r");
        assertThat(h.engine.takesMore("r")).isTrue();

        h.clock.schedule(java.time.Duration.ZERO, () -> h.engine.addFiles("r", List.of(file(2, "V1", GB, GB), file(3, "V2", 0, GB)), true));
        h.run();
        assertThat(r.finished()).isFalse();
        h.clock.schedule(java.time.Duration.ZERO, () -> h.engine.addFiles("r", List.of(file(4, "V2", GB, GB)), false));
        h.run();
        Map<Long, Long> readsPerFile = h.library.reads.stream().collect(Collectors.groupingBy(SegmentRead::fileId, Collectors.counting()));
        assertThat(readsPerFile).as("each file once, a file named in two slices too")
                .containsOnly(Map.entry(1L, 1L), Map.entry(2L, 1L), Map.entry(3L, 1L), Map.entry(4L, 1L));
        assertThat(r.finished()).isTrue();
        assertThat(r.files()).hasSize(4);
        assertThat(h.engine.openRequestIds()).isEmpty();
        assertThat(h.engine.takesMore("r")).isFalse();
    }

    /**
     * A request still being taken in has no ETA: one from its slices so far covered only their volumes and read
     * too early. Its ETA comes with its last slice, at the next pass (not a refresh interval later), and covers
     * the volumes of every slice.
     */
    @Test
    void aRequestTakenInSlicesHasNoEtaUntilItsLastSliceAndThenOneForAllOfIt() {
        Harness h = new Harness(1, 1, SchedulerConfig.defaults(Policy.TAPE_AWARE));
        h.clock.schedule(java.time.Duration.ZERO, () -> h.engine.submit("r", java.time.Instant.EPOCH, 0, "exp",
                List.of(file(1, "V1", 0, GB), file(2, "V1", GB, GB)), true));
        h.clock.run(1);
        RequestWork r = h.engine.model().request("r");
        assertThat(r.intakePending()).isTrue();
        assertThat(r.eta()).as("not known while its files are still being taken in").isNaN();
        // a slice that is not the last: still none
        h.clock.schedule(java.time.Duration.ZERO, () -> h.engine.addFiles("r", List.of(file(3, "V2", 0, 20 * GB)), true));
        h.clock.run(2);
        assertThat(r.eta()).isNaN();
        h.clock.schedule(java.time.Duration.ZERO, () -> h.engine.addFiles("r", List.of(file(4, "V3", 0, 20 * GB)), false));
        h.clock.run(3); // within the refresh interval of the first pass
        double whole = r.eta();
        assertThat(whole).as("estimated as soon as it is whole").isNotNaN();
        h.run();
        assertThat(r.finished()).isTrue();
        assertThat(h.mountOrder).containsExactly("V1", "V2", "V3");
        // one drive reads V1, V2 and V3 in turn: the estimate covers V3's read, after V2's
        assertThat(whole).as("covers every slice's volume").isGreaterThan(h.dismountStartedAt.get("V2"));
    }

    @Test
    void theBacklogCountsEachQueuedFileOnceOnItsVolumeWithItsOldestRequestAndLeavesOutFilesReadElsewhere() {
        Harness h = new Harness(1, 1, SchedulerConfig.defaults(Policy.TAPE_AWARE));
        h.submitAt(0, "r1", 0, "exp", List.of(file(1, "atlas", "V1", 0, GB), file(2, "atlas", "V1", 3 * GB, 2 * GB),
                file(3, "cms", "V2", 0, 4 * GB)));
        h.submitAt(1, "r2", 0, "exp", List.of(file(3, "cms", "V2", 0, 4 * GB), file(4, "cms", "V2", 9 * GB, GB)));
        h.clock.run(2); // both taken in, the one drive still mounting: nothing claimed yet
        Backlog b = h.engine.backlog(java.util.Set.of());
        assertThat(b.perVolume()).containsOnlyKeys("V1", "V2");
        assertThat(b.perVolume().get("V1").files()).isEqualTo(2);
        assertThat(b.perVolume().get("V1").bytes()).isEqualTo(3 * GB);
        assertThat(b.perVolume().get("V2").files()).as("file 3 once, though two requests want it").isEqualTo(2);
        assertThat(b.perVolume().get("V2").bytes()).isEqualTo(5 * GB);
        assertThat(b.perVolume().get("V2").oldestArrival()).as("r1's arrival").isEqualTo(0.0);
        double eta1 = h.engine.model().request("r1").eta(), eta2 = h.engine.model().request("r2").eta();
        assertThat(eta1).isNotNaN();
        assertThat(b.perVolume().get("V2").latestEta()).as("the later estimate of r1 and r2 (one may have none yet)")
                .isEqualTo(Double.isNaN(eta2) ? eta1 : Math.max(eta1, eta2));
        assertThat(b.perExperiment().get("atlas").files()).isEqualTo(2);
        assertThat(b.perExperiment().get("cms").bytes()).isEqualTo(5 * GB);

        // a file another instance is reading counts where it is read, not here
        Backlog without = h.engine.backlog(java.util.Set.of(3L));
        assertThat(without.perVolume().get("V2").files()).isEqualTo(1);
        assertThat(without.perVolume().get("V2").bytes()).isEqualTo(GB);
        assertThat(without.perExperiment().get("cms").files()).isEqualTo(1);
        assertThat(h.engine.backlog(java.util.Set.of(1L, 2L)).perVolume()).as("V1 read elsewhere whole").containsOnlyKeys("V2");

        h.run();
        assertThat(h.engine.backlog(java.util.Set.of()).perVolume()).isEmpty();
    }

    @Test
    void filesAnotherInstanceClaimedAreHeldAsClaimedElsewhereUntilTheirOutcomeArrives() {
        TestClock clock = new TestClock();
        FakeLibrary library = new FakeLibrary(clock, 1, 1);
        QueueStore othersHoldFile2 = new QuietStore() { // another instance holds file 2's claim
            @Override public List<FileWork> claim(String volume, List<FileWork> files) {
                return files.stream().filter(f -> f.id() != 2).toList();
            }
        };
        RecallEngine engine = new RecallEngine(library, clock, new TestCosts(), SchedulerConfig.defaults(Policy.TAPE_AWARE),
                othersHoldFile2, Staging.NONE, EngineListener.NONE);
        clock.schedule(Duration.ZERO, () -> engine.submit("r1", Instant.EPOCH, 0, "exp",
                List.of(file(1, "V1", 0, GB), file(2, "V1", GB, GB), file(3, "V1", 2 * GB, GB))));
        clock.run(20_000);
        assertThat(engine.claimedElsewhere()).containsExactly(2L);
        assertThat(engine.model().request("r1").finished()).as("waits for file 2's outcome").isFalse();
        engine.finishedElsewhere(2, true, null);
        assertThat(engine.claimedElsewhere()).isEmpty();
        assertThat(engine.model().request("r1").finished()).isTrue();
    }

    /**
     * Files another instance sharing the queue read or claimed after this engine took them in were learnt only at
     * the claim after the mount: a volume with nothing left was mounted for nothing. They are asked for before the
     * mount: such a volume is not mounted and the requests waiting only on those files end; a volume with some
     * files left is mounted for those.
     */
    @Test
    void filesAnotherInstanceTookAfterTheyWereQueuedHereAreLeftOutBeforeTheMount() {
        TestClock clock = new TestClock();
        FakeLibrary library = new FakeLibrary(clock, 1, 1);
        java.util.Set<Long> readElsewhere = java.util.Set.of(1L, 2L), claimedElsewhere = java.util.Set.of(4L);
        List<Integer> looks = new ArrayList<>();
        QueueStore store = new QuietStore() {
            @Override public List<FileWork> claim(String volume, List<FileWork> files) {
                return files.stream().filter(f -> !readElsewhere.contains(f.id()) && !claimedElsewhere.contains(f.id())).toList();
            }
            @Override public List<Taken> takenElsewhere(List<FileWork> files) {
                looks.add(files.size());
                List<Taken> out = new ArrayList<>();
                for (FileWork f : files) {
                    if (readElsewhere.contains(f.id())) out.add(new Taken(f.id(), Elsewhere.ON_DISK, null));
                    if (claimedElsewhere.contains(f.id())) out.add(new Taken(f.id(), Elsewhere.CLAIMED, null));
                }
                return out;
            }
        };
        RecallEngine engine = new RecallEngine(library, clock, new TestCosts(), SchedulerConfig.defaults(Policy.TAPE_AWARE),
                store, Staging.NONE, EngineListener.NONE);
        clock.schedule(Duration.ZERO, () -> {
            engine.submit("r1", Instant.EPOCH, 0, "exp", List.of(file(1, "V1", 0, 40 * GB), file(2, "V1", 41 * GB, 40 * GB)));
            engine.submit("r2", Instant.EPOCH, 0, "exp", List.of(file(3, "V2", 0, GB), file(4, "V2", 2 * GB, GB)));
        });
        clock.run(20_000);
        assertThat(library.mounts).as("V1's files were all read elsewhere").containsExactly("V2");
        assertThat(library.reads).extracting(SegmentRead::fileId).containsExactly(3L);
        assertThat(engine.model().request("r1").finished()).as("its files are on disk").isTrue();
        assertThat(engine.model().request("r2").finished()).as("waits for file 4's outcome").isFalse();
        assertThat(engine.claimedElsewhere()).containsExactly(4L);
        assertThat(looks).as("asked once per mount decision, for the volume's queued files").isNotEmpty().allMatch(n -> n <= 2);
    }

    /**
     * A drive whose volume another instance held when this engine started (state read from the shared library)
     * was marked failed and never used again, even once that lease had ended: its files waited for a restart.
     */
    @Test
    void aDriveLeftOutBecauseAnotherInstanceHeldItsVolumeIsTakenBackWhenTheLeaseIsOurs() {
        TestClock clock = new TestClock();
        FakeLibrary library = new FakeLibrary(clock, 1, 1);
        library.mount("d0", "V1");
        clock.run(100);
        boolean[] heldElsewhere = {true};
        QueueStore store = new QuietStore() {
            @Override public boolean claimVolume(String volume) { return !heldElsewhere[0]; }
        };
        RecallEngine engine = new RecallEngine(library, clock, new TestCosts(), SchedulerConfig.defaults(Policy.TAPE_AWARE),
                store, Staging.NONE, EngineListener.NONE);
        clock.schedule(Duration.ZERO, () -> engine.submit("r1", Instant.EPOCH, 0, "exp", List.of(file(1, "V1", 0, GB))));
        clock.run(clock.seconds() + 1000);
        engine.libraryDrives(library.drives());
        clock.run(clock.seconds() + 1000);
        assertThat(library.reads).as("the volume is still another instance's").isEmpty();

        heldElsewhere[0] = false; // that instance's lease ended
        engine.libraryDrives(library.drives());
        clock.run(clock.seconds() + 1000);
        assertThat(library.reads).extracting(SegmentRead::fileId).containsExactly(1L);
        assertThat(engine.model().request("r1").finished()).isTrue();
    }

    /**
     * Another instance sharing the library took the accessors' exchanges between this pass's look (none under way)
     * and its mount: the mount is not started and the volume's claim is given back; a later pass mounts it once the
     * accessors have room.
     */
    @Test
    void aMountTheAccessorsHaveNoRoomForAtItsNoteWaitsForALaterPass() {
        TestClock clock = new TestClock();
        FakeLibrary library = new FakeLibrary(clock, 2, 1);
        library.exchangesNotedElsewhere = Integer.MAX_VALUE;
        List<String> released = new ArrayList<>();
        QueueStore store = new QuietStore() {
            @Override public void releaseVolume(String volume) { released.add(volume); }
        };
        RecallEngine engine = new RecallEngine(library, clock, new TestCosts(), SchedulerConfig.defaults(Policy.TAPE_AWARE),
                store, Staging.NONE, EngineListener.NONE);
        clock.schedule(Duration.ZERO, () -> engine.submit("r1", Instant.EPOCH, 0, "exp", List.of(file(1, "V1", 0, GB))));
        clock.run(clock.seconds() + 1000);
        assertThat(library.mounts).as("no room at the note").isEmpty();
        assertThat(released).as("the volume's claim given back").containsExactly("V1");

        library.exchangesNotedElsewhere = 0; // that instance's exchanges ended
        engine.requestPass();
        clock.run(clock.seconds() + 1000);
        assertThat(library.mounts).containsExactly("V1");
        assertThat(engine.model().request("r1").finished()).isTrue();
    }

    /**
     * An operator disables a drive that is reading (CTA's "down"): its list ends, no new list starts on it though
     * its volume has more work, it is unloaded and out of use; enabled again, it serves the rest.
     */
    @Test
    void aDriveTakenDownWhileReadingEndsItsListIsUnloadedAndTakesNoNewWork() {
        Harness h = new Harness(1, 1, SchedulerConfig.defaults(Policy.TAPE_AWARE));
        h.submitAt(0, "r1", 0, "exp", List.of(file(1, "V1", 0, GB)));
        double t = 0;
        while (h.library.reads.isEmpty() && t < 10_000) h.clock.run(t += 0.5);
        assertThat(h.library.reads).isNotEmpty();
        h.library.setEnabled("d0", false); // reading file 1
        h.engine.libraryDrives(h.library.drives());
        h.submitAt(t + 0.1, "r2", 0, "exp", List.of(file(2, "V1", 5 * GB, GB)));
        h.clock.run(t += 2000);
        assertThat(h.library.reads).extracting(SegmentRead::fileId).as("the list under way ended; nothing new").containsExactly(1L);
        assertThat(h.library.dismounts).containsExactly("d0 V1");
        assertThat(h.library.drives().getFirst().state()).isEqualTo(dev.stagehand.tape.DriveState.DISABLED);
        h.engine.libraryDrives(h.library.drives());
        h.clock.run(t += 2000);
        assertThat(h.library.mounts).as("not used while disabled").containsExactly("V1");

        h.library.setEnabled("d0", true);
        h.engine.libraryDrives(h.library.drives());
        h.clock.run(t += 2000);
        assertThat(h.library.reads).extracting(SegmentRead::fileId).containsExactly(1L, 2L);
        assertThat(h.engine.model().request("r2").finished()).isTrue();
    }

    /**
     * The operator's down reaches the library at once but this engine only at its next intake round: a request
     * arriving meanwhile for the mounted volume had its list started on the drive going down. The library now
     * refuses it (DRIVE_DOWN): the file stays queued (not failed, its volume not marked unavailable), the drive is
     * unloaded and DISABLED, and the file is read once the drive is enabled again.
     */
    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.EnumSource(value = Policy.class, names = {"TAPE_AWARE", "FIFO"})
    void aListAskedOfADriveGoingDownBeforeTheEngineKnowsIsRefusedAndItsFilesWait(Policy policy) {
        dev.stagehand.platform.VirtualClock clock = new dev.stagehand.platform.VirtualClock();
        dev.stagehand.tape.SimulatedLibrary library = dev.stagehand.tape.SimulatedLibrary.builder(clock).drives(1).accessors(1).build();
        RecallEngine engine = new RecallEngine(library, clock, new TestCosts(), SchedulerConfig.defaults(policy),
                QueueStore.IN_MEMORY, Staging.NONE, EngineListener.NONE);
        engine.submit("r1", clock.now(), 0, "exp", List.of(file(1, "V1", 0, GB)));
        for (int i = 0; i < 200 && !engine.model().request("r1").finished(); i++) clock.advance(Duration.ofSeconds(5));
        assertThat(engine.model().request("r1").finished()).isTrue();
        assertThat(library.drive("drive01").state()).isEqualTo(dev.stagehand.tape.DriveState.MOUNTED_IDLE);

        library.setEnabled("drive01", false); // the engine is not told: its intake round has not come
        engine.submit("r2", clock.now(), 0, "exp", List.of(file(2, "V1", 5 * GB, GB)));
        clock.advance(Duration.ofSeconds(600));
        assertThat(engine.model().request("r2").finished()).as("not read on the drive going down").isFalse();
        assertThat(engine.model().file(2).state()).isEqualTo(FileWork.State.QUEUED);
        assertThat(engine.unavailableVolumes()).isEmpty();
        assertThat(library.drive("drive01")).isEqualTo(new dev.stagehand.tape.DriveStatus("drive01",
                dev.stagehand.tape.DriveState.DISABLED, null, 0));

        library.setEnabled("drive01", true);
        engine.libraryDrives(library.drives());
        clock.advance(Duration.ofSeconds(600));
        assertThat(engine.model().request("r2").finished()).isTrue();
        assertThat(engine.model().file(2).state()).isEqualTo(FileWork.State.ON_DISK);
        library.close();
    }

    /**
     * Restarted with a drive an operator was taking down (the saved flag read back): the engine unloads it at
     * once and it is DISABLED. It was taken for an idle drive like any other, kept mounted until its idle time ran
     * out (or the intake's next look at the library).
     */
    @Test
    void aDriveGoingDownWhenTheServiceStoppedIsUnloadedAtStart() {
        dev.stagehand.platform.VirtualClock clock = new dev.stagehand.platform.VirtualClock();
        dev.stagehand.tape.SimulatedLibrary library = dev.stagehand.tape.SimulatedLibrary.builder(clock).drives(2).accessors(1)
                .initialDrives(List.of(new dev.stagehand.tape.DriveStatus("drive01", dev.stagehand.tape.DriveState.MOUNTED_IDLE, "V1", 0, true),
                        new dev.stagehand.tape.DriveStatus("drive02", dev.stagehand.tape.DriveState.MOUNTED_IDLE, "V2", 0)))
                .build();
        RecallEngine engine = new RecallEngine(library, clock, new TestCosts(), SchedulerConfig.defaults(Policy.TAPE_AWARE),
                QueueStore.IN_MEMORY, Staging.NONE, EngineListener.NONE);
        engine.requestPass();
        clock.advance(Duration.ofSeconds(200)); // less than the idle dismount (300 s)
        assertThat(library.drive("drive01")).isEqualTo(new dev.stagehand.tape.DriveStatus("drive01",
                dev.stagehand.tape.DriveState.DISABLED, null, 0));
        assertThat(library.drive("drive02").state()).as("not going down: kept").isEqualTo(dev.stagehand.tape.DriveState.MOUNTED_IDLE);
        library.close();
    }

    /**
     * The embedded default: one simulated library, its last drive the archive's (DriveRoles), one accessor and one
     * exchange per accessor. The archive's mount under way on the write drive takes the budget: the recall engine
     * mounts nothing until it has loaded (it started its mount beside it, both queued at the robot). The archive's
     * dismount does not hold a recall mount back, as the engine's own dismounts do not.
     */
    @Test
    void anArchiveMountUnderWayOnTheWriteDriveHoldsBackARecallMount() {
        dev.stagehand.platform.VirtualClock clock = new dev.stagehand.platform.VirtualClock();
        dev.stagehand.tape.SimulatedLibrary library = dev.stagehand.tape.SimulatedLibrary.builder(clock).drives(2).accessors(1).build();
        dev.stagehand.tape.TapeLibrary reading = new dev.stagehand.tape.DriveRoles(1).forReading(library);
        assertThat(reading.layout().drives()).containsExactly("drive01");
        SchedulerConfig cfg = new SchedulerConfig(Policy.TAPE_AWARE, 500_000_000_000L, 10_000, 0, 4 * 3600, 300,
                2_000_000_000_000L, 20_000, 150, 1, 3_000_000, java.util.Map.of(), java.util.Map.of());
        RecallEngine engine = new RecallEngine(reading, clock, new TestCosts(), cfg, QueueStore.IN_MEMORY, Staging.NONE,
                EngineListener.NONE);

        library.mount("drive02", "W1"); // the archive flusher's mount
        engine.submit("r1", clock.now(), 0, "exp", List.of(file(1, "V1", 0, GB)));
        clock.advance(Duration.ofSeconds(1));
        assertThat(library.drive("drive02").state()).isEqualTo(dev.stagehand.tape.DriveState.MOUNTING);
        assertThat(library.drive("drive01").state()).as("held back by the archive's mount")
                .isEqualTo(dev.stagehand.tape.DriveState.EMPTY);

        for (int i = 0; i < 600 && library.drive("drive02").state() == dev.stagehand.tape.DriveState.MOUNTING; i++)
            clock.advance(Duration.ofSeconds(1));
        assertThat(library.drive("drive02").state()).isEqualTo(dev.stagehand.tape.DriveState.MOUNTED_IDLE);
        assertThat(library.drive("drive01").state()).isEqualTo(dev.stagehand.tape.DriveState.EMPTY);
        engine.requestPass(); // the service's next intake round (every poll interval), as for another instance's mounts
        clock.advance(Duration.ofSeconds(1));
        assertThat(library.drive("drive01").state()).as("mounted once the archive's mount is done")
                .isIn(dev.stagehand.tape.DriveState.MOUNTING, dev.stagehand.tape.DriveState.MOUNTED_IDLE,
                        dev.stagehand.tape.DriveState.READING);
        for (int i = 0; i < 600 && !engine.model().request("r1").finished(); i++) clock.advance(Duration.ofSeconds(1));
        assertThat(engine.model().request("r1").finished()).isTrue();

        library.dismount("drive02"); // the archive's dismount: not counted
        engine.submit("r2", clock.now(), 0, "exp", List.of(file(2, "V2", 0, GB)));
        clock.advance(Duration.ofSeconds(1));
        assertThat(library.drive("drive02").state()).isEqualTo(dev.stagehand.tape.DriveState.UNLOADING);
        assertThat(library.drive("drive01").state()).as("V1 unloaded for V2 beside the archive's dismount")
                .isEqualTo(dev.stagehand.tape.DriveState.UNLOADING);
        library.close();
    }

    /**
     * A shared library: of four drives, two are used by another instance (ELSEWHERE). This engine has two drives,
     * too few to hold one back empty for requests to come; counting the other instance's it kept half of four
     * "ready" and so unloaded both its drives as soon as their reads ended (a volume's next request mounted it again).
     */
    @Test
    void drivesAnotherInstanceUsesAreNotCountedWhenKeepingDrivesReady() {
        TestClock clock = new TestClock();
        FakeLibrary library = new FakeLibrary(clock, 4, 1);
        library.elsewhere.addAll(List.of("d2", "d3"));
        RecallEngine engine = new RecallEngine(library, clock, new TestCosts(), SchedulerConfig.defaults(Policy.TAPE_AWARE),
                QueueStore.IN_MEMORY, Staging.NONE, EngineListener.NONE);
        clock.schedule(Duration.ZERO, () -> engine.submit("r1", Instant.EPOCH, 0, "exp",
                List.of(file(1, "V1", 0, 100 * GB), file(2, "V2", 0, 100 * GB))));
        double t = 0;
        while (library.reads.size() < 2 && t < 10_000) clock.run(t += 1);
        assertThat(library.mounts).containsExactlyInAnyOrder("V1", "V2");
        clock.run(t + 100); // well within the idle dismount (300 s)
        assertThat(library.dismounts).as("both drives keep their volumes while idle").isEmpty();
        assertThat(engine.driveStates()).containsEntry("d2", "FAILED").containsEntry("d3", "FAILED");
    }

    @Test
    void agingServesAnOldLowPriorityRequestBeforeAStreamOfUrgentOnes() {
        double aging = 1200;
        Harness h = new Harness(1, 1, SchedulerConfig.defaults(Policy.TAPE_AWARE).withAgingLimit(aging));
        h.submitAt(0, "old", 0, "exp", List.of(file(1, "LOW", 100 * GB, GB)));
        for (int i = 0; i < 60; i++) { // urgent work on other tapes, arriving faster than one drive serves it
            h.submitAt(i * 60.0, "urgent-" + i, 5, "exp", List.of(file(100 + i, "HI" + i, 500 * GB, 20 * GB)));
        }
        h.run();
        RequestWork old = h.engine.model().request("old");
        assertThat(old.finished()).isTrue();
        double lastUrgent = h.engine.model().request("urgent-59").completedAt();
        assertThat(old.completedAt()).isLessThan(lastUrgent);
        // it starts once it is older than the limit: at most one other tape's service later, plus its own
        assertThat(old.completedAt() - old.arrival()).isLessThan(aging + 600);
    }

    @Test
    void agingActsEarlyEnoughForTheOldRequestToEndWithinTheLimit() {
        // the stream of the test above; acting only at the limit, the old request would end after it (a tape
        // being read ahead of it, its unload, then its own mount and read)
        double aging = 3600;
        Harness h = new Harness(1, 1, SchedulerConfig.defaults(Policy.TAPE_AWARE).withAgingLimit(aging));
        h.submitAt(0, "old", 0, "exp", List.of(file(1, "LOW", 100 * GB, GB)));
        for (int i = 0; i < 120; i++) {
            h.submitAt(i * 60.0, "urgent-" + i, 5, "exp", List.of(file(100 + i, "HI" + i, 500 * GB, 20 * GB)));
        }
        h.run();
        RequestWork old = h.engine.model().request("old");
        assertThat(old.completedAt() - old.arrival()).isBetween(aging * 0.9, aging);
    }

    @Test
    void withoutAgingTheStreamWouldStarveIt() { // the control for the test above
        Harness h = new Harness(1, 1, SchedulerConfig.defaults(Policy.TAPE_AWARE).withAgingLimit(1e9));
        h.submitAt(0, "old", 0, "exp", List.of(file(1, "LOW", 100 * GB, GB)));
        for (int i = 0; i < 60; i++) {
            h.submitAt(i * 60.0, "urgent-" + i, 5, "exp", List.of(file(100 + i, "HI" + i, 500 * GB, 20 * GB)));
        }
        h.run();
        assertThat(h.engine.model().request("old").completedAt() - 0).isGreaterThan(1200 + 600);
    }

    @Test
    void aBulkRecallLongerThanTheAgingLimitStillEndsItsDrivesEvenly() {
        // Every tape below starves (older than 60 s) long before a drive frees; by age alone S1 and S2 would
        // go first and the long L1 last, ending ~2,700 s after the others. Balanced, L1 starts in that round.
        Harness h = new Harness(2, 1, SchedulerConfig.defaults(Policy.TAPE_AWARE).withAgingLimit(60));
        h.submitAt(0, "r0", 0, "exp", List.of(file(1, "A0", 10 * GB, 400 * GB), file(2, "A1", 10 * GB, 400 * GB)));
        h.submitAt(10, "r1", 0, "exp", List.of(file(3, "S1", 10 * GB, 300 * GB), file(4, "S2", 10 * GB, 300 * GB)));
        h.submitAt(20, "r2", 0, "exp", List.of(file(5, "L1", 10 * GB, 1000 * GB), file(6, "S3", 10 * GB, 300 * GB)));
        h.run();
        assertThat(h.mountOrder.subList(2, 4)).contains("L1");
        double end = Math.max(h.engine.model().request("r1").completedAt(), h.engine.model().request("r2").completedAt());
        // reads: 1,000 s on the first two tapes, then 2,500 s (L1) beside 2,250 s (S1-S3) plus their changes
        assertThat(end).isLessThan(4_300);
        assertThat(h.library.mounts).hasSize(6);
    }

    @Test
    void experimentDriveCapsAreRespected() {
        SchedulerConfig cfg = SchedulerConfig.defaults(Policy.TAPE_AWARE).withCaps(Map.of("atlas", 1), Map.of());
        Harness h = new Harness(4, 2, cfg);
        List<QueueModel.FileSpec> atlas = new ArrayList<>(), cms = new ArrayList<>();
        for (int v = 0; v < 4; v++) {
            atlas.add(file(v, "atlas", "A" + v, 10 * GB, 50 * GB));
            cms.add(file(100 + v, "cms", "C" + v, 10 * GB, 10 * GB));
        }
        h.submitAt(0, "atlas", 0, "atlas", atlas);
        h.submitAt(0, "cms", 0, "cms", cms);
        h.run();
        assertThat(h.maxDrivesPerExperiment.get("atlas")).isEqualTo(1);
        assertThat(h.maxDrivesPerExperiment.get("cms")).isGreaterThan(1);
        assertThat(h.library.reads).hasSize(8);
    }

    @Test
    void fairSharesSplitTheDrivesByWeight() {
        SchedulerConfig cfg = SchedulerConfig.defaults(Policy.TAPE_AWARE).withCaps(Map.of(), Map.of("atlas", 3.0, "cms", 1.0));
        Harness h = new Harness(4, 4, cfg);
        List<QueueModel.FileSpec> atlas = new ArrayList<>(), cms = new ArrayList<>();
        for (int v = 0; v < 6; v++) {
            atlas.add(file(v, "atlas", "A" + v, 10 * GB, 600 * GB)); // all worth a mount at once
            cms.add(file(100 + v, "cms", "C" + v, 10 * GB, 900 * GB)); // bigger queues: greedy would pick these
        }
        h.submitAt(0, "cms", 0, "cms", cms);
        h.submitAt(0, "atlas", 0, "atlas", atlas);
        h.clock.run(1); // the first pass: four mounts start
        assertThat(h.mountOrder).hasSize(4);
        long atlasMounts = h.mountOrder.stream().filter(v -> v.startsWith("A")).count();
        assertThat(atlasMounts).isEqualTo(3);
        h.run();
        assertThat(h.library.reads).hasSize(12);
    }

    @Test
    void aSmallPieceOfABulkRecallLeavesTheLastDriveForAWorthyQueueArrivingSoon() {
        Harness h = new Harness(4, 2, SchedulerConfig.defaults(Policy.TAPE_AWARE));
        List<QueueModel.FileSpec> first = new ArrayList<>();
        for (int v = 0; v < 6; v++) first.add(file(v, "S" + v, 10 * GB, 100 * GB)); // 6 small tapes, one request
        h.submitAt(0, "bulk-0", 0, "exp", first);
        h.submitAt(60, "bulk-1", 0, "exp", List.of(file(10, "BIG", 10 * GB, 700 * GB), file(11, "S9", 0, GB)));
        h.run();
        assertThat(h.mountOrder.subList(0, 3)).containsExactlyInAnyOrder("S0", "S1", "S2");
        assertThat(h.mountOrder.get(3)).isEqualTo("BIG"); // the last drive waited for it
        assertThat(h.library.reads).hasSize(8);
        assertThat(h.library.mounts).hasSize(8);
    }

    @Test
    void theLastDriveIsNotHeldForATapeBalancingChoseOverAWorthyOne() {
        // S1-S3 take three drives; O, too small to be worth a mount, waits for the last one until it is old
        // enough (300 s). By then L (450 GB, not worth a mount by CTA's bytes either) has arrived: balancing
        // gives the free drive to L and O to the first drive that frees. Holding the last drive for L would
        // not keep it free (O, worthy by age, would take it), so L goes there now.
        Harness h = new Harness(4, 2, SchedulerConfig.defaults(Policy.TAPE_AWARE));
        List<QueueModel.FileSpec> r0 = new ArrayList<>();
        long id = 1;
        for (String v : List.of("S1", "S2", "S3")) {
            for (int k = 0; k < 20; k++) r0.add(file(id++, v, 10 * GB + k * 10 * GB, 10 * GB)); // 200 GB back to back
        }
        r0.add(file(id++, "O", 10 * GB, 20 * GB));
        h.submitAt(0, "r0", 0, "exp", r0);
        h.submitAt(290, "r1", 0, "exp", List.of(file(id++, "L", 10 * GB, 450 * GB), file(id, "O", 40 * GB, 10 * GB)));
        h.run();
        assertThat(h.mountOrder).containsExactly("S1", "S2", "S3", "L", "O");
        // L from 300 s: about 1,160 s of mount, locate and read. Holding the drive for it put O first and L
        // after O's dismount, ending about 250 s later.
        assertThat(h.engine.model().request("r1").completedAt()).isLessThan(1_500);
    }

    @Test
    void aDriveReadsTheSmallTapeBeforeTheBigOneWhoseLongerRewindThenComesAfterTheEnd() {
        // one drive, one request on two tapes. The rewind grows with the bytes a mount moved: 110 s after
        // SMALL's 10 GB, 165 s after BIG's 60 GB. Only the first tape's dismount is waited for, so SMALL first
        // ends the recall 55 s sooner than longest first.
        Harness h = new Harness(1, 1, SchedulerConfig.defaults(Policy.TAPE_AWARE));
        h.submitAt(0, "r", 0, "exp", List.of(file(1, "BIG", 0, 60 * GB), file(2, "SMALL", 0, 10 * GB)));
        h.run();
        assertThat(h.mountOrder).containsExactly("SMALL", "BIG");
        // 23.7 + 25 (SMALL) + 146.7 (its dismount) + 23.7 + 150 (BIG) = 369.1 s; BIG first: 424.1 s
        assertThat(h.engine.model().request("r").completedAt()).isCloseTo(369.1, org.assertj.core.data.Offset.offset(1.0));
    }

    @Test
    void sixteenDrivesOnOneAccessorDoNotStartMoreExchangesThanItCanServe() {
        SchedulerConfig cfg = SchedulerConfig.defaults(Policy.TAPE_AWARE);
        Harness h = new Harness(16, 1, cfg);
        List<QueueModel.FileSpec> files = new ArrayList<>();
        for (int v = 0; v < 24; v++) files.add(file(v, "V" + v, 3 * GB, 40 * GB));
        h.submitAt(0, "bulk", 0, "exp", files);
        h.run();
        assertThat(h.maxMountsInFlight).isLessThanOrEqualTo(cfg.exchangesPerAccessor());
        assertThat(h.library.maxConcurrentMoves).isEqualTo(1);
        assertThat(h.library.mounts).hasSize(24); // every volume mounted once
        assertThat(h.library.reads).hasSize(24);
    }

    @Test
    void aMultiCopyFileIsReadFromTheMountedCopy() {
        Harness h = new Harness(2, 1, SchedulerConfig.defaults(Policy.TAPE_AWARE));
        h.submitAt(0, "big", 0, "exp", List.of(file(1, "M", 0, 200 * GB))); // keeps M mounted and reading
        QueueModel.FileSpec twoCopies = new QueueModel.FileSpec(2, "/f2", GB,
                List.of(new Copy("OTHER", 10 * GB), new Copy("M", 300 * GB)), "exp", "ds", null);
        h.submitAt(100, "r", 0, "exp", List.of(twoCopies));
        h.run();
        assertThat(h.library.mounts).containsExactly("M");
        assertThat(h.library.reads).extracting(SegmentRead::volume).containsOnly("M");
        assertThat(h.engine.model().request("r").finished()).isTrue();
    }

    @Test
    void aBadCopyFailsOverToTheOtherCopyAndWithoutOneTheFileFailsWithAReason() {
        Harness h = new Harness(2, 1, SchedulerConfig.defaults(Policy.TAPE_AWARE));
        h.library.badSegments.add("A:1");
        h.library.badSegments.add("A:3");
        QueueModel.FileSpec twoCopies = new QueueModel.FileSpec(1, "/f1", GB, List.of(new Copy("A", 0), new Copy("B", 0)), "exp", "ds", null);
        h.submitAt(0, "r", 0, "exp", List.of(twoCopies, file(3, "A", 5 * GB, GB)));
        h.run();
        assertThat(h.library.reads).extracting(SegmentRead::volume).containsExactly("B");
        RequestWork r = h.engine.model().request("r");
        assertThat(r.finished()).isTrue();
        assertThat(r.failedFiles()).isEqualTo(1);
        assertThat(h.engine.model().file(3).error()).contains("bad block");
        assertThat(h.engine.model().file(1).state()).isEqualTo(FileWork.State.ON_DISK);
    }

    @Test
    void bulkRecallMountsEveryVolumeOnceAndEveryRequestGetsAnEta() {
        Harness h = new Harness(4, 2, SchedulerConfig.defaults(Policy.TAPE_AWARE));
        List<QueueModel.FileSpec> files = new ArrayList<>();
        long id = 0;
        for (int v = 0; v < 10; v++) for (int k = 0; k < 30; k++) files.add(file(id++, "V" + v, (k * 7919L % 200) * 20 * GB, 2 * GB));
        h.submitAt(0, "bulk", 0, "exp", files);
        h.clock.run(1);
        assertThat(h.engine.model().request("bulk").eta()).isGreaterThan(0);
        h.run();
        assertThat(h.library.mounts).hasSize(10);
        assertThat(h.library.reads).hasSize(300);
    }

    @Test
    void inTheLastRoundTheLongTapeGoesFirstEvenWhenAShortOneWouldCompleteARequest() {
        Harness h = new Harness(2, 1, SchedulerConfig.defaults(Policy.TAPE_AWARE));
        h.submitAt(0, "r0", 0, "exp", List.of(file(1, "L0", 10 * GB, 200 * GB)));
        h.submitAt(0, "r3", 0, "exp", List.of(file(2, "M", 10 * GB, 100 * GB)));
        // r1 needs L1 and one more file on L0 (mounted): L1 completes nothing; S alone completes r2
        h.submitAt(10, "r1", 0, "exp", List.of(file(3, "L1", 10 * GB, 400 * GB), file(4, "L0", 5_000 * GB, GB)));
        h.submitAt(10, "r2", 0, "exp", List.of(file(5, "S", 10 * GB, 20 * GB)));
        h.run();
        // S first would leave L1 to start after two unloads (~1870 s); L1 first ends it by ~1600 s
        assertThat(h.mountOrder).containsExactly("L0", "M", "L1", "S");
        assertThat(h.engine.model().request("r1").completedAt()).isLessThan(1700);
        assertThat(h.engine.model().request("r2").finished()).isTrue();
    }

    @Test
    void amongTapesThatCompleteNothingThoseBringingARequestNearestToCompletionGoFirst() {
        Harness h = new Harness(1, 1, SchedulerConfig.defaults(Policy.TAPE_AWARE));
        // "spread" needs four tapes, "pair" two: no tape completes either, and spread's tapes are the longest
        List<QueueModel.FileSpec> spread = new ArrayList<>();
        for (int v = 0; v < 4; v++) spread.add(file(10 + v, "P" + v, 100 * GB, 20 * GB));
        h.submitAt(0, "spread", 0, "exp", spread);
        h.submitAt(0, "pair", 0, "exp", List.of(file(1, "Q0", 100 * GB, GB), file(2, "Q1", 100 * GB, GB)));
        h.run();
        // longest first would read two or more of spread's tapes before pair could complete
        assertThat(h.mountOrder.subList(0, 2)).containsExactlyInAnyOrder("Q0", "Q1");
        assertThat(h.engine.model().request("pair").completedAt())
                .isLessThan(h.engine.model().request("spread").completedAt() / 2);
        assertThat(h.engine.model().request("spread").finished()).isTrue();
    }

    @Test
    void bulkWorkOfLowerPriorityGetsDrivesWhileAStreamOfSmallUrgentRequestsKeepsComing() {
        Harness h = new Harness(4, 2, SchedulerConfig.defaults(Policy.TAPE_AWARE));
        for (int i = 0; i < 100; i++) { // one small urgent file every 30 s, each on its own tape: more than 4 drives serve
            h.submitAt(i * 30.0, "urgent-" + i, 2, "exp", List.of(file(100 + i, "HI" + i, 3_000 * GB, GB)));
        }
        List<QueueModel.FileSpec> bulk = new ArrayList<>();
        for (int v = 0; v < 4; v++) bulk.add(file(v, "B" + v, 10 * GB, 400 * GB));
        h.submitAt(600, "bulk", 0, "exp", bulk);
        h.run();
        int lastUrgentMount = h.mountOrder.lastIndexOf("HI99");
        // the bulk tapes are read during the stream (strict priority would keep them waiting to its end)...
        for (int v = 0; v < 4; v++) assertThat(h.mountOrder.indexOf("B" + v)).isBetween(0, lastUrgentMount);
        // ...on a quarter of the drives: the urgent queues (more than the library can serve) keep the rest
        assertThat(h.maxBulkDrives).isEqualTo(1);
        for (int i = 0; i < 100; i++) assertThat(h.engine.model().request("urgent-" + i).finished()).isTrue();
    }

    @Test
    void bulkWorkTakesMoreThanItsShareWhenOtherwiseItWouldEndPastTheAgingLimit() {
        // the stream of the test above for 3 h, and a bulk recall of eight tape-fulls (about 1,200 s each):
        // on a quarter of the drives it would need 9,600 s, and started only once aging it ends past the limit
        double aging = 7200;
        Harness h = new Harness(4, 2, SchedulerConfig.defaults(Policy.TAPE_AWARE).withAgingLimit(aging));
        for (int i = 0; i < 360; i++) {
            h.submitAt(i * 30.0, "urgent-" + i, 2, "exp", List.of(file(1000 + i, "HI" + i, 3_000 * GB, GB)));
        }
        List<QueueModel.FileSpec> bulk = new ArrayList<>();
        for (int v = 0; v < 8; v++) bulk.add(file(v, "B" + v, 10 * GB, 400 * GB));
        h.submitAt(600, "bulk", 0, "exp", bulk);
        h.run();
        RequestWork r = h.engine.model().request("bulk");
        assertThat(r.completedAt() - r.arrival()).isLessThan(aging);
        // it took a second drive before its request began aging (a quarter of 4 drives is one)
        assertThat(h.maxBulkDrives).isGreaterThan(1);
        assertThat(h.bulkDrivesBefore(600 + aging * 0.9)).isGreaterThan(1);
        for (int i = 0; i < 360; i++) assertThat(h.engine.model().request("urgent-" + i).finished()).isTrue();
    }

    @Test
    void idleDrivesAreEmptiedEarlySoANewRequestFindsADriveReady() {
        Harness h = new Harness(8, 1, SchedulerConfig.defaults(Policy.TAPE_AWARE));
        for (int v = 0; v < 8; v++) h.submitAt(0, "r" + v, 0, "exp", List.of(file(v, "V" + v, 10 * GB, GB)));
        // all eight are read by about 130 s; the idle timer (300 s) has not yet emptied any drive at 350 s
        h.submitAt(350, "late", 0, "exp", List.of(file(100, "NEW", 10 * GB, GB)));
        h.run();
        RequestWork late = h.engine.model().request("late");
        double locate = 4.3 + 60 * 10e9 / TestCosts.CW;
        // a ready drive: move in + load + locate + read, no rewind and unload (at least 85 s) before it
        assertThat(late.completedAt() - late.arrival()).isCloseTo(6.7 + 17 + locate + 2.5, org.assertj.core.data.Offset.offset(1e-6));
        assertThat(h.library.mounts).hasSize(9);
    }

    @Test
    void halfTheDrivesAreKeptReadyAndTheVolumesAskedForAgainStayMounted() {
        Harness h = new Harness(8, 1, SchedulerConfig.defaults(Policy.TAPE_AWARE));
        for (int v = 0; v < 8; v++) h.submitAt(0, "r" + v, 0, "exp", List.of(file(v, "V" + v, 10 * GB, GB)));
        // V0 and V1 are asked for again while queued: popular
        h.submitAt(1, "again-0", 0, "exp", List.of(file(20, "V0", 12 * GB, GB)));
        h.submitAt(1, "again-1", 0, "exp", List.of(file(21, "V1", 12 * GB, GB)));
        h.clock.run(250); // everything read by about 140 s; the idle timer (300 s) has not fired yet
        for (String r : List.of("r0", "r7", "again-0", "again-1")) assertThat(h.engine.model().request(r).finished()).isTrue();
        Map<String, String> states = h.engine.driveStates();
        long ready = states.values().stream().filter(s -> s.startsWith("EMPTY") || s.startsWith("UNLOADING")).count();
        assertThat(ready).isEqualTo(4); // half of the eight
        // the volumes emptied are ones asked for once; the popular ones are still in their drives
        assertThat(states.values()).contains("IDLE V0", "IDLE V1");
        assertThat(h.dismountStartedAt).hasSize(4).doesNotContainKeys("V0", "V1");
    }

    @Test
    void aVolumeAskedForOnceMakesADriveReadyAtOnceAPopularOneStaysMounted() {
        Harness h = new Harness(4, 1, SchedulerConfig.defaults(Policy.TAPE_AWARE));
        for (String v : List.of("POP", "POPB")) { // each asked for by two requests: popular
            h.submitAt(0, v + "-1", 0, "exp", List.of(file(v.length() * 10 + 1, v, 10 * GB, GB)));
            h.submitAt(0, v + "-2", 0, "exp", List.of(file(v.length() * 10 + 2, v, 11 * GB, GB)));
        }
        h.submitAt(0, "cold", 0, "exp", List.of(file(100, "COLD", 30 * GB, GB)));
        h.submitAt(0, "cold-b", 0, "exp", List.of(file(101, "COLDB", 30 * GB, GB)));
        h.run();
        double popIdle = Math.max(h.engine.model().request("POP-1").completedAt(), h.engine.model().request("POP-2").completedAt());
        double coldIdle = h.engine.model().request("cold").completedAt();
        assertThat(coldIdle).isLessThan(popIdle + DriveReadiness.READY_MIN_IDLE_S);
        // COLD goes the moment its drive is idle (two of the four drives are to be kept ready)
        assertThat(h.dismountStartedAt.get("COLD")).isCloseTo(coldIdle, org.assertj.core.data.Offset.offset(1e-6));
        // POP stays mounted until the idle timer: once the cold ones went, two drives were ready
        assertThat(h.dismountStartedAt.get("POP")).isCloseTo(popIdle + 300, org.assertj.core.data.Offset.offset(1e-3));
        assertThat(h.library.mounts).containsExactlyInAnyOrder("POP", "POPB", "COLD", "COLDB");
    }

    @Test
    void aVolumeTheLibraryReportsUnavailableTakesNoMoreWorkAndItsFilesGoToOtherCopiesOrFail() {
        Harness h = new Harness(2, 1, SchedulerConfig.defaults(Policy.TAPE_AWARE));
        h.library.missingVolumes.add("GONE");
        QueueModel.FileSpec twoCopies = new QueueModel.FileSpec(1, "/f1", GB, List.of(new Copy("GONE", 0), new Copy("B", 0)), "exp", "ds", null);
        h.submitAt(0, "r", 0, "exp", List.of(twoCopies, file(2, "GONE", 5 * GB, GB)));
        h.submitAt(5000, "later", 0, "exp", List.of(file(3, "GONE", 9 * GB, GB), file(4, "B", 20 * GB, GB)));
        h.run();
        // GONE was tried once; the second request's file on it failed at once, without another mount attempt
        assertThat(h.library.mounts.stream().filter("GONE"::equals)).hasSize(1);
        assertThat(h.engine.unavailableVolumes()).containsExactly("GONE");
        assertThat(h.library.reads).extracting(SegmentRead::fileId).containsExactlyInAnyOrder(1L, 4L);
        RequestWork r = h.engine.model().request("r");
        assertThat(r.finished()).isTrue();
        assertThat(r.failedFiles()).isEqualTo(1);
        assertThat(h.engine.model().file(2).error()).contains("VOLUME_UNAVAILABLE");
        RequestWork later = h.engine.model().request("later");
        assertThat(later.finished()).isTrue();
        assertThat(later.failedFiles()).isEqualTo(1);
        assertThat(h.engine.model().file(3).error()).contains("volume unavailable");

        h.engine.volumeAvailable("GONE"); // an operator restored it: new work may use it again
        h.library.missingVolumes.clear();
        h.submitAt(h.clock.seconds() + 10, "again", 0, "exp", List.of(file(3, "GONE", 9 * GB, GB)));
        h.run();
        assertThat(h.engine.model().request("again").failedFiles()).isZero();
        assertThat(h.library.reads).extracting(SegmentRead::fileId).contains(3L);
    }

    @Test
    void aPriorityChangeReordersWorkAlreadyQueued() {
        Harness h = new Harness(1, 1, SchedulerConfig.defaults(Policy.TAPE_AWARE));
        h.submitAt(0, "busy", 0, "exp", List.of(file(1, "BUSY", 0, 400 * GB))); // holds the only drive ~1,000 s
        h.submitAt(10, "a", 3, "exp", List.of(file(2, "A", 0, 600 * GB)));
        h.submitAt(20, "b", 0, "exp", List.of(file(3, "B", 0, 600 * GB)));
        h.submitAt(30, "shared", 0, "exp", List.of(file(4, "C", 0, 600 * GB)));
        h.submitAt(40, "c", 0, "exp", List.of(file(4, "C", 0, 600 * GB)));
        // while BUSY is read: b is raised above a; a is lowered below c's volume; c is raised (its file
        // is shared with "shared", which keeps priority 0: the file takes the higher of the two)
        h.clock.schedule(java.time.Duration.ofSeconds(100), () -> {
            h.engine.changePriority("b", 9);
            h.engine.changePriority("a", -5);
            h.engine.changePriority("c", 4);
        });
        h.run();
        assertThat(h.mountOrder).containsExactly("BUSY", "B", "C", "A");
        assertThat(h.engine.model().file(4).priority).isEqualTo(4);
    }

    @Test
    void filesArrivingForAMountedVolumeJoinItsPassAlongTheTapeAtTheNextReadList() {
        for (double batch : new double[] {50, 1e9}) { // each file about 24 s of locate and read: lists of 3 files
            Harness h = new Harness(1, 1, SchedulerConfig.defaults(Policy.TAPE_AWARE).withMaxBatchSeconds(batch));
            List<QueueModel.FileSpec> first = new ArrayList<>();
            for (int i = 0; i < 5; i++) first.add(file(i, "V", (long) (TestCosts.CW * (0.1 + 0.2 * i)), 5 * GB));
            h.submitAt(0, "first", 0, "exp", first);
            h.submitAt(60, "second", 0, "exp", List.of(file(9, "V", (long) (TestCosts.CW * 0.8), GB)));
            h.run();
            List<Long> order = h.library.reads.stream().map(SegmentRead::fileId).toList();
            // the second request's file lies between the 4th and 5th: read on the way, one pass. With short
            // lists it joins at the next list; with one list for the whole first queue, that list is cut
            // after the file under way when the request arrives (it completes on V), and the file joins too.
            assertThat(order).containsExactly(0L, 1L, 2L, 3L, 9L, 4L);
            assertThat(h.library.mounts).containsExactly("V");
        }
    }

    /** 30 files of 4 GB spread over the whole of tape V1, about ten minutes of locates and reads. */
    private static List<QueueModel.FileSpec> longRequest() {
        List<QueueModel.FileSpec> files = new ArrayList<>();
        for (int i = 0; i < 30; i++) files.add(file(100 + i, "V1", (i * 37 % 30) * 590 * GB, 4 * GB));
        return files;
    }

    /**
     * The long request at 0 s, then a one-file request for the same tape at 60 s, while the first read list
     * (150 s of the long request's files) is under way; run to the end.
     */
    static Harness longThenShort(SchedulerConfig config, boolean libraryDropsCancelled) {
        Harness h = new Harness(1, 1, config);
        h.library.dropsCancelled = libraryDropsCancelled;
        h.submitAt(0, "long", 0, "exp", longRequest());
        h.submitAt(60, "short", 0, "exp", List.of(file(1, "V1", 500 * GB, 4 * GB)));
        h.run();
        return h;
    }

    @Test
    void aShortRequestForTheTapeBeingReadIsReadBeforeTheRestOfALongOne() {
        Harness h = longThenShort(SchedulerConfig.defaults(Policy.TAPE_AWARE), true);
        RequestWork lng = h.engine.model().request("long"), shrt = h.engine.model().request("short");
        assertThat(lng.finished()).isTrue();
        assertThat(shrt.finished()).isTrue();
        // the list is cut after the file under way, the short request's file goes first: one file and two
        // locates (at most ~80 s each) after its arrival, not after the list or the long request's tour
        assertThat(shrt.completedAt() - shrt.arrival()).isLessThan(150);
        assertThat(lng.completedAt() - shrt.completedAt()).isGreaterThan(300);
        // every file read once: the dropped part of the list was read later, not twice
        assertThat(h.library.reads).hasSize(31);
        assertThat(h.library.mounts).hasSize(1);
    }

    @Test
    void aListIsNotCutOnALibraryThatReadsCancelledSegmentsAnyway() {
        // a site script reads its whole list whatever is cancelled: cutting it would read the rest twice
        Harness h = longThenShort(SchedulerConfig.defaults(Policy.TAPE_AWARE), false);
        RequestWork shrt = h.engine.model().request("short");
        assertThat(shrt.finished()).isTrue();
        assertThat(h.library.cancelled).isEmpty();
        // it waits for the list under way (up to max-batch-time), then goes first in the next one
        assertThat(shrt.completedAt() - shrt.arrival()).isGreaterThan(60);
        assertThat(h.library.reads).hasSize(31);
    }

    @Test
    void aRequestPastTheAgingLimitIsNotDelayedForAShortOne() {
        // the same two requests, but the long one is already older than the aging limit: it keeps its tour
        Harness h = longThenShort(SchedulerConfig.defaults(Policy.TAPE_AWARE).withAgingLimit(30), true);
        RequestWork lng = h.engine.model().request("long"), shrt = h.engine.model().request("short");
        assertThat(lng.finished()).isTrue();
        assertThat(shrt.finished()).isTrue();
        // in the tour along the tape its file comes near the end, over ten minutes later
        assertThat(shrt.completedAt() - shrt.arrival()).isGreaterThan(600);
    }

    @Test
    void aCopyLostInTheStagingAreaIsReadAgainAndItsOnlyTapeCopyNotBlamed() {
        TestClock clock = new TestClock();
        FakeLibrary library = new FakeLibrary(clock, 1, 1);
        // the first commit finds its reservation given up (another instance took the lapsed claim meanwhile)
        RecallEngine engine = new RecallEngine(library, clock, new TestCosts(), SchedulerConfig.defaults(Policy.TAPE_AWARE),
                QueueStore.IN_MEMORY, losesCommits(1), EngineListener.NONE);
        clock.schedule(Duration.ZERO, () -> engine.submit("r1", Instant.EPOCH, 0, "exp", List.of(file(1, "V1", 0, 1_000_000_000L))));
        clock.run(20_000);

        assertThat(engine.model().request("r1").finished()).isTrue();
        assertThat(engine.model().request("r1").failed()).isFalse();
        assertThat(library.reads).extracting(SegmentRead::fileId).containsExactly(1L, 1L);
    }

    @Test
    void aCopyLostAgainAndAgainFailsTheFileAfterAFewReads() {
        TestClock clock = new TestClock();
        FakeLibrary library = new FakeLibrary(clock, 1, 1);
        RecallEngine engine = new RecallEngine(library, clock, new TestCosts(), SchedulerConfig.defaults(Policy.TAPE_AWARE),
                QueueStore.IN_MEMORY, losesCommits(Integer.MAX_VALUE), EngineListener.NONE);
        clock.schedule(Duration.ZERO, () -> engine.submit("r1", Instant.EPOCH, 0, "exp", List.of(file(1, "V1", 0, 1_000_000_000L))));
        clock.run(100_000);

        assertThat(engine.model().request("r1").failed()).isTrue();
        assertThat(engine.model().file(1).error()).contains("reservation given up", RecallEngine.MAX_LOST_COPIES + " times");
        assertThat(library.reads).hasSize(RecallEngine.MAX_LOST_COPIES);
    }

    /**
     * FIFO: a file whose read ended without being read (an untyped failure, a cancelled read, a drive failure)
     * or whose staged copy was lost is queued again in its arrival place, ahead of the files that came after it,
     * and read. Before, it went back to its volume's queue but not to the arrival-order queue, the only one the
     * FIFO policy reads: it was never read again and its request never ended.
     */
    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.ValueSource(strings = {"untyped", "cancelled", "drive failure", "lost copy"})
    void fifoQueuesAFileThatWasNotReadAgainInItsArrivalPlace(String how) {
        TestClock clock = new TestClock();
        FakeLibrary library = new FakeLibrary(clock, 2, 1);
        switch (how) {
            case "untyped" -> library.failOnce.put(1L, new IllegalStateException("script died"));
            case "cancelled" -> library.failOnce.put(1L, new java.util.concurrent.CancellationException());
            case "drive failure" -> library.failOnce.put(1L, new dev.stagehand.tape.TapeFailure(
                    dev.stagehand.tape.TapeFailure.Kind.DRIVE_FAILURE, "d0", "V1", "drive fault"));
            default -> { }
        }
        RecallEngine engine = new RecallEngine(library, clock, new TestCosts(), SchedulerConfig.defaults(Policy.FIFO),
                QueueStore.IN_MEMORY, how.equals("lost copy") ? losesCommits(1) : Staging.NONE, EngineListener.NONE);
        // file 1 has a second copy: after a drive failure its first stays in the failed drive, and it is queued on V2
        QueueModel.FileSpec first = new QueueModel.FileSpec(1, "/f1", GB, List.of(new Copy("V1", 0), new Copy("V2", 0)),
                "exp", "ds", null);
        clock.schedule(Duration.ZERO, () -> engine.submit("r1", Instant.EPOCH, 0, "exp", List.of(first)));
        clock.schedule(Duration.ofSeconds(1), () -> engine.submit("r2", Instant.EPOCH.plusSeconds(1), 0, "exp",
                List.of(file(2, "V1", 5 * GB, GB), file(3, "V2", 5 * GB, 2 * GB)))); // V2 the longer queue then
        clock.run(100_000);

        assertThat(engine.model().request("r1").finished()).as("the file not read was read again").isTrue();
        assertThat(engine.model().request("r1").failed()).isFalse();
        List<Long> read = library.reads.stream().map(SegmentRead::fileId).toList();
        assertThat(read).filteredOn(id -> id == 1L).hasSize(how.equals("lost copy") ? 2 : 1);
        if (!how.equals("drive failure")) { // there file 2's only volume stays in the failed drive
            assertThat(engine.model().request("r2").finished()).isTrue();
            assertThat(read.lastIndexOf(1L)).as("in its arrival place: before the files that came after it")
                    .isLessThan(read.indexOf(2L));
        }
    }

    /**
     * A copy the library read but could not force to disk ({@code Durable.NotForced}) is given up as such, so the cache
     * counts it against its directory (and takes a directory whose fsync keeps failing out of service); the file is
     * read again. Any other untyped failure is given up as before.
     */
    @Test
    void aCopyNotForcedToDiskIsGivenUpAsSuchAndTheFileReadAgain() {
        TestClock clock = new TestClock();
        FakeLibrary library = new FakeLibrary(clock, 1, 1);
        library.failOnce.put(1L, new dev.stagehand.platform.Durable.NotForced(java.nio.file.Path.of("/cache/01/1.7"),
                new java.io.IOException("EIO")));
        library.failOnce.put(2L, new IllegalStateException("script died"));
        List<String> givenUp = new ArrayList<>();
        Staging staging = new Staging() {
            @Override public List<Slot> reserve(String volume, List<FileWork> files) { return NONE.reserve(volume, files); }
            @Override public long reservableBytes() { return Long.MAX_VALUE; }
            @Override public long usefulBatchBytes() { return 0; }
            @Override public Committed commit(FileWork file, String volume, Slot slot, long adler32) { return Committed.KEPT; }
            @Override public void abort(FileWork file, Slot slot, String reason) { givenUp.add("abort " + file.id()); }
            @Override
            public void notForced(FileWork file, Slot slot, String reason) {
                givenUp.add("not forced " + file.id() + ": " + reason);
            }
        };
        RecallEngine engine = new RecallEngine(library, clock, new TestCosts(), SchedulerConfig.defaults(Policy.FIFO),
                QueueStore.IN_MEMORY, staging, EngineListener.NONE);
        clock.schedule(Duration.ZERO, () -> engine.submit("r1", Instant.EPOCH, 0, "exp",
                List.of(file(1, "V1", 0, GB), file(2, "V1", GB, GB))));
        clock.run(100_000);

        assertThat(givenUp).containsExactlyInAnyOrder("not forced 1: cannot force /cache/01/1.7 to disk: EIO", "abort 2");
        assertThat(library.reads.stream().map(SegmentRead::fileId)).as("reads that landed: each file's second")
                .containsExactly(1L, 2L);
        assertThat(engine.model().request("r1").finished()).isTrue();
        assertThat(engine.model().request("r1").failed()).isFalse();
    }

    /** A staging area whose first {@code n} commits find their reservation given up. */
    private static Staging losesCommits(int n) {
        int[] commits = {0};
        return new Staging() {
            @Override public List<Slot> reserve(String volume, List<FileWork> files) { return NONE.reserve(volume, files); }
            @Override public long reservableBytes() { return Long.MAX_VALUE; }
            @Override public long usefulBatchBytes() { return 0; }
            @Override public void abort(FileWork file, Slot slot, String reason) { }
            @Override
            public Committed commit(FileWork file, String volume, Slot slot, long adler32) {
                return ++commits[0] <= n ? Committed.lost("reservation given up") : Committed.KEPT;
            }
        };
    }

    @Test
    void endedRequestsAndTheirDoneFilesAreForgottenWhileOpenOnesAndTheirFilesStay() {
        TestClock clock = new TestClock();
        FakeLibrary library = new FakeLibrary(clock, 1, 1);
        RecallEngine engine = new RecallEngine(library, clock, new TestCosts(), SchedulerConfig.defaults(Policy.TAPE_AWARE),
                QueueStore.IN_MEMORY, Staging.NONE, EngineListener.NONE);
        var shared = file(1, "V1", 0, 1_000_000L);
        clock.schedule(Duration.ZERO, () -> {
            engine.submit("r1", Instant.EPOCH, 0, "exp", List.of(shared, file(2, "V1", 1_000_000L, 1_000_000L)));
            engine.submit("r2", Instant.EPOCH, 0, "exp", List.of(shared));
        });
        clock.run(20_000);
        assertThat(engine.openRequests()).isZero();
        // r3 is taken in but the clock is not run: its file on V2 stays queued, r3 open
        engine.submit("r3", Instant.EPOCH, 0, "exp", List.of(shared, file(3, "V2", 0, 1_000_000L)));

        assertThat(engine.forgetEnded()).isEqualTo(2);
        assertThat(engine.heldRequestIds()).containsExactly("r3");
        assertThat(engine.model().file(2)).as("done, wanted by no open request").isNull();
        assertThat(engine.model().file(1)).as("on disk, still wanted by r3").isNotNull();
        assertThat(engine.model().file(3)).isNotNull();
        // a forgotten request asked again (the service's sweep found it still open in the database) is taken anew
        engine.submit("r1", Instant.EPOCH, 0, "exp", List.of(file(2, "V1", 1_000_000L, 1_000_000L)));
        assertThat(engine.heldRequestIds()).containsExactlyInAnyOrder("r1", "r3");
        assertThat(engine.model().file(2).state()).as("read again: the cache, not the engine, answers for staged files")
                .isEqualTo(FileWork.State.QUEUED);
    }

    @Test
    void filesCancelledOneByOneLeaveTheQueueAndTheirReadsNotStartedStopUnlessAnotherRequestWantsThem() {
        Harness h = new Harness(1, 1, SchedulerConfig.defaults(Policy.TAPE_AWARE));
        h.submitAt(0, "r1", 0, "exp", List.of(file(1, "V1", 0, GB), file(2, "V1", 10 * GB, GB), file(3, "V1", 20 * GB, GB),
                file(4, "V1", 30 * GB, GB), file(5, "V2", 0, GB)));
        h.submitAt(0, "r2", 0, "exp", List.of(file(3, "V1", 20 * GB, GB)));
        // until V1's list is under way, its first file being read
        for (double t = 0.5; t < 10_000 && h.engine.readingNow().size() < 4; t += 0.5) h.clock.run(t);
        assertThat(h.engine.readingNow()).containsExactlyInAnyOrder(1L, 2L, 3L, 4L);

        h.engine.forgetFiles("r1", java.util.Set.of(2L, 3L, 4L, 5L));
        h.run();
        assertThat(h.library.reads.stream().map(SegmentRead::fileId)).as("file 1 was under way, r2 wants file 3")
                .containsExactlyInAnyOrder(1L, 3L);
        assertThat(h.library.cancelled.stream().map(SegmentRead::fileId)).containsExactlyInAnyOrder(2L, 4L);
        assertThat(h.library.mounts).as("V2's only file was cancelled").containsExactly("V1");
        assertThat(h.engine.model().request("r1").finished()).isTrue();
        assertThat(h.engine.model().request("r2").finished()).isTrue();
        for (long gone : new long[] {2, 4, 5}) assertThat(h.engine.model().file(gone)).as("file %d", gone).isNull();
        assertThat(h.engine.model().queues()).isEmpty();
    }

    @Test
    void aDriveTheLibraryReportsFailedOrDisabledIsNotUsedUntilItReportsItEmptyAgain() {
        Harness h = new Harness(1, 1, SchedulerConfig.defaults(Policy.TAPE_AWARE));
        h.library.outOfService.add("d0");
        h.engine.libraryDrives(h.library.drives());
        h.submitAt(0, "r1", 0, "exp", List.of(file(1, "V1", 0, GB), file(2, "V1", GB, GB)));
        h.run();
        assertThat(h.library.mounts).as("its only drive is out of service").isEmpty();

        h.library.outOfService.clear(); // an operator recovered or enabled it
        h.engine.libraryDrives(h.library.drives());
        h.run();
        assertThat(h.library.mounts).containsExactly("V1");
        assertThat(h.engine.model().request("r1").finished()).isTrue();
    }

    /** A store that claims every file and keeps nothing; a test overrides what it looks at. */
    static class QuietStore implements QueueStore {
        @Override public List<FileWork> claim(String volume, List<FileWork> files) { return files; }
        @Override public void staged(FileWork file, String volume, long adler32, java.nio.file.Path path) { }
        @Override public void released(FileWork file) { }
        @Override public void failed(FileWork file) { }
        @Override public void requestFinished(RequestWork request) { }
        @Override public void etas(java.util.Collection<RequestWork> requests) { }
    }
}
