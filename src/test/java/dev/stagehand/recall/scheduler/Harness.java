package dev.stagehand.recall.scheduler;

import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** Test harness: engine + fake library + test clock, with what happened recorded. */
final class Harness implements EngineListener {
    final TestClock clock = new TestClock();
    final FakeLibrary library;
    final RecallEngine engine;
    final Map<String, Integer> drivesPerExperiment = new HashMap<>();
    final Map<String, String> driveExperiment = new HashMap<>();
    final Map<String, Integer> maxDrivesPerExperiment = new HashMap<>();
    final List<String> mountOrder = new ArrayList<>();
    int mountsInFlight, maxMountsInFlight;
    /** Drives mounting or reading a volume whose label starts with "B" (bulk in tests), now and at most. */
    int bulkDrives, maxBulkDrives;
    /** (time, bulk drives) at each mount of a bulk volume. */
    final List<double[]> bulkMounts = new ArrayList<>();
    final Map<String, String> driveVolume = new HashMap<>();
    /** When each volume's last dismount started. */
    final Map<String, Double> dismountStartedAt = new HashMap<>();

    Harness(int drives, int accessors, SchedulerConfig config) {
        library = new FakeLibrary(clock, drives, accessors);
        engine = new RecallEngine(library, clock, new TestCosts(), config, QueueStore.IN_MEMORY,
                Staging.NONE, this);
    }

    static QueueModel.FileSpec file(long id, String volume, long offset, long size) {
        return new QueueModel.FileSpec(id, "/f" + id, size, List.of(new Copy(volume, offset)), "exp", "ds", null);
    }

    static QueueModel.FileSpec file(long id, String exp, String volume, long offset, long size) {
        return new QueueModel.FileSpec(id, "/f" + id, size, List.of(new Copy(volume, offset)), exp, "ds", null);
    }

    /** Submits at virtual time {@code t} (schedules it on the clock). */
    void submitAt(double t, String id, int priority, String exp, List<QueueModel.FileSpec> files) {
        clock.schedule(java.time.Duration.ofNanos((long) ((t - clock.seconds()) * 1e9)),
                () -> engine.submit(id, Instant.EPOCH.plusNanos((long) (t * 1e9)), priority, exp, files));
    }

    /** Most drives holding bulk volumes at once among the bulk mounts started before {@code t}. */
    int bulkDrivesBefore(double t) {
        int most = 0;
        for (double[] m : bulkMounts) if (m[0] < t) most = Math.max(most, (int) m[1]);
        return most;
    }

    void run() {
        clock.run(1e9);
    }

    @Override
    public void mountStarted(String drive, String volume, double t) {
        mountOrder.add(volume);
        driveVolume.put(drive, volume);
        if (volume.startsWith("B")) {
            maxBulkDrives = Math.max(maxBulkDrives, ++bulkDrives);
            bulkMounts.add(new double[] {t, bulkDrives});
        }
        if (System.getenv("HARNESS_TRACE") != null) System.err.println(t + " mount " + volume + " on " + drive);
        mountsInFlight++;
        maxMountsInFlight = Math.max(maxMountsInFlight, mountsInFlight);
        String exp = engine.model().queue(volume).experiment();
        driveExperiment.put(drive, exp);
        int n = drivesPerExperiment.merge(exp, 1, Integer::sum);
        maxDrivesPerExperiment.merge(exp, n, Math::max);
    }

    @Override
    public void mounted(String drive, String volume, double t) {
        mountsInFlight--;
    }

    @Override
    public void dismountStarted(String drive, String volume, long moved, double t) {
        dismountStartedAt.put(volume, t);
        String v = driveVolume.remove(drive);
        if (v != null && v.startsWith("B")) bulkDrives--;
    }

    @Override
    public void dismounted(String drive, double t) {
        String exp = driveExperiment.remove(drive);
        if (exp != null) drivesPerExperiment.merge(exp, -1, Integer::sum);
    }
}
