package dev.stagehand.cli;

import static org.assertj.core.api.Assertions.assertThat;

import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import dev.stagehand.transfer.GridFtpScratch;
import dev.stagehand.transfer.GridFtpServer;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@code stagehand copy} against real GridFTP servers: a directory upload and a third-party copy, with --json. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class CopyCommandIT {

    static GridFtpScratch scratch;
    static Path root;
    static GridFtpServer a;
    static GridFtpServer b;

    @BeforeAll
    static void servers() throws Exception {
        scratch = GridFtpScratch.create("stagehand-copy-cli");
        root = scratch.root;
        GridFtpServer.openUp(root.resolve("dst-a"));
        GridFtpServer.openUp(root.resolve("dst-b"));
        a = scratch.anonymous("a");
        b = scratch.anonymous("b");
    }

    @AfterAll
    static void stop() throws Exception {
        if (scratch != null) scratch.close();
    }

    record Run(int exit, String out) {
        /**
         * The one JSON object the command printed, a line of its own. Only that line: the test JVM's other threads
         * share System.out (a cached context's Quartz cluster manager, then on the pool of a context an earlier test
         * class had closed, logged there while it was captured, and the whole output did not parse).
         */
        JsonNode json() {
            List<String> objects = out.lines().filter(l -> l.startsWith("{")).toList();
            assertThat(objects).as("JSON objects printed in " + out).hasSize(1);
            return JsonMapper.builder().build().readTree(objects.getFirst());
        }
    }

    static Run copy(String... args) {
        PrintStream old = System.out;
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        try (PrintStream capture = new PrintStream(buf, true, StandardCharsets.UTF_8)) {
            System.setOut(capture);
            String[] all = new String[args.length + 1];
            all[0] = "copy";
            System.arraycopy(args, 0, all, 1, args.length);
            int exit = Main.run(all);
            return new Run(exit, buf.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(old);
        }
    }

    @Test
    void directoryThenThirdPartyWithJsonSummary() throws Exception {
        Path src = Files.createDirectories(root.resolve("src"));
        Random rnd = new Random(5);
        long total = 0;
        for (int i = 0; i < 5; i++) {
            byte[] data = new byte[i == 0 ? 24 << 20 : (1 << 20) + i];
            rnd.nextBytes(data);
            Files.write(src.resolve("f" + i), data);
            total += data.length;
        }
        Run up = copy("--json", "-c", "2", "-p", "2", src.toString(), a.url(root.resolve("dst-a")));
        assertThat(up.exit()).isZero();
        JsonNode json = up.json();
        assertThat(json.get("files").asInt()).isEqualTo(5);
        assertThat(json.get("bytes").asLong()).isEqualTo(total);
        assertThat(json.get("failed").asInt()).isZero();
        assertThat(json.get("seconds").asDouble()).isPositive();
        assertThat(json.get("mb_per_s").asDouble()).isPositive();
        for (int i = 0; i < 5; i++) {
            assertThat(Files.mismatch(src.resolve("f" + i), root.resolve("dst-a").resolve("f" + i))).isEqualTo(-1L);
        }

        // server to server: a's file goes to b, checked against a's CKSM
        Run third = copy("--json", a.url(root.resolve("dst-a")) + "/f0", b.url(root.resolve("dst-b")));
        assertThat(third.exit()).isZero();
        JsonNode j3 = third.json();
        assertThat(j3.get("files").asInt()).isEqualTo(1);
        assertThat(j3.get("bytes").asLong()).isEqualTo(24 << 20);
        assertThat(Files.mismatch(src.resolve("f0"), root.resolve("dst-b").resolve("f0"))).isEqualTo(-1L);
    }

    @Test
    void failuresAreCountedAndBadArgumentsRefused() throws Exception {
        Path f = Files.write(root.resolve("lonely"), new byte[1000]);
        Run missingDir = copy("--json", "--attempts", "1", f.toString(), a.url(root.resolve("no-such-dir")));
        assertThat(missingDir.exit()).isEqualTo(1);
        JsonNode json = missingDir.json();
        assertThat(json.get("failed").asInt()).isEqualTo(1);
        assertThat(json.get("files").asInt()).isZero();
        assertThat(copy(f.toString(), "http://example.org/x").exit()).isEqualTo(2);
        assertThat(copy(root.resolve("absent").toString(), a.url(root.resolve("dst-a"))).exit()).isEqualTo(2);
    }
}
