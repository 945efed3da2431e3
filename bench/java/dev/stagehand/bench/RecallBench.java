package dev.stagehand.bench;

import dev.stagehand.platform.VirtualClock;
import dev.stagehand.recall.RecallSimulator;
import dev.stagehand.recall.SimulationReport;
import dev.stagehand.recall.scheduler.Copy;
import dev.stagehand.recall.scheduler.FileWork;
import dev.stagehand.recall.scheduler.RunPlanner;
import dev.stagehand.recall.simulation.Workload;
import dev.stagehand.recall.scheduler.QueueModel;
import dev.stagehand.recall.scheduler.QueueStore;
import dev.stagehand.recall.scheduler.RecallEngine;
import dev.stagehand.recall.scheduler.Staging;
import dev.stagehand.recall.scheduler.SchedulerConfig;
import dev.stagehand.recall.scheduler.TapeModelCosts;
import dev.stagehand.recall.scheduler.EngineListener;
import dev.stagehand.tape.SimulatedLibrary;
import dev.stagehand.tape.TapeModel;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;

/**
 * Recall benchmark: every workload given through tape-aware, greedy and fifo on the simulated LTO-9
 * library, side by side with the lower bound; then the time of one scheduling pass over 1,000,000 queued
 * file requests. Arguments: {@code [--pass-only | --no-pass] [--no-fifo-over N] SPEC...} where SPEC is
 * {@code FILE[@DRIVES/ACCESSORS]} (default 8/2).
 */
public final class RecallBench {

    public static void main(String[] args) throws Exception {
        List<String> specs = new ArrayList<>();
        boolean passOnly = false, noPass = false;
        long fifoLimit = Long.MAX_VALUE;
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--pass-only")) passOnly = true;
            else if (args[i].equals("--no-pass")) noPass = true;
            else if (args[i].equals("--no-fifo-over")) fifoLimit = Long.parseLong(args[++i]);
            else specs.add(args[i]);
        }
        if (!passOnly) workloads(specs, fifoLimit);
        if (noPass) return;
        schedulingPass(100_000, 1_000, false); // JIT warm-up on a smaller queue
        schedulingPass(1_000_000, 1_000, true);
    }

    static void workloads(List<String> specs, long fifoLimit) throws Exception {
        System.out.println("bound: the model's lower bound (shared/docs/tape-model.md), eff = bound / makespan; tours: the same"
                + " bound with each tape's exact minimum locate tour, eff-t = tours / makespan (the geometry's share of the gap)");
        System.out.printf(Locale.ROOT, "%-28s %5s %-10s %9s %9s %6s %9s %6s %9s %8s %8s %7s %6s%n", "workload", "D/A", "policy",
                "makespan", "bound", "eff", "tours", "eff-t", "mnt/vol", "p95 lat", "max lat", "wall s", "ratio");
        for (String spec : specs) {
            String file = spec;
            int drives = 8, accessors = 2;
            int at = spec.lastIndexOf('@');
            if (at > 0) {
                file = spec.substring(0, at);
                String[] da = spec.substring(at + 1).split("/");
                drives = Integer.parseInt(da[0]);
                accessors = Integer.parseInt(da[1]);
            }
            Map<String, SimulationReport> rs = new LinkedHashMap<>();
            for (String policy : List.of("tape-aware", "greedy", "fifo")) {
                Path p = Path.of(file);
                if (policy.equals("fifo") && java.nio.file.Files.size(p) > fifoLimit) continue;
                rs.put(policy, RecallSimulator.run(p, drives, accessors, policy, null));
            }
            SimulationReport ta = rs.get("tape-aware"), gr = rs.get("greedy"), fi = rs.get("fifo");
            for (var e : rs.entrySet()) {
                SimulationReport r = e.getValue();
                String ratio = switch (e.getKey()) {
                    case "fifo" -> String.format(Locale.ROOT, "%.1fx", r.makespanSeconds() / ta.makespanSeconds());
                    case "greedy" -> String.format(Locale.ROOT, "p95 %.2f", ta.latencyP95() / Math.max(1e-9, r.latencyP95()));
                    default -> "";
                };
                System.out.printf(Locale.ROOT, "%-28s %5s %-10s %9.0f %9.0f %6.3f %9.0f %6.3f %4d/%-4d %8.0f %8.0f %7.1f %s%n",
                        Path.of(file).getFileName(), drives + "/" + accessors, e.getKey(), r.makespanSeconds(),
                        r.lowerBoundSeconds(), r.efficiency(), r.tourBoundSeconds(), r.tourBoundSeconds() / r.makespanSeconds(), r.mounts(), r.volumes(), r.latencyP95(), r.latencyMax(),
                        r.wallSeconds(), ratio);
            }
            if (gr != null && ta.requests() > 0) {
                double alone = aloneP95(Path.of(file));
                if (!Double.isNaN(alone)) {
                    // not a bound (a mounted volume skips the mount, shared tours differ), but a p95 latency
                    // much below it would need requests to be served faster than with a drive to themselves
                    System.out.printf(Locale.ROOT, "  -> each request alone (own mount, own best tour from BOT, no waiting): p95 %.0f s = %.2f x greedy's p95%n",
                            alone, alone / Math.max(1e-9, gr.latencyP95()));
                }
            }
            if (fi != null && gr != null) {
                // fifo hands the library one file at a time, so no schedule can beat it by more than its makespan
                // over the bound: the most any scheduler could show on this workload
                System.out.printf(Locale.ROOT, "  -> tape-aware: %.1fx shorter makespan than fifo (no schedule can exceed fifo / bound = %.1fx, fifo / tours = %.1fx);"
                                + " p95 latency %.2f x greedy's; mounts %.3f x volumes%n",
                        fi.makespanSeconds() / ta.makespanSeconds(), fi.makespanSeconds() / ta.lowerBoundSeconds(), fi.makespanSeconds() / ta.tourBoundSeconds(),
                        ta.latencyP95() / Math.max(1e-9, gr.latencyP95()), (double) ta.mounts() / Math.max(1, ta.volumes()));
            }
        }
    }

    /**
     * p95 over requests of the latency each would have with a drive and an accessor to itself: mount, then
     * its files on each of its volumes in the planner's best order from BOT (the slowest volume counts).
     * NaN for workloads too big to plan request by request here.
     */
    static double aloneP95(Path file) throws java.io.IOException {
        Workload w = Workload.read(file);
        if (w.files().size() > 20_000) return Double.NaN;
        TapeModelCosts cost = new TapeModelCosts(TapeModel.lto9());
        RunPlanner planner = new RunPlanner(cost, 3_000_000, true);
        double[] lat = new double[w.requests().size()];
        int i = 0;
        for (Workload.Request r : w.requests()) {
            Map<String, List<FileWork>> perVolume = new LinkedHashMap<>();
            for (QueueModel.FileSpec f : r.files()) {
                perVolume.computeIfAbsent(f.copies().get(0).volume(), v -> new ArrayList<>())
                        .add(new FileWork(f.id(), f.name(), f.sizeBytes(), f.copies().subList(0, 1), f.experiment(), f.dataset(), null));
            }
            double worst = 0;
            for (var e : perVolume.entrySet()) {
                long bytes = 0;
                for (FileWork f : e.getValue()) bytes += f.sizeBytes();
                List<FileWork> order = planner.order(e.getKey(), e.getValue(), 0);
                worst = Math.max(worst, cost.mountSeconds() + planner.locateSeconds(e.getKey(), order, 0) + cost.readSeconds(bytes));
            }
            lat[i++] = worst;
        }
        java.util.Arrays.sort(lat);
        return lat[Math.max(0, Math.min(lat.length - 1, (int) Math.ceil(0.95 * lat.length) - 1))];
    }

    /** One scheduling pass of the real engine over {@code files} queued file requests on {@code volumes} tapes. */
    static void schedulingPass(int files, int volumes, boolean print) {
        VirtualClock clock = new VirtualClock();
        TapeModel model = TapeModel.lto9();
        SimulatedLibrary lib = SimulatedLibrary.builder(clock).drives(8).accessors(2).model(model).build();
        RecallEngine engine = new RecallEngine(lib, clock, new TapeModelCosts(model),
                SchedulerConfig.defaults(SchedulerConfig.Policy.TAPE_AWARE), QueueStore.IN_MEMORY, Staging.NONE, EngineListener.NONE);
        Random rnd = new Random(7);
        long t0 = System.nanoTime();
        int perRequest = 1000;
        long id = 1;
        for (int r = 0; r < files / perRequest; r++) {
            List<QueueModel.FileSpec> fs = new ArrayList<>(perRequest);
            for (int k = 0; k < perRequest; k++, id++) {
                String vol = "P" + rnd.nextInt(volumes);
                fs.add(new QueueModel.FileSpec(id, "/bench/f" + id, 100_000_000L + rnd.nextInt(1_000_000_000),
                        List.of(new Copy(vol, (long) (rnd.nextDouble() * 17e12))), "exp" + (r % 3), "ds" + r, null));
            }
            engine.submit("r" + r, clock.now(), r % 3, "exp" + (r % 3), fs);
        }
        double intake = (System.nanoTime() - t0) / 1e9;
        double[] passes = new double[3];
        for (int i = 0; i < passes.length; i++) {
            long p0 = System.nanoTime();
            engine.requestPass();
            clock.runUntil(clock.now()); // runs the pass (and nothing later)
            passes[i] = (System.nanoTime() - p0) / 1e9;
            clock.advance(Duration.ofSeconds(1));
        }
        if (print) System.out.printf(Locale.ROOT, "%nscheduling pass over %,d queued file requests on %,d volumes (8 drives, 2 accessors):%n"
                + "  intake (dedup, per-volume aggregates) %.2f s; first pass %.3f s (after JIT warm-up on 100k); next passes %.3f s, %.3f s%n",
                engine.model().queuedFiles(), volumes, intake, passes[0], passes[1], passes[2]);
        lib.close();
    }
}
