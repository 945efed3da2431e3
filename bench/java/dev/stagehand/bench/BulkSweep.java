package dev.stagehand.bench;

import dev.stagehand.platform.VirtualClock;
import dev.stagehand.recall.scheduler.Copy;
import dev.stagehand.recall.scheduler.EngineListener;
import dev.stagehand.recall.scheduler.FileWork;
import dev.stagehand.recall.scheduler.LowerBound;
import dev.stagehand.recall.scheduler.QueueModel.FileSpec;
import dev.stagehand.recall.scheduler.QueueStore;
import dev.stagehand.recall.scheduler.RecallEngine;
import dev.stagehand.recall.scheduler.SchedulerConfig;
import dev.stagehand.recall.scheduler.Staging;
import dev.stagehand.recall.scheduler.TapeModelCosts;
import dev.stagehand.recall.simulation.Workload;
import dev.stagehand.tape.ReadResult;
import dev.stagehand.tape.SimulatedLibrary;
import dev.stagehand.tape.TapeModel;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Where the drives' time goes in a tape-aware recall, against the lower bound's terms: per workload and
 * drive/accessor count, the share of D × makespan spent waiting for an accessor to mount, mounting (r + L),
 * locating, reading, streaming through gaps or idle with a tape, unloading (rewind + unthread), waiting
 * for an accessor to dismount and moving out, and empty. Then the distribution of efficiencies.
 * Arguments: {@code [--trace] D/A[,D/A...] FILE...}.
 */
public final class BulkSweep {

    public static void main(String[] args) throws Exception {
        boolean trace = false;
        List<String> files = new ArrayList<>();
        String configs = null;
        for (String a : args) {
            if (a.equals("--trace")) trace = true;
            else if (configs == null) configs = a;
            else files.add(a);
        }
        Map<String, List<double[]>> perConfig = new LinkedHashMap<>();
        System.out.printf(Locale.ROOT, "%-30s %5s %7s %6s %6s %7s | %% of D x makespan: %6s %6s %6s %6s %6s %6s %6s %6s %6s%n",
                "workload", "D/A", "mkspan", "eff", "eff-t", "mnt/vol", "mwait", "mount", "locate", "read", "gap/id", "unload", "dwait", "out", "empty");
        for (String cfg : configs.split(",")) {
            String[] da = cfg.split("/");
            int d = Integer.parseInt(da[0]), a = Integer.parseInt(da[1]);
            for (String f : files) {
                double[] r = run(Path.of(f), d, a, trace);
                perConfig.computeIfAbsent(cfg, k -> new ArrayList<>()).add(r);
            }
        }
        for (var e : perConfig.entrySet()) {
            double[] eff = e.getValue().stream().mapToDouble(r -> r[0]).sorted().toArray();
            double[] efft = e.getValue().stream().mapToDouble(r -> r[1]).sorted().toArray();
            System.out.printf(Locale.ROOT, "%5s eff   min %.3f median %.3f mean %.3f max %.3f | eff-t min %.3f median %.3f mean %.3f max %.3f | max mnt/vol %.3f%n",
                    e.getKey(), eff[0], eff[eff.length / 2], mean(eff), eff[eff.length - 1],
                    efft[0], efft[efft.length / 2], mean(efft), efft[efft.length - 1],
                    e.getValue().stream().mapToDouble(r -> r[2]).max().orElse(0));
        }
    }

    static double mean(double[] x) {
        double s = 0;
        for (double v : x) s += v;
        return s / x.length;
    }

    static final class DriveLog {
        double mountStarted = Double.NaN, mounted, dismountStarted, lastEnd;
        long moved;
        double locate, read;
    }

    static double[] run(Path file, int drives, int accessors, boolean trace) throws Exception {
        Workload w = Workload.read(file);
        TapeModel model = TapeModel.lto9();
        VirtualClock clock = new VirtualClock();
        SimulatedLibrary library = SimulatedLibrary.builder(clock).drives(drives).accessors(accessors).model(model).build();
        // intervals per kind: [start, end] on the engine's line; clipped to the makespan at the end
        Map<String, List<double[]>> spans = new LinkedHashMap<>();
        Map<String, DriveLog> logs = new HashMap<>();
        double[] makespan = {0};
        long[] mounts = {0};
        java.util.Set<String> vols = new java.util.HashSet<>();
        double r = model.accessorMoveSeconds(), load = model.loadSeconds();
        List<Double> latencies = new ArrayList<>();
        EngineListener l = new EngineListener() {
            void span(String kind, double a, double b) {
                if (b > a) spans.computeIfAbsent(kind, k -> new ArrayList<>()).add(new double[] {a, b});
            }
            @Override public void mountStarted(String drive, String volume, double t) {
                DriveLog g = logs.computeIfAbsent(drive, k -> new DriveLog());
                g.mountStarted = t;
                if (trace) System.out.printf(Locale.ROOT, "%9.1f %s mount %s%n", t, drive, volume);
            }
            @Override public void mounted(String drive, String volume, double t) {
                DriveLog g = logs.get(drive);
                mounts[0]++;
                span("mwait", g.mountStarted, t - r - load);
                span("mount", t - r - load, t);
                g.mounted = t;
                g.lastEnd = t;
                g.moved = 0;
                g.locate = 0;
                g.read = 0;
            }
            @Override public void segmentRead(String drive, FileWork f, ReadResult res, double t) {
                DriveLog g = logs.get(drive);
                double rd = model.transferSeconds(f.sizeBytes());
                double start = t - rd - res.locateSeconds();
                span("gap/idle", g.lastEnd, start);
                span("locate", start, t - rd);
                g.locate += res.locateSeconds();
                g.read += rd;
                span("read", t - rd, t);
                g.lastEnd = t;
                makespan[0] = Math.max(makespan[0], t);
                vols.add(res.segment().volume());
            }
            @Override public void dismountStarted(String drive, String volume, long moved, double t) {
                DriveLog g = logs.get(drive);
                span("gap/idle", g.lastEnd, t);
                if (trace && t - g.lastEnd > 1) System.out.printf(Locale.ROOT, "%9.1f %s idle %.1f s with %s before its dismount%n", t, drive, t - g.lastEnd, volume);
                if (trace) System.out.printf(Locale.ROOT, "%9.1f %s %s read: locates %.1f s, reads %.1f s%n", t, drive, volume, g.locate, g.read);
                g.dismountStarted = t;
                g.moved = moved;
                if (trace) System.out.printf(Locale.ROOT, "%9.1f %s dismount %s after %.0f GB%n", t, drive, volume, moved / 1e9);
            }
            @Override public void requestFinished(dev.stagehand.recall.scheduler.RequestWork q, double t) {
                latencies.add(Math.max(0, q.completedAt() - q.arrival()));
                if (trace) System.out.printf(Locale.ROOT, "%9.1f request %s done, latency %.0f s%n", t, q.id(), q.completedAt() - q.arrival());
            }
            @Override public void dismounted(String drive, double t) {
                DriveLog g = logs.get(drive);
                double u = model.unloadSeconds(g.moved);
                span("unload", g.dismountStarted, g.dismountStarted + u);
                span("dwait", g.dismountStarted + u, t - r);
                span("out", t - r, t);
            }
        };
        SchedulerConfig config = SchedulerConfig.defaults(SchedulerConfig.Policy.TAPE_AWARE);
        TapeModelCosts cost = new TapeModelCosts(model);
        RecallEngine engine = new RecallEngine(library, clock, cost, config, QueueStore.IN_MEMORY, Staging.NONE, l);
        for (Workload.Request q : w.requests()) {
            clock.schedule(Duration.ofNanos(Math.round(q.arrival() * 1e9)),
                    () -> engine.submit(q.id(), clock.start().plusNanos(Math.round(q.arrival() * 1e9)), q.priority(),
                            q.experiment(), q.files()));
        }
        clock.runUntilIdle();
        library.close();
        Map<String, Double> firstArrival = new HashMap<>();
        for (Workload.Request q : w.requests()) for (FileSpec f : q.files()) firstArrival.merge(f.name(), q.arrival(), Math::min);
        List<LowerBound.Item> items = new ArrayList<>();
        for (FileSpec f : w.files().values()) {
            Copy c = f.copies().get(0);
            items.add(new LowerBound.Item(c.volume(), c.offsetBytes(), f.sizeBytes(), firstArrival.get(f.name())));
        }
        LowerBound.Result lb = LowerBound.compute(items, drives, accessors, cost);
        LowerBound.Result tight = LowerBound.tight(items, drives, accessors, cost);
        double mk = makespan[0];
        double total = drives * mk, accounted = 0;
        Map<String, Double> share = new LinkedHashMap<>();
        for (String k : List.of("mwait", "mount", "locate", "read", "gap/idle", "unload", "dwait", "out")) {
            double s = 0;
            for (double[] iv : spans.getOrDefault(k, List.of())) s += Math.max(0, Math.min(iv[1], mk) - Math.max(iv[0], 0));
            share.put(k, s / total);
            accounted += s;
        }
        share.put("empty", (total - accounted) / total);
        StringBuilder sb = new StringBuilder();
        for (double v : share.values()) sb.append(String.format(Locale.ROOT, " %5.1f%%", 100 * v));
        double eff = lb.bound() / mk, efft = tight.bound() / mk, mv = (double) mounts[0] / vols.size();
        double online = Math.max(tight.bound(), tight.arrivedTape());
        double[] lat = latencies.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        double p95 = lat.length == 0 ? 0 : lat[Math.max(0, (int) Math.ceil(0.95 * lat.length) - 1)];
        sb.append(String.format(Locale.ROOT, " | p95 %.0f", p95));
        System.out.printf(Locale.ROOT, "%-30s %5s %7.0f %6.3f %6.3f %7.3f | online %6.3f %s%n", file.getFileName(),
                drives + "/" + accessors, mk, eff, efft, mv, online / mk, sb);
        if (trace) System.out.println("  bound " + lb + "\n  tours " + tight);
        return new double[] {eff, efft, mv};
    }
}
