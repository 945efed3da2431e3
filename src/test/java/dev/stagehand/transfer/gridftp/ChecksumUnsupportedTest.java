package dev.stagehand.transfer.gridftp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.stagehand.transfer.FileCopy;
import dev.stagehand.transfer.MoverSettings;
import dev.stagehand.transfer.TransferFailure;
import dev.stagehand.transfer.TransferListener;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A destination without ADLER32 answers CKSM "500 Unknown checksum algorithm requested." (GCT's words): the file
 * fails after its one send, saying so, instead of being sent max-attempts times as a PROTOCOL error.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ChecksumUnsupportedTest {

    @TempDir
    Path dir;

    @Test
    void aDestinationWithoutAdler32FailsTheFileAtOnceAfterOneSend() throws Exception {
        Path file = dir.resolve("f.bin");
        Files.write(file, new byte[4 << 20]);
        long adler = Link.adler32(file);
        List<String> retried = new CopyOnWriteArrayList<>();
        TransferListener retries = new TransferListener() {
            @Override
            public void retrying(FileCopy copy, TransferFailure failure) {
                retried.add(failure.getMessage());
            }
        };
        MoverSettings once = MoverSettings.defaults().withStreams(1, 4, false)
                .withRetry(Duration.ofSeconds(5), 4, Duration.ofMillis(20), Duration.ofSeconds(5))
                .withServerVerifyMaxBytes(0); // CKSM after the put
        // a whole file (STOR, then CKSM) and byte ranges (ESTO each, then a CKSM per range)
        MoverSettings[] ways = {once, once.withChunking(64L << 20, 1L << 20, 0)};
        long[] puts = {1, 4};
        for (int i = 0; i < ways.length; i++) {
            try (FakeGridFtpServer server = new FakeGridFtpServer(); GridFtpMover mover = new GridFtpMover(ways[i], retries)) {
                server.cksmRefusal = "500 Unknown checksum algorithm requested.";
                FileCopy c = new FileCopy("f", file.toUri(), java.net.URI.create("ftp://127.0.0.1:" + server.port() + "/d/f.bin"),
                        4 << 20, adler);
                int way = i;
                assertThatThrownBy(() -> mover.submit(List.of(c)).result(c).get(30, TimeUnit.SECONDS))
                        .as("way %d", i)
                        .cause().isInstanceOfSatisfying(TransferFailure.class, f -> {
                            assertThat(f.kind()).isEqualTo(TransferFailure.Kind.UNSUPPORTED);
                            assertThat(f.retryable()).isFalse();
                            assertThat(f.attempts()).isEqualTo(1);
                            assertThat(f.getMessage()).as("way %d", way).contains("destination 127.0.0.1:" + server.port()
                                    + " does not support ADLER32 checksums (CKSM): Unknown checksum algorithm requested.");
                        });
                assertThat(server.count("STOR") + server.count("ESTO")).as("way %d: sent once", i).isEqualTo(puts[i]);
            }
        }
        assertThat(retried).isEmpty();
    }
}
