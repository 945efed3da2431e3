package dev.stagehand.transfer.gridftp;

import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.transfer.CopyResult;
import dev.stagehand.transfer.FileCopy;
import dev.stagehand.transfer.MoverSettings;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A destination host taken out of rotation by the CKSM check after a put (checkLater, on a checker connection)
 * is left by the worker that wrote the file there: the file's resend goes to another host, as after a failure
 * found inline (whose connection is closed).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class CheckLaterQuarantineTest {

    @Test
    void theResendAfterACksmStallGoesToAnotherHost(@TempDir Path dir) throws Exception {
        Path local = dir.resolve("f");
        Files.write(local, new byte[64 << 10]);
        // one worker, CKSM after the put (no SCKS), the catalog's sum known (the fake server's CKSM answer)
        MoverSettings s = MoverSettings.defaults().withStreams(1, 1, true).withAdaptive(1, 1, Duration.ofMillis(50))
                .withRetry(Duration.ofSeconds(1), 2, Duration.ofMillis(20), Duration.ofSeconds(60)).withServerVerifyMaxBytes(0);
        try (FakeGridFtpServer d1 = new FakeGridFtpServer(); FakeGridFtpServer d2 = new FakeGridFtpServer();
             GridFtpMover mover = new GridFtpMover(s, null)) {
            AtomicReference<FakeGridFtpServer> firstWriter = new AtomicReference<>();
            List<FakeGridFtpServer> stors = new java.util.concurrent.CopyOnWriteArrayList<>();
            for (FakeGridFtpServer d : List.of(d1, d2)) {
                d.sizeReply = "550 /d/f: No such file or directory.";
                d.heard = line -> {
                    if (!line.toUpperCase(java.util.Locale.ROOT).startsWith("STOR")) return;
                    stors.add(d);
                    // the host written first never answers its CKSM
                    if (firstWriter.compareAndSet(null, d)) d.cksmDelayMillis = 20_000;
                };
            }
            String base = "ftp://127.0.0.1:" + d1.port() + ",127.0.0.1:" + d2.port();
            FileCopy c = new FileCopy("1", local.toUri(), URI.create(base + "/d/f"), 64 << 10, 1L);
            CopyResult r = mover.submit(List.of(c)).result(c).get(30, TimeUnit.SECONDS);
            assertThat(r.attempts()).isEqualTo(2);
            assertThat(stors).hasSize(2);
            assertThat(stors.get(1)).as("the resend's host").isNotSameAs(stors.get(0));
            assertThat(r.host()).isEqualTo("127.0.0.1:" + (stors.get(1) == d1 ? d1 : d2).port());
        }
    }
}
