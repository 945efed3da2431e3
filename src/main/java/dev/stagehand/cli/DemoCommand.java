package dev.stagehand.cli;

import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code stagehand demo}: the main job on the embedded defaults, start to finish, with progress. */
@Command(name = "demo", mixinStandardHelpOptions = true,
        description = "Start the service on the embedded defaults (database stagehand_demo, a free port) and a loopback "
                + "Globus GridFTP server, load a sample catalog, submit a sample recall to the GridFTP server through the HTTP "
                + "API (as the admin account, with the bearer token from STAGEHAND_ADMIN_TOKEN or one generated for the run) "
                + "and print progress (tape -> cache -> GridFTP, overlapping) until it completes, then the stage times; "
                + "prints how to log in to the console and the API.")
final class DemoCommand implements Callable<Integer> {

    @Option(names = "--timeout", defaultValue = "600", description = "give up after this many seconds (default ${DEFAULT-VALUE})")
    long timeoutSeconds;

    // longer than the movers' own stall timeout (30 s): a stalled transfer is aborted and retried before the demo gives up
    @Option(names = "--stall-timeout", defaultValue = "120",
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
