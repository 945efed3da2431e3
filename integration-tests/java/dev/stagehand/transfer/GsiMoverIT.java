package dev.stagehand.transfer;

import static dev.stagehand.transfer.AnonymousMoverIT.adler;
import static dev.stagehand.transfer.AnonymousMoverIT.file;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * gsiftp:// against the stock Debian server (TLS 1.2, default OpenSSL security level) with a throwaway CA:
 * puts with parallel streams and data channel authentication, third-party copies, and an unknown DN refused.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class GsiMoverIT {

    static Path root;
    static GsiFixture gsi;
    static Path userProxy;
    static Path strangerProxy;
    static GridFtpServer a;
    static GridFtpServer b;

    @BeforeAll
    static void world() throws Exception {
        root = Files.createTempDirectory("stagehand-gsi-it");
        GridFtpServer.openUp(root);
        gsi = GsiFixture.create(root.resolve("pki"));
        userProxy = gsi.user("Test User", true);
        strangerProxy = gsi.user("Stranger", false);
        a = GridFtpServer.gsi(root.resolve("a"), gsi.serverEnv());
        b = GridFtpServer.gsi(root.resolve("b"), gsi.serverEnv());
    }

    @AfterAll
    static void stop() throws Exception {
        if (a != null) a.close();
        if (b != null) b.close();
        new ProcessBuilder("rm", "-rf", root.toString()).start().waitFor();
    }

    static MoverSettings settings(Path proxy, String dcau) {
        return MoverSettings.defaults().withStreams(4, 2, false)
                .withRetry(Duration.ofSeconds(10), 3, Duration.ofMillis(100), Duration.ofSeconds(5))
                .withSecurity(true, dcau, proxy.toString(), gsi.certDir.toString());
    }

    static String url(GridFtpServer s, Path p) {
        return "gsiftp://localhost:" + s.port + p;
    }

    @Test
    void putsWithParallelStreamsAndDataChannelAuthentication() throws Exception {
        Path dst = root.resolve("dst-put");
        GridFtpServer.openUp(dst);
        List<FileCopy> copies = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            Path f = file(root.resolve("src"), "g" + i, (i + 1) << 20, i);
            copies.add(new FileCopy("g" + i, f.toUri(), URI.create(url(a, dst) + "/g" + i), Files.size(f), adler(f)));
        }
        for (String dcau : List.of("SELF", "NONE")) {
            try (Mover mover = Movers.gridFtp(settings(userProxy, dcau), null)) {
                CopyBatch batch = mover.submit(copies);
                batch.done().get(60, TimeUnit.SECONDS);
                for (FileCopy c : copies) assertThat(batch.result(c).get().adler32()).isEqualTo(c.adler32());
            }
            for (FileCopy c : copies) assertThat(Files.mismatch(Path.of(c.source()), dst.resolve(c.id()))).isEqualTo(-1L);
        }
    }

    @Test
    void thirdPartyCopyBetweenTwoServersIsVerified() throws Exception {
        Path srcDir = root.resolve("tp-src");
        Path dst = root.resolve("tp-dst");
        GridFtpServer.openUp(srcDir);
        GridFtpServer.openUp(dst);
        Path f = file(srcDir, "tp.bin", 20 << 20, 5);
        FileCopy c = new FileCopy("tp", URI.create(url(a, f)), URI.create(url(b, dst) + "/tp.bin"), Files.size(f), null);
        try (Mover mover = Movers.gridFtp(settings(userProxy, "SELF"), null)) {
            CopyResult r = mover.submit(List.of(c)).result(c).get(60, TimeUnit.SECONDS);
            assertThat(r.adler32()).isEqualTo(adler(f));
            assertThat(r.bytes()).isEqualTo(20 << 20);
        }
        assertThat(Files.mismatch(f, dst.resolve("tp.bin"))).isEqualTo(-1L);
    }

    @Test
    void unknownDnIsRefusedByTheGridMapfileWithoutRetries() throws Exception {
        Path dst = root.resolve("dst-stranger");
        GridFtpServer.openUp(dst);
        Path f = file(root.resolve("src"), "s.bin", 1000, 1);
        FileCopy c = new FileCopy("s", f.toUri(), URI.create(url(a, dst) + "/s.bin"), Files.size(f), null);
        try (Mover mover = Movers.gridFtp(settings(strangerProxy, "SELF"), null)) {
            assertThatThrownBy(() -> mover.submit(List.of(c)).result(c).get(30, TimeUnit.SECONDS))
                    .cause().isInstanceOfSatisfying(TransferFailure.class, e -> {
                        assertThat(e.kind()).isEqualTo(TransferFailure.Kind.AUTHENTICATION);
                        assertThat(e.attempts()).isEqualTo(1);
                    });
        }
        assertThat(Files.exists(dst.resolve("s.bin"))).isFalse();
    }
}
