package dev.stagehand.recall.simulation;

import dev.stagehand.platform.VirtualClock;
import dev.stagehand.recall.SimulationReport;
import dev.stagehand.recall.scheduler.Copy;
import dev.stagehand.recall.scheduler.EngineListener;
import dev.stagehand.recall.scheduler.FileWork;
import dev.stagehand.recall.scheduler.LowerBound;
import dev.stagehand.recall.scheduler.QueueModel.FileSpec;
import dev.stagehand.recall.scheduler.QueueStore;
import dev.stagehand.recall.scheduler.RecallEngine;
import dev.stagehand.recall.scheduler.Staging;
import dev.stagehand.recall.scheduler.RequestWork;
import dev.stagehand.recall.scheduler.SchedulerConfig;
import dev.stagehand.recall.scheduler.TapeModelCosts;
import dev.stagehand.tape.ReadResult;
import dev.stagehand.tape.SimulatedLibrary;
import dev.stagehand.tape.TapeModel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;

/**
 * Replays a workload through the real {@link RecallEngine} on the simulated library's virtual clock: the
 * scheduler is not re-implemented here, only driven. Segments carry no target (time only, no bytes).
 */
public final class SimulationRun implements EngineListener {

    private final Workload workload;
    private final int drives;
    private final int accessors;
    private final SchedulerConfig config;
    private final TapeModel model;
    private final Consumer<String> progress;

    private long files, bytes, mounts, failed;
    private double makespan, locate;
    private final Set<String> volumesRead = new HashSet<>();
    private final List<Double> latencies = new ArrayList<>();
    /** Per request: the ETA the engine gave it {@link #ETA_PROBE_S} after its arrival (absent: done by then). */
    private final Map<String, Double> probedEta = new HashMap<>();
    private final List<Double> etaErrors = new ArrayList<>();
    private final List<double[]> accessorMoves = new ArrayList<>();
    private final Map<String, Double> mountStartedAt = new HashMap<>();
    private long nextProgress;
    private long totalFiles;

    public SimulationRun(Workload workload, int drives, int accessors, SchedulerConfig config, TapeModel model,
                         Consumer<String> progress) {
        if (drives < 1) throw new IllegalArgumentException("--drives must be >= 1");
        if (accessors < 1) throw new IllegalArgumentException("--accessors must be >= 1");
        this.workload = workload;
        this.drives = drives;
        this.accessors = accessors;
        this.config = config;
        this.model = model;
        this.progress = progress;
    }

    public SimulationReport run() {
        long wall0 = System.nanoTime();
        VirtualClock clock = new VirtualClock();
        SimulatedLibrary library = SimulatedLibrary.builder(clock).drives(drives).accessors(accessors).model(model).build();
        RecallEngine engine = new RecallEngine(library, clock, new TapeModelCosts(model), config, QueueStore.IN_MEMORY,
                Staging.NONE, this);
        totalFiles = workload.files().size();
        nextProgress = Math.max(1, totalFiles / 10);
        for (Workload.Request r : workload.requests()) {
            clock.schedule(Duration.ofNanos(Math.round(r.arrival() * 1e9)),
                    () -> engine.submit(r.id(), clock.start().plusNanos(Math.round(r.arrival() * 1e9)), r.priority(),
                            r.experiment(), r.files()));
            clock.schedule(Duration.ofNanos(Math.round((r.arrival() + ETA_PROBE_S) * 1e9)), () -> {
                RequestWork w = engine.model().request(r.id());
                if (w != null && !w.finished() && !Double.isNaN(w.eta())) probedEta.put(r.id(), w.eta());
            });
        }
        clock.runUntilIdle();
        library.close();
        if (engine.openRequests() > 0) {
            throw new IllegalStateException(engine.openRequests() + " requests never completed: " + engine.driveStates());
        }
        LowerBound.Result lbr = lowerBound();
        if (TRACE) System.err.println(lbr);
        double lb = lbr.bound();
        LowerBound.Result tight = LowerBound.tight(boundItems(), drives, accessors, new TapeModelCosts(model));
        double busy = 0;
        for (double[] m : accessorMoves) busy += Math.max(0, Math.min(m[1], makespan) - Math.max(m[0], 0));
        double[] lat = latencies.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        double mean = Arrays.stream(lat).average().orElse(0);
        double readSeconds = model.transferSeconds(bytes);
        double[] etaErr = etaErrors.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        return new SimulationReport(config.policy().name().toLowerCase().replace('_', '-'), files, bytes,
                workload.requests().size(), mounts, volumesRead.size(), makespan, lb,
                makespan > 0 ? lb / makespan : 1.0, makespan > 0 ? readSeconds / (drives * makespan) : 0,
                makespan > 0 ? busy / (accessors * makespan) : 0, locate, mounts > 0 ? (double) bytes / mounts : 0,
                mean, rank(lat, 0.50), rank(lat, 0.95), lat.length == 0 ? 0 : lat[lat.length - 1], failed,
                (System.nanoTime() - wall0) / 1e9, tight.bound(),
                new SimulationReport.EtaAccuracy(etaErr.length, rank(etaErr, 0.50), rank(etaErr, 0.90)));
    }

    /** The bound over the distinct requested files (first listed copy), each at its first arrival. */
    LowerBound.Result lowerBound() {
        return LowerBound.compute(boundItems(), drives, accessors, new TapeModelCosts(model));
    }

    private List<LowerBound.Item> boundItems() {
        Map<String, Double> firstArrival = new HashMap<>();
        for (Workload.Request r : workload.requests()) {
            for (FileSpec f : r.files()) firstArrival.merge(f.name(), r.arrival(), Math::min);
        }
        List<LowerBound.Item> items = new ArrayList<>(workload.files().size());
        for (FileSpec f : workload.files().values()) {
            Copy c = f.copies().get(0);
            items.add(new LowerBound.Item(c.volume(), c.offsetBytes(), f.sizeBytes(), firstArrival.get(f.name())));
        }
        return items;
    }

    /** Nearest-rank percentile of sorted values. */
    static double rank(double[] sorted, double q) {
        if (sorted.length == 0) return 0;
        int i = (int) Math.ceil(q * sorted.length) - 1;
        return sorted[Math.min(Math.max(i, 0), sorted.length - 1)];
    }

    private static final boolean TRACE = System.getenv("STAGEHAND_SIM_TRACE") != null;

    @Override
    public void mountStarted(String drive, String volume, double t) {
        mountStartedAt.put(drive, t);
        if (TRACE) System.err.printf("%9.1f %s mount %s%n", t, drive, volume);
    }

    @Override
    public void mounted(String drive, String volume, double t) {
        mounts++;
        double end = t - model.loadSeconds();
        accessorMoves.add(new double[] {end - model.accessorMoveSeconds(), end});
    }

    @Override
    public void dismountStarted(String drive, String volume, long moved, double t) {
        if (TRACE) System.err.printf("%9.1f %s dismount %s after %.0f GB%n", t, drive, volume, moved / 1e9);
    }

    @Override
    public void dismounted(String drive, double t) {
        accessorMoves.add(new double[] {t - model.accessorMoveSeconds(), t});
    }

    @Override
    public void segmentRead(String drive, FileWork file, ReadResult result, double t) {
        files++;
        bytes += file.sizeBytes();
        locate += result.locateSeconds();
        makespan = Math.max(makespan, t);
        volumesRead.add(result.segment().volume());
        if (files >= nextProgress && progress != null) {
            progress.accept(String.format("  %3d%% of files on disk at t = %.0f s", files * 100 / Math.max(1, totalFiles), t));
            nextProgress += Math.max(1, totalFiles / 10);
        }
    }

    @Override
    public void fileFailed(FileWork file, double t) {
        failed++;
    }

    @Override
    public void requestFinished(RequestWork request, double t) {
        double latency = Math.max(0, request.completedAt() - request.arrival());
        latencies.add(latency);
        if (TRACE) System.err.printf("%9.1f request %s done, arrived %.1f, latency %.1f%n", t, request.id(), request.arrival(), latency);
        Double eta = probedEta.remove(request.id());
        if (eta != null && latency >= ETA_MIN_LATENCY_S) etaErrors.add(Math.abs(eta - request.completedAt()) / latency);
    }

    /** When a request's ETA is taken for the accuracy figure: after the engine's first ETA refresh (60 s). */
    static final double ETA_PROBE_S = 120;
    /** Requests done sooner than this are left out of the ETA accuracy figure (nothing to estimate). */
    static final double ETA_MIN_LATENCY_S = 600;
}
