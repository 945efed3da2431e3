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

    /**
     * Small files are verified by the server (SCKS before the STOR), but GCT takes an SCKS of an algorithm it
     * lacks and then never answers the STOR: against a server without ADLER32 each small file stalled, was
     * aborted by the watchdog and sent again until its attempts ran out. The algorithms FEAT lists are read
     * once per connection; without ADLER32 the file goes without SCKS and fails at its CKSM, once sent.
     */
    @Test
    void aDestinationWithoutAdler32FailsSmallFilesAtOnceInsteadOfStallingOnTheirScks() throws Exception {
        List<String> retried = new CopyOnWriteArrayList<>();
        TransferListener retries = new TransferListener() {
            @Override
            public void retrying(FileCopy copy, TransferFailure failure) {
                retried.add(failure.getMessage());
            }
        };
        Duration stall = Duration.ofSeconds(3);
        MoverSettings oneConnection = MoverSettings.defaults().withStreams(1, 1, false)
                .withRetry(stall, 4, Duration.ofMillis(20), Duration.ofSeconds(5)); // small files: SCKS
        for (boolean adler32 : new boolean[] {false, true}) {
            try (FakeGridFtpServer server = new FakeGridFtpServer(); GridFtpMover mover = new GridFtpMover(oneConnection, retries)) {
                if (!adler32) server.cksmAlgorithms = "MD5:10;SHA1:10;SHA256:11;SHA512:12;";
                long start = System.nanoTime();
                for (int i = 0; i < 3; i++) {
                    Path file = dir.resolve("s" + i + ".bin");
                    Files.write(file, new byte[4096 + i]);
                    FileCopy c = new FileCopy("s" + i, file.toUri(),
                            java.net.URI.create("ftp://127.0.0.1:" + server.port() + "/d/s" + i + ".bin"), 4096 + i, Link.adler32(file));
                    if (adler32) {
                        assertThat(mover.submit(List.of(c)).result(c).get(30, TimeUnit.SECONDS).adler32()).isEqualTo(c.adler32());
                        continue;
                    }
                    assertThatThrownBy(() -> mover.submit(List.of(c)).result(c).get(30, TimeUnit.SECONDS))
                            .cause().isInstanceOfSatisfying(TransferFailure.class, f -> {
                                assertThat(f.kind()).isEqualTo(TransferFailure.Kind.UNSUPPORTED);
                                assertThat(f.attempts()).isEqualTo(1);
                                assertThat(f.getMessage()).contains("destination 127.0.0.1:" + server.port()
                                        + " does not support ADLER32 checksums");
                            });
                }
                assertThat(Duration.ofNanos(System.nanoTime() - start)).as("no stall waited out").isLessThan(stall);
                assertThat(server.count("SCKS")).as("SCKS only where ADLER32 is offered").isEqualTo(adler32 ? 3 : 0);
                assertThat(server.count("STOR")).as("each file sent once").isEqualTo(3);
                assertThat(server.commands.stream().filter(l -> l.equalsIgnoreCase("FEAT")).count())
                        .as("FEAT once for the connection, not per file").isEqualTo(1);
            }
        }
        assertThat(retried).isEmpty();
    }

    /**
     * Only a permanent "not understood / not implemented" SCKS reply (500, 501, 502, 504) says the server lacks
     * SCKS: the file's retry and the files after it are checked with CKSM after the put. A transient refusal
     * (421, 450, 451) fails that attempt only: it is retried, with SCKS, and the link keeps SCKS. Before, any
     * refusal turned SCKS off for the link.
     */
    @Test
    void onlyAPermanentScksRefusalTurnsScksOffForTheLink() throws Exception {
        MoverSettings oneConnection = MoverSettings.defaults().withStreams(1, 1, false)
                .withRetry(Duration.ofSeconds(5), 4, Duration.ofMillis(20), Duration.ofSeconds(5)); // small files: SCKS
        Path file = dir.resolve("s.bin");
        Files.write(file, new byte[4096]);
        long adler = Link.adler32(file);
        for (String refusal : List.of("451 Local resource failure", "450 Requested action not taken", "421 Service not available",
                "500 Unknown command", "501 Syntax error", "502 Command not implemented", "504 Not implemented for that parameter")) {
            boolean permanent = refusal.startsWith("50");
            List<String> retried = new CopyOnWriteArrayList<>();
            TransferListener retries = new TransferListener() {
                @Override
                public void retrying(FileCopy copy, TransferFailure failure) {
                    retried.add(failure.getMessage());
                }
            };
            try (FakeGridFtpServer server = new FakeGridFtpServer(); GridFtpMover mover = new GridFtpMover(oneConnection, retries)) {
                server.scksRefusals.add(refusal);
                server.cksm = String.format("%08x", adler);
                for (int i = 0; i < 2; i++) {
                    FileCopy c = new FileCopy("s" + i, file.toUri(),
                            java.net.URI.create("ftp://127.0.0.1:" + server.port() + "/d/s" + i + ".bin"), 4096, adler);
                    var r = mover.submit(List.of(c)).result(c).get(30, TimeUnit.SECONDS);
                    assertThat(r.adler32()).as(refusal).isEqualTo(adler);
                    assertThat(r.attempts()).as(refusal + ", file %d", i).isEqualTo(i == 0 ? 2 : 1);
                }
                assertThat(retried).as(refusal).singleElement().asString().contains(refusal.substring(4));
                assertThat(server.count("STOR")).as(refusal).isEqualTo(3);
                assertThat(server.count("SCKS")).as(refusal + ": SCKS kept for the link").isEqualTo(permanent ? 1 : 3);
                assertThat(server.count("CKSM")).as(refusal + ": CKSM after the put").isEqualTo(permanent ? 2 : 0);
            }
        }
    }

    @Test
    void theAlgorithmsAreReadFromFeatsCksmLine() {
        assertThat(GridFtpSession.offersAdler32("Extensions supported\n CKSM MD5:10;ADLER32:10;SHA1:10;\n DCAU\nEnd.")).isTrue();
        assertThat(GridFtpSession.offersAdler32("Extensions supported\r\n CKSM MD5:10;SHA1:10;SHA256:11;\r\n ESTO\r\nEnd.")).isFalse();
        assertThat(GridFtpSession.offersAdler32("Features:\n CKSM MD5,adler32\n")).isTrue();
        assertThat(GridFtpSession.offersAdler32("Features:\n DCAU\n ESTO\nEnd.")).as("no CKSM line: SCKS is tried").isTrue();
    }
}
