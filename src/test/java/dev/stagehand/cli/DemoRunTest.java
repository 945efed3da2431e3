package dev.stagehand.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** Without the Globus GridFTP server the demo says so and goes on without transfers (DemoIT covers the rest). */
class DemoRunTest {

    @Test
    void withoutTheServerBinaryTheDemoSaysSoAndRecallsToTheCacheOnly() throws Exception {
        var bytes = new ByteArrayOutputStream();
        String before = System.getProperty("stagehand.gridftp.server");
        System.setProperty("stagehand.gridftp.server", "/nonexistent/globus-gridftp-server");
        try (DemoRun run = new DemoRun(new PrintStream(bytes, true, StandardCharsets.UTF_8), 0)) {
            run.startGridFtp();
        } finally {
            if (before == null) System.clearProperty("stagehand.gridftp.server");
            else System.setProperty("stagehand.gridftp.server", before);
        }
        assertThat(bytes.toString(StandardCharsets.UTF_8)).contains(
                "globus-gridftp-server not found (Debian package globus-gridftp-server-progs): running without transfers");
    }
}
