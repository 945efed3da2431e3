package dev.stagehand.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * {@code stagehand demo}: starts the service and a loopback GridFTP server, loads the sample catalog, submits
 * through HTTP with the server as destination, reports progress and the stage times, checks every delivered file.
 */
class DemoIT {

    @Test
    void theDemoRecallsTheSampleRequestFromTheSimulatedLibraryToAGridFtpServer() throws Exception {
        var bytes = new ByteArrayOutputStream();
        int code;
        try (DemoRun run = new DemoRun(new PrintStream(bytes, true, StandardCharsets.UTF_8), 0)) {
            // the stall guard outlasts the movers' own stall timeout (30 s), so a stalled transfer is retried first
            code = run.execute(Duration.ofSeconds(300), Duration.ofSeconds(120));
        }
        String out = bytes.toString(StandardCharsets.UTF_8);
        assertThat(out).containsPattern("Stagehand serving at http://localhost:\\d+/");
        assertThat(out).contains("120 files", "6 volumes", "3 datasets");
        // how to log in: the console password and the API's admin token (submissions and polls use it)
        assertThat(out).containsPattern("console http://localhost:\\d+/console: log in as 'admin' with password \\S+");
        assertThat(out).containsPattern("bearer token of account 'admin' (sht_\\S+|from STAGEHAND_ADMIN_TOKEN)");
        assertThat(out).containsPattern("submitted request [0-9a-f-]{36}: 90 files");
        // (no check of the first poll's counts: on a busy machine the scheduler has claimed files before it)
        // The scheduler mounts the sample volumes on the scaled simulated library and every file is staged.
        assertThat(out).containsPattern("drive\\d+ mounted DM000\\d");
        assertThat(out).containsPattern("Globus GridFTP server on 127.0.0.1:\\d+ \\(anonymous, pid (\\d+)\\); recalled files go to ftp://127\\.0\\.0\\.1:\\d+/");
        // every file went on to the GridFTP server, and the last one only after tape -> cache -> GridFTP
        assertThat(out).contains("request done: done=90", "the request finished: done");
        // the overlap: some file was with the movers (sending or delivered) while the library still had files
        // to read (not "delivered": on a very busy machine the scaled tape clock can finish before the first
        // file reaches the server, though files were handed over one by one)
        Matcher line = Pattern.compile("tape->cache +(\\d+)/90 \\| on disk, waiting +\\d+ \\| sending +(\\d+) \\| delivered +(\\d+)/90").matcher(out);
        boolean overlapped = false;
        while (line.find()) {
            overlapped |= Integer.parseInt(line.group(1)) < 90 && Integer.parseInt(line.group(2)) + Integer.parseInt(line.group(3)) > 0;
        }
        assertThat(overlapped).as("a file with the movers while tape still read:%n%s", out).isTrue();
        Matcher times = Pattern.compile("tape stage: .*? ([\\d.]+) s\\n.*transfer stage alone: .*? ([\\d.]+) s\\n"
                + ".*sum of the stages .*? ([\\d.]+) s\\n.*end to end, pipelined .*? ([\\d.]+) s\\n").matcher(out);
        assertThat(times.find()).as("stage times printed").isTrue();
        double tape = Double.parseDouble(times.group(1)), transfer = Double.parseDouble(times.group(2)),
                sum = Double.parseDouble(times.group(3)), end = Double.parseDouble(times.group(4));
        assertThat(sum).isCloseTo(tape + transfer, org.assertj.core.data.Offset.offset(0.15));
        assertThat(end).isGreaterThanOrEqualTo(tape).isLessThan(sum);
        assertThat(out).contains("90 of 90 delivered files match the catalog's Adler32");
        assertThat(code).isZero();
        // the server was stopped on close
        Matcher pid = Pattern.compile("anonymous, pid (\\d+)").matcher(out);
        assertThat(pid.find()).isTrue();
        assertThat(ProcessHandle.of(Long.parseLong(pid.group(1))).map(ProcessHandle::isAlive).orElse(false)).isFalse();
    }
}
