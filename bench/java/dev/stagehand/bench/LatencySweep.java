package dev.stagehand.bench;

import dev.stagehand.recall.RecallSimulator;
import dev.stagehand.recall.SimulationReport;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Issue 4's latency target over many generated workloads: for each workload and library, tape-aware's p95
 * request latency as a share of greedy's (target at most 0.8), the same share for each request served alone
 * (a drive and an accessor to itself, mounted at once: near the floor of any schedule's p95, not a strict
 * bound, since a mounted tape skips the mount) and the longest wait against the aging limit.
 * Arguments: {@code [--threads N] [--aging-limit S] SPEC...}, SPEC = {@code FILE@DRIVES/ACCESSORS}.
 */
public final class LatencySweep {

    record Case(String file, int drives, int accessors) {}

    /** {@code alone}: each request's p95 with a drive and an accessor to itself ({@link RecallBench#aloneP95}). */
    record Row(Case c, SimulationReport ta, SimulationReport gr, double alone) {
        double ratio() { return ta.latencyP95() / Math.max(1e-9, gr.latencyP95()); }
    }

    public static void main(String[] args) throws Exception {
        int threads = 2;
        double agingLimit = 4 * 3600;
        List<Case> cases = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--threads")) threads = Integer.parseInt(args[++i]);
            else if (args[i].equals("--aging-limit")) agingLimit = Double.parseDouble(args[++i]);
            else {
                int at = args[i].lastIndexOf('@');
                String[] da = args[i].substring(at + 1).split("/");
                cases.add(new Case(args[i].substring(0, at), Integer.parseInt(da[0]), Integer.parseInt(da[1])));
            }
        }
        List<Future<Row>> rows = new ArrayList<>();
        try (ExecutorService pool = Executors.newFixedThreadPool(threads)) {
            for (Case c : cases) {
                rows.add(pool.submit(() -> new Row(c,
                        RecallSimulator.run(Path.of(c.file()), c.drives(), c.accessors(), "tape-aware", null),
                        RecallSimulator.run(Path.of(c.file()), c.drives(), c.accessors(), "greedy", null),
                        RecallBench.aloneP95(Path.of(c.file())))));
            }
            System.out.printf(Locale.ROOT, "%-34s %5s %9s %9s %6s %6s %9s %9s %s%n", "workload", "D/A", "p95 t-a", "p95 grdy",
                    "ratio", "alone", "max t-a", "max grdy", "");
            int over = 0, late = 0;
            double worst = 0;
            for (Future<Row> f : rows) {
                Row r = f.get();
                boolean miss = r.ratio() > 0.8;
                boolean tooLong = r.ta().latencyMax() > agingLimit;
                over += miss ? 1 : 0;
                late += tooLong ? 1 : 0;
                worst = Math.max(worst, r.ratio());
                System.out.printf(Locale.ROOT, "%-34s %5s %9.0f %9.0f %6.3f %6.3f %9.0f %9.0f %s%n", Path.of(r.c().file()).getFileName(),
                        r.c().drives() + "/" + r.c().accessors(), r.ta().latencyP95(), r.gr().latencyP95(), r.ratio(),
                        r.alone() / Math.max(1e-9, r.gr().latencyP95()),
                        r.ta().latencyMax(), r.gr().latencyMax(), (miss ? "p95>0.8 " : "") + (tooLong ? "max>aging" : ""));
            }
            System.out.printf(Locale.ROOT, "%d cases: %d above 0.8 of greedy's p95 (worst %.3f), %d with a wait over the aging limit (%.0f s)%n",
                    rows.size(), over, worst, late, agingLimit);
        }
    }
}
