package dev.stagehand.recall;

import dev.stagehand.recall.scheduler.SchedulerConfig;
import dev.stagehand.recall.simulation.SimulationRun;
import dev.stagehand.recall.simulation.Workload;
import dev.stagehand.tape.TapeModel;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Locale;
import java.util.function.Consumer;

/**
 * Replays a recall workload through the real recall scheduler on the simulated library's virtual clock
 * (no Spring, no database): what {@code stagehand simulate} runs.
 */
public final class RecallSimulator {

    /** The policies {@code --policy} accepts. */
    public static final String POLICIES = "tape-aware, greedy, fifo";

    private RecallSimulator() {}

    public static SimulationReport run(Path workload, int drives, int accessors, String policy,
                                       Consumer<String> progress) throws IOException {
        SchedulerConfig.Policy p = parsePolicy(policy);
        Workload w = Workload.read(workload);
        if (progress != null) {
            progress.accept(String.format(Locale.ROOT, "workload %s: %d requests, %d distinct files; %d drives, %d accessors, policy %s",
                    workload.getFileName(), w.requests().size(), w.files().size(), drives, accessors, policy));
        }
        return new SimulationRun(w, drives, accessors, SchedulerConfig.defaults(p), TapeModel.lto9(), progress).run();
    }

    static SchedulerConfig.Policy parsePolicy(String policy) {
        return switch (policy.toLowerCase(Locale.ROOT)) {
            case "tape-aware" -> SchedulerConfig.Policy.TAPE_AWARE;
            case "greedy" -> SchedulerConfig.Policy.GREEDY;
            case "fifo" -> SchedulerConfig.Policy.FIFO;
            default -> throw new IllegalArgumentException("unknown policy '" + policy + "'; choose one of " + POLICIES);
        };
    }
}
