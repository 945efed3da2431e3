package dev.stagehand.transfer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Connection set-up has a time limit: a server that accepts TCP and says nothing (no banner), or greets
 * and then never answers a command, fails the attempt within the stall timeout instead of hanging the mover.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SetupTimeoutIT {

    @ParameterizedTest
    @ValueSource(strings = {"", "220 silent server ready.\r\n"})
    void silentServerTimesOut(String greeting) throws Exception {
        List<Socket> held = new CopyOnWriteArrayList<>();
        Path src = Files.createTempFile("stagehand-setup", ".bin");
        try (ServerSocket server = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"))) {
            Thread.ofVirtual().start(() -> {
                try {
                    while (true) {
                        Socket s = server.accept();
                        held.add(s); // accepted, never answered
                        OutputStream out = s.getOutputStream();
                        out.write(greeting.getBytes(StandardCharsets.US_ASCII));
                        out.flush();
                    }
                } catch (Exception closed) {
                    // the test is over
                }
            });
            Files.write(src, new byte[4096]);
            FileCopy c = new FileCopy("x", src.toUri(), URI.create("ftp://127.0.0.1:" + server.getLocalPort() + "/tmp/x"), 4096, null);
            MoverSettings s = MoverSettings.defaults().withStreams(1, 1, false)
                    .withRetry(Duration.ofSeconds(1), 2, Duration.ofMillis(100), Duration.ofSeconds(10));
            long start = System.nanoTime();
            try (Mover mover = Movers.gridFtp(s, null)) {
                assertThatThrownBy(() -> mover.submit(List.of(c)).result(c).get(30, TimeUnit.SECONDS))
                        .cause().isInstanceOfSatisfying(TransferFailure.class, f -> {
                            assertThat(f.kind()).isIn(TransferFailure.Kind.TIMEOUT, TransferFailure.Kind.STALL);
                            assertThat(f.attempts()).isEqualTo(2);
                        });
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            assertThat(seconds).as("two attempts of 1 s each, then the failure").isLessThan(10);
            assertThat(held).hasSizeGreaterThanOrEqualTo(2);
        } finally {
            for (Socket s : held) s.close();
            Files.deleteIfExists(src);
        }
    }
}
