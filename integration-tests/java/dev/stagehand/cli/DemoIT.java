package dev.stagehand.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** {@code stagehand demo}: starts the service, loads the sample catalog, submits through HTTP, reports progress. */
class DemoIT {

    @Test
    void theDemoRunsItsStepsAndEndsHonestlyWhenNothingMoves() throws Exception {
        var bytes = new ByteArrayOutputStream();
        int code;
        try (DemoRun run = new DemoRun(new PrintStream(bytes, true, StandardCharsets.UTF_8), 0)) {
            code = run.execute(Duration.ofSeconds(60), Duration.ofSeconds(2));
        }
        String out = bytes.toString(StandardCharsets.UTF_8);
        assertThat(out).containsPattern("Stagehand serving at http://localhost:\\d+/");
        assertThat(out).contains("120 files", "6 volumes", "3 datasets");
        assertThat(out).containsPattern("submitted request [0-9a-f-]{36}: 90 files");
        assertThat(out).contains("queued=90");
        // Without a scheduler nothing progresses: the demo says so and ends normally. Once one is merged the
        // request moves on and the demo waits for it to finish instead.
        assertThat(code).isZero();
        assertThat(out).containsAnyOf("nothing changed for 2 s", "the request finished: done");
    }
}
