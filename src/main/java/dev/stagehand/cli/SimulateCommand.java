package dev.stagehand.cli;

import dev.stagehand.recall.RecallSimulator;
import dev.stagehand.recall.SimulationReport;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** Replays a workload through the real recall scheduler on the simulated library's virtual clock. */
@Command(name = "simulate", mixinStandardHelpOptions = true,
        description = "Replay a recall workload (CSV or CSV.gz, see shared/workloads/README.md) through the real "
                + "scheduler on a simulated LTO-9 library and virtual clock; no service or database needed.")
final class SimulateCommand implements Callable<Integer> {

    @Option(names = "--workload", required = true, paramLabel = "FILE", description = "workload CSV or CSV.gz")
    Path workload;

    @Option(names = "--drives", defaultValue = "8", description = "tape drives (default: ${DEFAULT-VALUE})")
    int drives;

    @Option(names = "--accessors", defaultValue = "2", description = "robot accessors (default: ${DEFAULT-VALUE})")
    int accessors;

    @Option(names = "--policy",
            description = "tape-aware (default), greedy (biggest queue first, shortest-locate-first), "
                    + "fifo (files one at a time in arrival order); overrides the --config file's")
    String policy;

    @Option(names = "--config", paramLabel = "FILE",
            description = "the service's YAML configuration (see config/application.yml): the scheduler's "
                    + "stagehand.recall.* (mount policy, aging, caps, shares, read lists) and the library's "
                    + "stagehand.tape.sim.model.*; unset keys keep their defaults")
    Path config;

    @Option(names = "--json", description = "print exactly one JSON object with the metrics on stdout")
    boolean json;

    @Override
    public Integer call() throws Exception {
        if (drives < 1 || accessors < 1) {
            System.err.println("simulate: --drives and --accessors must be at least 1");
            return 2;
        }
        try {
            RecallSimulator.Settings settings;
            try {
                settings = config == null ? RecallSimulator.Settings.defaults() : RecallSimulator.Settings.load(config);
            } catch (java.io.IOException e) {
                System.err.println("simulate: cannot read " + config + ": " + e.getMessage());
                return 2;
            }
            SimulationReport r = RecallSimulator.run(workload, drives, accessors, settings.withPolicy(policy),
                    json ? null : line -> System.out.println(line));
            if (json) System.out.println(r.toJson());
            else System.out.println(r.summary());
            return 0;
        } catch (IllegalArgumentException e) {
            System.err.println("simulate: " + e.getMessage());
            return 2;
        } catch (java.io.IOException e) {
            System.err.println("simulate: cannot read " + workload + ": " + e.getMessage());
            return 2;
        }
    }
}
