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
    void theDemoRecallsTheSampleRequestFromTheSimulatedLibrary() throws Exception {
        var bytes = new ByteArrayOutputStream();
        int code;
        try (DemoRun run = new DemoRun(new PrintStream(bytes, true, StandardCharsets.UTF_8), 0)) {
            code = run.execute(Duration.ofSeconds(240), Duration.ofSeconds(30));
        }
        String out = bytes.toString(StandardCharsets.UTF_8);
        assertThat(out).containsPattern("Stagehand serving at http://localhost:\\d+/");
        assertThat(out).contains("120 files", "6 volumes", "3 datasets");
        assertThat(out).containsPattern("submitted request [0-9a-f-]{36}: 90 files");
        assertThat(out).contains("queued=90");
        // The scheduler mounts the sample volumes on the scaled simulated library and every file is staged.
        assertThat(out).containsPattern("drive\\d+ mounted DM000\\d");
        assertThat(out).contains("request done: on_disk=90", "the request finished: done");
        assertThat(code).isZero();
    }
}
