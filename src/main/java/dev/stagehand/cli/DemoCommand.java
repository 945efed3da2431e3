package dev.stagehand.cli;

import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code stagehand demo}: the main job on the embedded defaults, start to finish, with progress. */
@Command(name = "demo", mixinStandardHelpOptions = true,
        description = "Start the service on the embedded defaults (database stagehand_demo, a free port), load a "
                + "sample catalog, submit a sample recall through the HTTP API and print progress until it completes.")
final class DemoCommand implements Callable<Integer> {

    @Option(names = "--timeout", defaultValue = "600", description = "give up after this many seconds (default ${DEFAULT-VALUE})")
    long timeoutSeconds;

    @Option(names = "--stall-timeout", defaultValue = "15",
            description = "stop when no file changes state for this many seconds (default ${DEFAULT-VALUE})")
    long stallSeconds;

    @Option(names = "--port", defaultValue = "0", description = "HTTP port (default: a free one)")
    int port;

    @Override
    public Integer call() throws Exception {
        try (DemoRun run = new DemoRun(System.out, port)) {
            return run.execute(Duration.ofSeconds(timeoutSeconds), Duration.ofSeconds(stallSeconds));
        }
    }
}
