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

    record Run(int exit, String out, String err) {
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
        PrintStream oldErr = System.err;
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        ByteArrayOutputStream errBuf = new ByteArrayOutputStream();
        try (PrintStream capture = new PrintStream(buf, true, StandardCharsets.UTF_8);
             PrintStream errCapture = new PrintStream(errBuf, true, StandardCharsets.UTF_8)) {
            System.setOut(capture);
            System.setErr(errCapture);
            String[] all = new String[args.length + 1];
            all[0] = "copy";
            System.arraycopy(args, 0, all, 1, args.length);
            int exit = Main.run(all);
            return new Run(exit, buf.toString(StandardCharsets.UTF_8), errBuf.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(old);
            System.setErr(oldErr);
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

    /**
     * As the service's transfers (FTS3's default): a file already at the destination is not written over. The same
     * file (size and ADLER32) is done without sending it; another fails, named, and is left as it is, while the
     * other files go on; --overwrite writes over it. Before, copy wrote over whatever was there.
     */
    @Test
    void anExistingDestinationFileFailsUnlessTheSameOrOverwrite() throws Exception {
        Path src = Files.createDirectories(root.resolve("src-existing"));
        Path dst = root.resolve("dst-existing");
        GridFtpServer.openUp(dst);
        Random rnd = new Random(11);
        byte[] same = new byte[300_000];
        byte[] mine = new byte[200_000];
        byte[] theirs = new byte[200_000]; // the same size: only the checksum tells them apart
        byte[] fresh = new byte[100_000];
        for (byte[] b : List.of(same, mine, theirs, fresh)) rnd.nextBytes(b);
        Files.write(src.resolve("same"), same);
        Files.write(src.resolve("other"), mine);
        Files.write(src.resolve("new"), fresh);
        Files.write(dst.resolve("same"), same);
        Files.write(dst.resolve("other"), theirs);
        // the server's sessions run as another user: the files put there must be theirs to write over
        for (String f : List.of("same", "other")) {
            Files.setPosixFilePermissions(dst.resolve(f), java.nio.file.attribute.PosixFilePermissions.fromString("rw-rw-rw-"));
        }

        Run first = copy("--json", src.toString(), a.url(dst));
        assertThat(first.exit()).as(first.err()).isEqualTo(1);
        JsonNode json = first.json();
        assertThat(json.get("failed").asInt()).isEqualTo(1);
        assertThat(json.get("files").asInt()).as("the new file sent, the same one done unsent").isEqualTo(2);
        assertThat(json.get("unsent").asInt()).isEqualTo(1);
        assertThat(json.get("bytes").asLong()).as("only the new file's bytes went").isEqualTo(fresh.length);
        assertThat(first.err()).contains("FAILED " + src.resolve("other").toUri())
                .contains(dst.resolve("other").toString()).contains("destination file exists").contains("--overwrite")
                .doesNotContain("FAILED " + src.resolve("same").toUri()).doesNotContain("FAILED " + src.resolve("new").toUri());
        assertThat(Files.readAllBytes(dst.resolve("other"))).as("the other file left as it is").isEqualTo(theirs);
        assertThat(Files.readAllBytes(dst.resolve("new"))).isEqualTo(fresh);

        Run again = copy("--json", "--overwrite", src.toString(), a.url(dst));
        assertThat(again.exit()).as(again.err()).isZero();
        JsonNode j2 = again.json();
        assertThat(j2.get("failed").asInt()).isZero();
        assertThat(j2.get("files").asInt()).isEqualTo(3);
        assertThat(j2.get("unsent").asInt()).as("same and new are there already").isEqualTo(2);
        assertThat(j2.get("bytes").asLong()).isEqualTo(mine.length);
        assertThat(Files.readAllBytes(dst.resolve("other"))).as("written over").isEqualTo(mine);
    }
}
