package dev.stagehand.transfer.gridftp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.stagehand.transfer.CopyResult;
import dev.stagehand.transfer.FileCopy;
import dev.stagehand.transfer.MoverSettings;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A server summing a big file says nothing until it is done: CKSM is not held to the stall limit but to a
 * limit from the file's size, so a slow checksum is not mistaken for a stall (and the file resent for ever).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ChecksumWaitTest {

    @TempDir
    Path dir;

    @Test
    void aChecksumTakingLongerThanTheStallLimitIsWaitedFor() throws Exception {
        Path file = dir.resolve("big.bin");
        int size = 48 << 20; // CKSM limit: 48 MiB at 10 MiB/s plus the stall limit, about 5.8 s
        try (var out = Files.newOutputStream(file)) {
            out.write(new byte[size]);
        }
        long adler = Link.adler32(file);
        MoverSettings s = MoverSettings.defaults().withStreams(1, 1, false)
                .withRetry(Duration.ofSeconds(1), 2, Duration.ofMillis(50), Duration.ofSeconds(1))
                .withServerVerifyMaxBytes(0); // always CKSM after the put
        try (FakeGridFtpServer server = new FakeGridFtpServer(); GridFtpMover mover = new GridFtpMover(s, null)) {
            server.cksm = String.format("%08x", adler);
            server.cksmDelayMillis = 2500; // 2.5 stall limits without a word
            FileCopy c = new FileCopy("big", file.toUri(),
                    java.net.URI.create("ftp://127.0.0.1:" + server.port() + "/d/big.bin"), size, adler);
            CopyResult r = mover.submit(List.of(c)).result(c).get(40, TimeUnit.SECONDS);
            assertThat(r.adler32()).isEqualTo(adler);
            assertThat(r.attempts()).isEqualTo(1);
            assertThat(server.count("STOR")).isEqualTo(1);
        }
    }

    @Test
    void aChecksumPastItsSizeLimitIsAStall() throws Exception {
        Path file = dir.resolve("small.bin");
        int size = 1 << 20; // CKSM limit: 0.1 s plus the stall limit
        try (var out = Files.newOutputStream(file)) {
            out.write(new byte[size]);
        }
        long adler = Link.adler32(file);
        MoverSettings s = MoverSettings.defaults().withStreams(1, 1, false)
                .withRetry(Duration.ofSeconds(1), 1, Duration.ofMillis(50), Duration.ofSeconds(1))
                .withServerVerifyMaxBytes(0);
        try (FakeGridFtpServer server = new FakeGridFtpServer(); GridFtpMover mover = new GridFtpMover(s, null)) {
            server.cksm = String.format("%08x", adler);
            server.cksmDelayMillis = 5000;
            FileCopy c = new FileCopy("small", file.toUri(),
                    java.net.URI.create("ftp://127.0.0.1:" + server.port() + "/d/small.bin"), size, adler);
            assertThatThrownBy(() -> mover.submit(List.of(c)).result(c).get(40, TimeUnit.SECONDS))
                    .cause().isInstanceOfSatisfying(dev.stagehand.transfer.TransferFailure.class, f -> {
                        assertThat(f.kind()).isEqualTo(dev.stagehand.transfer.TransferFailure.Kind.STALL);
                        assertThat(f.getMessage()).contains("no CKSM reply in 1 s");
                    });
        }
    }
}
