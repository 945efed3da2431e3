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
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * gsiftp:// against the stock Debian server (TLS 1.2, default OpenSSL security level) with a throwaway CA:
 * puts with parallel streams and data channel authentication, third-party copies, and an unknown DN refused;
 * a put on jglobus's own DCAU path and a third-party copy, each hung mid-file, resume from the destination's
 * restart markers (GCT sends them every 5 s) instead of byte 0.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class GsiMoverIT {

    static GridFtpScratch scratch;
    static Path root;
    static GsiFixture gsi;
    static Path userProxy;
    static Path strangerProxy;
    static GridFtpServer a;
    static GridFtpServer b;

    @BeforeAll
    static void world() throws Exception {
        scratch = GridFtpScratch.create("stagehand-gsi-it");
        root = scratch.root;
        gsi = GsiFixture.create(root.resolve("pki"));
        userProxy = gsi.user("Test User", true);
        strangerProxy = gsi.user("Stranger", false);
        a = scratch.gsi("a", gsi.serverEnv());
        b = scratch.gsi("b", gsi.serverEnv());
    }

    @AfterAll
    static void stop() throws Exception {
        if (scratch != null) scratch.close();
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

    /**
     * A name with non-ASCII characters, spaces, '#', '%' and '+' arrives under exactly that name over gsiftp://,
     * put (Stagehand's own sender, and jglobus's with DCAU) and copied server to server, checksum-verified: the
     * wrapped (MIC) control channel carries the name's UTF-8 bytes, which a clear-text one would drop.
     */
    @Test
    void aNonAsciiNameWithSpacesHashPercentAndPlusArrivesUnderItsOwnName() throws Exception {
        String name = "déjà vu #1 100%+ü 日本.bin";
        Path srcDir = root.resolve("src-names");
        Path f = file(srcDir, name, 3 << 20, 51);
        for (String dcau : List.of("NONE", "SELF")) {
            Path dst = root.resolve("dst-names-" + dcau);
            GridFtpServer.openUp(dst);
            FileCopy put = new FileCopy("put-" + dcau, f.toUri(), FileUrls.under(url(a, dst), name), Files.size(f), adler(f));
            try (Mover mover = Movers.gridFtp(settings(userProxy, dcau), null)) {
                assertThat(mover.submit(List.of(put)).result(put).get(60, TimeUnit.SECONDS).adler32()).isEqualTo(adler(f));
                Path third = root.resolve("dst-names-tp-" + dcau);
                GridFtpServer.openUp(third);
                FileCopy tp = new FileCopy("tp-" + dcau, FileUrls.under(url(a, dst), name), FileUrls.under(url(b, third), name),
                        Files.size(f), null);
                assertThat(mover.submit(List.of(tp)).result(tp).get(60, TimeUnit.SECONDS).adler32()).isEqualTo(adler(f));
                assertThat(Files.mismatch(f, third.resolve(name))).as("copied server to server").isEqualTo(-1L);
            }
            assertThat(Files.mismatch(f, dst.resolve(name))).as("put with DCAU " + dcau).isEqualTo(-1L);
            try (var names = Files.list(dst)) {
                assertThat(names.map(p -> p.getFileName().toString())).containsExactly(name);
            }
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
    void dcauPutHungMidFileResumesFromTheServersRestartMarkers() throws Exception {
        // DCAU SELF: the data channels speak GSI, so the put goes through jglobus (not Stagehand's own sender)
        Path dst = root.resolve("dst-resume");
        GridFtpServer.openUp(dst);
        int size = 192 << 20;
        Path f = file(root.resolve("src"), "resume.bin", size, 21);
        FileCopy c = new FileCopy("resume", f.toUri(), URI.create(url(a, dst) + "/resume.bin"), size, adler(f));
        // a throttled source (~16 MiB/s): part of the file is acknowledged by a restart marker before the hang
        ThrottledSource slow = new ThrottledSource(16L << 20);
        MoverSettings s = settings(userProxy, "SELF").withStreams(2, 1, false).withChunking(64L << 20, 0, 0)
                .withRetry(Duration.ofSeconds(5), 3, Duration.ofMillis(100), Duration.ofSeconds(5));
        List<Long> stopped = new ArrayList<>();
        try (Mover mover = Movers.gridFtp(s, slow)) {
            CopyBatch batch = mover.submit(List.of(c));
            while (slow.sinceFirstByte() < 7_000_000_000L) Thread.sleep(20);
            stopped.addAll(a.children());
            for (long pid : stopped) GridFtpServer.signal(pid, "STOP"); // the server hangs mid-file
            long atStop = slow.sent.get();
            assertThat(atStop).as("stopped mid-file").isLessThan(size);
            CopyResult r = batch.result(c).get(60, TimeUnit.SECONDS);
            assertThat(r.attempts()).isGreaterThan(1);
            assertThat(slow.retries).extracting(TransferFailure::kind).contains(TransferFailure.Kind.STALL);
            assertThat(r.adler32()).isEqualTo(adler(f));
            assertThat(Files.mismatch(f, dst.resolve("resume.bin"))).isEqualTo(-1L);
            // from byte 0 the retry would send again everything sent before the hang (and more); resumed, it
            // skips what the markers acknowledged
            long resent = slow.sent.get() - size;
            assertThat(resent).as("bytes sent twice (%d sent before the hang)", atStop).isLessThan(atStop - (8 << 20));
        } finally {
            for (long pid : stopped) GridFtpServer.signal(pid, "CONT");
        }
    }

    @Test
    void thirdPartyCopyHungMidFileResumesFromTheDestinationsRestartMarkers() throws Exception {
        Path srcDir = root.resolve("tpr-src");
        Path dst = root.resolve("tpr-dst");
        GridFtpServer.openUp(srcDir);
        GridFtpServer.openUp(dst);
        int size = 256 << 20;
        Path f = file(srcDir, "big.bin", size, 22);
        Path w = file(srcDir, "warm.bin", 1 << 20, 23);
        FileCopy warm = new FileCopy("warm", URI.create(url(a, w)), URI.create(url(b, dst) + "/warm.bin"), Files.size(w), adler(w));
        FileCopy c = new FileCopy("big", URI.create(url(a, f)), URI.create(url(b, dst) + "/big.bin"), size, adler(f));
        AtomicLong crossed = new AtomicLong();
        List<TransferFailure> retries = new CopyOnWriteArrayList<>();
        TransferListener recorder = new TransferListener() {
            @Override
            public void bytes(FileCopy copy, long delta) {
                if (copy == c) crossed.addAndGet(delta); // reported by the attempt that finished
            }

            @Override
            public void retrying(FileCopy copy, TransferFailure failure) {
                retries.add(failure);
            }
        };
        // progress of a third-party copy is its markers (every 5 s): the stall limit must be longer
        MoverSettings s = settings(userProxy, "SELF").withStreams(2, 1, false)
                .withRetry(Duration.ofSeconds(8), 3, Duration.ofMillis(100), Duration.ofSeconds(5));
        List<Long> stopped = new ArrayList<>();
        Process signals = new ProcessBuilder("bash", "-c", "while read s p; do kill -$s $p; done").start();
        var kill = new java.io.PrintWriter(signals.getOutputStream(), true);
        try (Mover mover = Movers.gridFtp(s, recorder)) {
            // the worker keeps its source and destination connections: throttle the processes serving them
            assertThat(mover.submit(List.of(warm)).result(warm).get(60, TimeUnit.SECONDS).adler32()).isEqualTo(adler(w));
            List<Long> source = a.children();
            List<Long> destination = b.children();
            stopped.addAll(source);
            stopped.addAll(destination);
            for (long pid : source) kill.println("STOP " + pid);
            CopyBatch batch = mover.submit(List.of(c));
            // the source server runs in short slices, keeping the destination file near 12 MiB/s: on loopback a
            // slice moves tens of MiB, and at 24 MiB/s the file was sometimes complete within the window
            Path out = dst.resolve("big.bin");
            long started = 0;
            while (true) {
                long now = System.nanoTime();
                long have = Files.exists(out) ? Files.size(out) : 0;
                if (started == 0 && have > 0) started = now;
                if (started != 0 && now - started > 7_000_000_000L) break;
                assertThat(have).as("still mid-file").isLessThan(size);
                boolean behind = started == 0 || have < (now - started) / 1_000_000_000.0 * (12 << 20);
                if (behind) for (long pid : source) kill.println("CONT " + pid);
                Thread.sleep(behind ? 10 : 100);
                for (long pid : source) kill.println("STOP " + pid);
                Thread.sleep(20);
            }
            for (long pid : destination) kill.println("STOP " + pid); // the destination hangs mid-file too
            CopyResult r = batch.result(c).get(90, TimeUnit.SECONDS);
            assertThat(r.attempts()).isGreaterThan(1);
            assertThat(retries).extracting(TransferFailure::kind).contains(TransferFailure.Kind.STALL);
            assertThat(r.adler32()).isEqualTo(adler(f));
            assertThat(Files.mismatch(f, out)).isEqualTo(-1L);
            // the attempt that finished moved only what the destination's markers had not acknowledged
            assertThat(crossed.get()).as("bytes of the resumed attempt").isLessThan(size - (16L << 20));
        } finally {
            for (long pid : stopped) GridFtpServer.signal(pid, "CONT");
            signals.destroy();
        }
    }

    @Test
    void aProxyRenewedOnDiskIsUsedWithoutARestart() throws Exception {
        Path dst = root.resolve("dst-renewed");
        GridFtpServer.openUp(dst);
        Path f = file(root.resolve("src"), "renewed.bin", 1000, 3);
        FileCopy c = new FileCopy("renewed", f.toUri(), URI.create(url(a, dst) + "/renewed.bin"), Files.size(f), adler(f));
        Path proxy = root.resolve("pki").resolve("x509up-renewed");
        Files.copy(strangerProxy, proxy, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        try (Mover mover = Movers.gridFtp(settings(proxy, "SELF"), null)) {
            // the proxy on disk will not do (here: a DN the server does not map; in production: expired)
            assertThatThrownBy(() -> mover.submit(List.of(c)).result(c).get(30, TimeUnit.SECONDS))
                    .cause().isInstanceOfSatisfying(TransferFailure.class,
                            e -> assertThat(e.kind()).isEqualTo(TransferFailure.Kind.AUTHENTICATION));
            // cron writes a fresh one in its place: the same mover uses it, no restart
            Files.copy(userProxy, proxy, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            Files.setLastModifiedTime(proxy, java.nio.file.attribute.FileTime.from(java.time.Instant.now().plusSeconds(2)));
            assertThat(mover.submit(List.of(c)).result(c).get(30, TimeUnit.SECONDS).adler32()).isEqualTo(adler(f));
        }
        assertThat(Files.mismatch(f, dst.resolve("renewed.bin"))).isEqualTo(-1L);
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
