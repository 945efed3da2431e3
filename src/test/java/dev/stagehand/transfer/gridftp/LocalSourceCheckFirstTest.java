package dev.stagehand.transfer.gridftp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.stagehand.transfer.FileCopy;
import dev.stagehand.transfer.MoverSettings;
import dev.stagehand.transfer.TransferFailure;
import dev.stagehand.transfer.TransferFailure.Kind;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A put's local source is checked before the attempt takes a connection to the destination: a source gone bad
 * since its batch was prepared costs no login there, and leaves the worker's connection for the next file.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class LocalSourceCheckFirstTest {

    /** One connection, not adaptive, one attempt: the link's one worker sends the batch's files in turn. */
    private static final MoverSettings SETTINGS = MoverSettings.defaults().withStreams(1, 1, false)
            .withRetry(Duration.ofSeconds(5), 1, Duration.ofMillis(20), Duration.ofSeconds(60));

    private static Path file(Path dir, String name, int size) throws IOException {
        return Files.write(dir.resolve(name), new byte[size]);
    }

    /** Cuts {@code file} short when the server hears the first STOR (of the file sent before it). */
    private static void cutShortAtStor(FakeGridFtpServer server, Path file) {
        server.heard = line -> {
            if (!line.toUpperCase(Locale.ROOT).startsWith("STOR ")) return;
            try {
                if (Files.size(file) > 100) Files.write(file, new byte[100]);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        };
    }

    private static void failsAsShort(java.util.concurrent.CompletableFuture<?> result) {
        assertThatThrownBy(() -> result.get(30, TimeUnit.SECONDS)).cause()
                .isInstanceOfSatisfying(TransferFailure.class, f -> {
                    assertThat(f.kind()).isEqualTo(Kind.BAD_REQUEST);
                    assertThat(f.getMessage()).contains("cannot read local file", "is 100 bytes, expected 4096");
                });
    }

    /**
     * The worker has no connection (the file before failed, its connection closed): the bad source is failed
     * without one. Before, a connection was opened and logged in to (USER) for it, and closed again.
     */
    @Test
    void aBadLocalSourceIsFailedWithoutLoggingInToTheDestination(@TempDir Path dir) throws Exception {
        Path refused = file(dir, "refused", 8192);
        Path bad = file(dir, "bad", 4096);
        try (FakeGridFtpServer server = new FakeGridFtpServer(); GridFtpMover mover = new GridFtpMover(SETTINGS, null)) {
            server.sizeReply = "550 No such file or directory.";
            server.storFailureAfterMillis = 1;
            server.storFailure = "553 /d/a: Permission denied";
            cutShortAtStor(server, bad);
            String base = "ftp://127.0.0.1:" + server.port();
            FileCopy a = new FileCopy("a", refused.toUri(), URI.create(base + "/d/a"), 8192, null);
            FileCopy b = new FileCopy("b", bad.toUri(), URI.create(base + "/d/b"), 4096, null);
            var batch = mover.submit(List.of(a, b));
            assertThatThrownBy(() -> batch.result(a).get(30, TimeUnit.SECONDS)).cause()
                    .isInstanceOfSatisfying(TransferFailure.class, f -> assertThat(f.kind()).isEqualTo(Kind.PERMISSION_DENIED));
            failsAsShort(batch.result(b));
            assertThat(server.count("USER")).as("logins").isEqualTo(1); // the refused file's only
            assertThat(server.count("STOR")).isEqualTo(1);
        }
    }

    /**
     * The worker's connection is up (the file before was sent on it): the bad source is failed and the next file
     * goes on the same connection. Before, the connection was closed for the source's failure and the next file
     * logged in again.
     */
    @Test
    void aBadLocalSourceLeavesTheWorkersConnectionForTheNextFile(@TempDir Path dir) throws Exception {
        Path first = file(dir, "first", 8192);
        Path bad = file(dir, "bad", 4096);
        Path last = file(dir, "last", 2048);
        try (FakeGridFtpServer server = new FakeGridFtpServer(); GridFtpMover mover = new GridFtpMover(SETTINGS, null)) {
            server.sizeReply = "550 No such file or directory.";
            cutShortAtStor(server, bad);
            String base = "ftp://127.0.0.1:" + server.port();
            FileCopy a = new FileCopy("a", first.toUri(), URI.create(base + "/d/a"), 8192, null);
            FileCopy b = new FileCopy("b", bad.toUri(), URI.create(base + "/d/b"), 4096, null);
            FileCopy c = new FileCopy("c", last.toUri(), URI.create(base + "/d/c"), 2048, null);
            var batch = mover.submit(List.of(a, b, c));
            assertThat(batch.result(a).get(30, TimeUnit.SECONDS).bytes()).isEqualTo(8192);
            failsAsShort(batch.result(b));
            assertThat(batch.result(c).get(30, TimeUnit.SECONDS).bytes()).isEqualTo(2048);
            assertThat(server.count("STOR")).isEqualTo(2);
            assertThat(server.count("USER")).as("logins").isEqualTo(1);
        }
    }
}
