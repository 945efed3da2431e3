package dev.stagehand.transfer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.zip.Adler32;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The jglobus mover against real anonymous globus-gridftp-server processes on loopback. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class AnonymousMoverIT {

    static GridFtpScratch scratch;
    static Path root;
    static GridFtpServer a;
    static GridFtpServer b;

    @BeforeAll
    static void servers() throws Exception {
        scratch = GridFtpScratch.create("stagehand-gridftp-it");
        root = scratch.root;
        a = scratch.anonymous("a");
        b = scratch.anonymous("b");
    }

    @AfterAll
    static void stop() throws Exception {
        if (scratch != null) scratch.close();
    }

    static MoverSettings fast() {
        return MoverSettings.defaults().withStreams(4, 4, false)
                .withRetry(Duration.ofSeconds(3), 4, Duration.ofMillis(100), Duration.ofSeconds(30));
    }

    static Path file(Path dir, String name, int size, long seed) throws Exception {
        Files.createDirectories(dir);
        byte[] data = new byte[size];
        new Random(seed).nextBytes(data);
        Path p = dir.resolve(name);
        Files.write(p, data);
        return p;
    }

    static long adler(Path p) throws Exception {
        Adler32 a = new Adler32();
        a.update(Files.readAllBytes(p));
        return a.getValue();
    }

    static Path destDir(String name) throws Exception {
        Path d = root.resolve(name);
        GridFtpServer.openUp(d);
        return d;
    }

    static FileCopy copy(Path src, String destUrlDir, Long adler) throws Exception {
        return new FileCopy(src.getFileName().toString(), src.toUri(), URI.create(destUrlDir + "/" + src.getFileName()),
                Files.size(src), adler);
    }

    @Test
    void bigFileWithParallelStreamsAndByteRangesArrivesIntact() throws Exception {
        Path src = file(root.resolve("src-big"), "big.bin", 48 << 20, 1);
        Path dst = destDir("dst-big");
        MoverSettings s = fast().withChunking(64L << 20, 16L << 20, 0);
        try (Mover mover = Movers.gridFtp(s, null)) {
            FileCopy c = copy(src, a.url(dst), adler(src));
            CopyResult r = mover.submit(List.of(c)).result(c).get(60, TimeUnit.SECONDS);
            assertThat(r.adler32()).isEqualTo(adler(src));
            assertThat(r.attempts()).isEqualTo(1);
            assertThat(Files.mismatch(src, dst.resolve("big.bin"))).isEqualTo(-1L);
            // no catalog sum: the ranges are summed here and each compared with the server's
            Files.delete(dst.resolve("big.bin"));
            FileCopy unknown = copy(src, a.url(dst), null);
            assertThat(mover.submit(List.of(unknown)).result(unknown).get(60, TimeUnit.SECONDS).adler32()).isEqualTo(adler(src));
        }
        assertThat(Files.mismatch(src, dst.resolve("big.bin"))).isEqualTo(-1L);
    }

    @Test
    void aFileSentAsByteRangesOverALongerOneLeavesNoStaleTail() throws Exception {
        Path src = file(root.resolve("src-tail"), "tail.bin", 24 << 20, 31);
        Path dst = destDir("dst-tail");
        MoverSettings s = fast().withChunking(64L << 20, 8L << 20, 0); // 4 byte ranges (ESTO: no truncation)
        try (Mover mover = Movers.gridFtp(s, null)) {
            // an older, longer file at the destination, with and without the catalog's sum
            for (Long known : java.util.Arrays.asList(adler(src), null)) {
                Files.write(dst.resolve("tail.bin"), new byte[40 << 20]);
                Files.setPosixFilePermissions(dst.resolve("tail.bin"), java.nio.file.attribute.PosixFilePermissions.fromString("rw-rw-rw-"));
                FileCopy c = copy(src, a.url(dst), known);
                assertThat(mover.submit(List.of(c)).result(c).get(60, TimeUnit.SECONDS).adler32()).isEqualTo(adler(src));
                assertThat(Files.size(dst.resolve("tail.bin"))).isEqualTo(24 << 20);
                assertThat(Files.mismatch(src, dst.resolve("tail.bin"))).isEqualTo(-1L);
            }
        }
        assertThat(a.transfers().stream().filter(l -> l.contains("tail.bin") && l.contains("TYPE=ESTO"))).hasSizeGreaterThanOrEqualTo(8);
    }

    @Test
    void bigFileOverOneConnectionUsesParallelStreams() throws Exception {
        Path src = file(root.resolve("src-streams"), "streams.bin", 40 << 20, 2);
        Path dst = destDir("dst-streams");
        MoverSettings s = fast().withStreams(4, 1, false).withChunking(64L << 20, 0, 0); // no byte ranges
        try (Mover mover = Movers.gridFtp(s, null)) {
            // known sum (sendfile, the server's CKSM compared), then unknown (summed per block while sent)
            for (Long known : java.util.Arrays.asList(adler(src), null)) {
                FileCopy c = copy(src, b.url(dst), known);
                CopyResult r = mover.submit(List.of(c)).result(c).get(60, TimeUnit.SECONDS);
                assertThat(r.adler32()).isEqualTo(adler(src));
                assertThat(r.attempts()).isEqualTo(1);
                assertThat(Files.mismatch(src, dst.resolve("streams.bin"))).isEqualTo(-1L);
                Files.delete(dst.resolve("streams.bin"));
            }
            // a small file next on the same connection goes over one of its streams
            Path small = file(root.resolve("src-streams"), "small.bin", 1 << 20, 3);
            FileCopy c = copy(small, b.url(dst), null);
            assertThat(mover.submit(List.of(c)).result(c).get(60, TimeUnit.SECONDS).adler32()).isEqualTo(adler(small));
        }
        List<String> stores = b.transfers().stream().filter(l -> l.contains("streams.bin") || l.contains("small.bin"))
                .filter(l -> l.contains("TYPE=STOR") || l.contains("TYPE=ESTO")).toList();
        assertThat(stores).hasSize(3);
        assertThat(stores.get(0)).contains("STREAMS=4");
        assertThat(stores.get(1)).contains("STREAMS=4");
        assertThat(stores.get(2)).contains("small.bin");
    }

    @Test
    void manySmallFilesOverReusedConnectionsToTwoHosts() throws Exception {
        Path srcDir = root.resolve("src-small");
        Path dst = destDir("dst-small");
        List<FileCopy> copies = new ArrayList<>();
        for (int i = 0; i < 300; i++) {
            Path f = file(srcDir, "f" + i, 10_000 + i * 97, i);
            copies.add(new FileCopy("f" + i, f.toUri(),
                    URI.create("ftp://127.0.0.1:" + a.port + ",127.0.0.1:" + b.port + dst + "/f" + i), Files.size(f), null));
        }
        int childrenBefore = a.children().size() + b.children().size();
        try (Mover mover = Movers.gridFtp(fast(), null)) {
            CopyBatch batch = mover.submit(copies);
            batch.done().get(90, TimeUnit.SECONDS);
            java.util.Set<String> hosts = new java.util.HashSet<>();
            for (FileCopy c : copies) {
                CopyResult r = batch.result(c).get();
                assertThat(r.adler32()).isEqualTo(adler(Path.of(c.source())));
                hosts.add(r.host());
            }
            assertThat(hosts).containsExactlyInAnyOrder("127.0.0.1:" + a.port, "127.0.0.1:" + b.port);
            // reused connections: one server process per connection (4 senders + at most 4 CKSM checkers per host), not per file
            assertThat(a.children().size() + b.children().size() - childrenBefore).isLessThanOrEqualTo(4 + 2 * 4);
        }
        for (FileCopy c : copies) assertThat(Files.mismatch(Path.of(c.source()), dst.resolve(c.id()))).isEqualTo(-1L);
    }

    @Test
    void corruptedDestinationIsDetectedAndSentAgain() throws Exception {
        Path src = file(root.resolve("src-corrupt"), "c.bin", 2 << 20, 7);
        Path dst = destDir("dst-corrupt");
        AtomicInteger corruptions = new AtomicInteger();
        TransferListener corruptFirstWrite = new TransferListener() {
            @Override
            public void written(FileCopy copy, String host, int attempt) {
                if (corruptions.getAndIncrement() == 0) {
                    try (var ch = java.nio.channels.FileChannel.open(dst.resolve("c.bin"), java.nio.file.StandardOpenOption.WRITE)) {
                        ch.write(java.nio.ByteBuffer.wrap(new byte[] {1, 2, 3}), 1000);
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                }
            }
        };
        // byte ranges: checked by CKSM after they are written (a whole file is checked by the server before its
        // 226, see serverRejectsAWholeFileWhoseChecksumDiffers), so the corruption lands before the check
        try (Mover mover = Movers.gridFtp(fast().withChunking(64L << 20, 1L << 20, 0), corruptFirstWrite)) {
            FileCopy c = copy(src, a.url(dst), adler(src));
            CopyResult r = mover.submit(List.of(c)).result(c).get(60, TimeUnit.SECONDS);
            assertThat(r.attempts()).isEqualTo(2);
            assertThat(corruptions.get()).isEqualTo(2);
        }
        assertThat(Files.mismatch(src, dst.resolve("c.bin"))).isEqualTo(-1L);
    }

    @Test
    void wrongExpectedChecksumIsNeverReportedDone() throws Exception {
        Path src = file(root.resolve("src-wrong"), "w.bin", 100_000, 9);
        Path dst = destDir("dst-wrong");
        try (Mover mover = Movers.gridFtp(fast().withRetry(Duration.ofSeconds(3), 2, Duration.ofMillis(50), Duration.ofSeconds(1)), null)) {
            FileCopy c = copy(src, a.url(dst), adler(src) ^ 1);
            // the local file does not read as the sum it is sent against: its own fault, not sent again
            assertThatThrownBy(() -> mover.submit(List.of(c)).result(c).get(30, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class)
                    .cause().isInstanceOfSatisfying(TransferFailure.class, f -> {
                        assertThat(f.kind()).isEqualTo(TransferFailure.Kind.SOURCE_CHECKSUM_MISMATCH);
                        assertThat(f.attempts()).isEqualTo(1);
                    });
        }
    }

    /**
     * A cached copy whose bytes rotted on disk after its sum was taken keeps its size: whether the server checks
     * the whole file before its 226 (SCKS), CKSM checks it afterwards, or it goes as byte ranges, the mover reads
     * the source once after the mismatch and fails it at once for its owner to read anew. It used to send the same
     * bad bytes max-attempts times, each a CHECKSUM_MISMATCH, before the recall hand-off saw it.
     */
    @Test
    void aLocalSourceWhoseBytesRottedFailsAtOnceNotSentAgain() throws Exception {
        Path dst = destDir("dst-rotted");
        List<String> retried = new java.util.concurrent.CopyOnWriteArrayList<>();
        TransferListener retries = new TransferListener() {
            @Override
            public void retrying(FileCopy copy, TransferFailure failure) {
                retried.add(copy.id() + ": " + failure.getMessage());
            }
        };
        MoverSettings[] ways = {fast(), fast().withServerVerifyMaxBytes(1 << 20), fast().withChunking(64L << 20, 1L << 20, 0)};
        for (int i = 0; i < ways.length; i++) {
            Path src = file(root.resolve("src-rotted"), "r" + i + ".bin", 3 << 20, 40 + i);
            long verified = adler(src);
            try (var ch = java.nio.channels.FileChannel.open(src, java.nio.file.StandardOpenOption.WRITE)) {
                ch.write(java.nio.ByteBuffer.wrap(new byte[] {7, 7, 7}), 1_000_000); // rotted, same size
            }
            try (Mover mover = Movers.gridFtp(ways[i], retries)) {
                FileCopy c = copy(src, a.url(dst), verified);
                assertThatThrownBy(() -> mover.submit(List.of(c)).result(c).get(60, TimeUnit.SECONDS))
                        .as("way %d", i)
                        .isInstanceOf(ExecutionException.class)
                        .cause().isInstanceOfSatisfying(TransferFailure.class, f -> {
                            assertThat(f.kind().name()).isEqualTo("SOURCE_CHECKSUM_MISMATCH");
                            assertThat(f.retryable()).isFalse();
                            assertThat(f.attempts()).isEqualTo(1);
                            assertThat(f.getMessage()).contains("local source " + src);
                        });
            }
        }
        assertThat(retried).as("no attempt spent on the same bad bytes").isEmpty();
    }

    @Test
    void serverRejectsAWholeFileWhoseChecksumDiffers() throws Exception {
        Path src = file(root.resolve("src-scks"), "s.bin", 3 << 20, 11);
        Path dst = destDir("dst-scks");
        // an older, longer file at the destination: STOR must truncate it
        Files.write(dst.resolve("s.bin"), new byte[5 << 20]);
        Files.setPosixFilePermissions(dst.resolve("s.bin"), java.nio.file.attribute.PosixFilePermissions.fromString("rw-rw-rw-"));
        MoverSettings once = fast().withRetry(Duration.ofSeconds(3), 1, Duration.ofMillis(50), Duration.ofSeconds(1));
        // the catalog's sum is taken as is (the file is not read first): only the server's SCKS check can catch it
        try (Mover mover = Movers.gridFtp(once, null)) {
            FileCopy wrong = copy(src, a.url(dst), adler(src) ^ 0x10);
            assertThatThrownBy(() -> mover.submit(List.of(wrong)).result(wrong).get(30, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class)
                    .cause().isInstanceOfSatisfying(TransferFailure.class, f -> {
                        // the server's refusal, then the source read once: it is the source that is off the sum
                        assertThat(f.kind()).isEqualTo(TransferFailure.Kind.SOURCE_CHECKSUM_MISMATCH);
                        assertThat(f.getMessage()).contains("INCORRECT_CHECKSUM");
                    });
            FileCopy right = copy(src, a.url(dst), adler(src));
            CopyResult r = mover.submit(List.of(right)).result(right).get(30, TimeUnit.SECONDS);
            assertThat(r.adler32()).isEqualTo(adler(src));
            // unknown catalog sum: read here, verified there
            FileCopy unknown = copy(src, a.url(dst), null);
            assertThat(mover.submit(List.of(unknown)).result(unknown).get(30, TimeUnit.SECONDS).adler32()).isEqualTo(adler(src));
        }
        assertThat(Files.mismatch(src, dst.resolve("s.bin"))).isEqualTo(-1L);
        // above the SCKS size the whole file is checked by CKSM afterwards, and a wrong sum is caught there
        try (Mover mover = Movers.gridFtp(once.withServerVerifyMaxBytes(1 << 20), null)) {
            FileCopy unknown = copy(src, a.url(dst), null);
            assertThat(mover.submit(List.of(unknown)).result(unknown).get(30, TimeUnit.SECONDS).adler32()).isEqualTo(adler(src));
            FileCopy wrong = copy(src, a.url(dst), adler(src) ^ 0x10);
            assertThatThrownBy(() -> mover.submit(List.of(wrong)).result(wrong).get(30, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class)
                    .cause().isInstanceOfSatisfying(TransferFailure.class,
                            f -> assertThat(f.kind()).isEqualTo(TransferFailure.Kind.SOURCE_CHECKSUM_MISMATCH));
        }
    }

    @Test
    void permissionDeniedAndMissingDirectoryFailFast() throws Exception {
        // bigger than the socket buffers: the refused put's data must not block its reply
        Path src = file(root.resolve("src-denied"), "d.bin", 24 << 20, 3);
        Path locked = root.resolve("locked");
        Files.createDirectories(locked);
        new ProcessBuilder("chmod", "555", locked.toString()).start().waitFor();
        try (Mover mover = Movers.gridFtp(fast(), null)) {
            FileCopy denied = copy(src, a.url(locked), null);
            FileCopy missing = copy(src, a.url(root.resolve("no/such/dir")), null);
            CopyBatch batch = mover.submit(List.of(denied, missing));
            assertFailure(batch, denied, TransferFailure.Kind.PERMISSION_DENIED);
            assertFailure(batch, missing, TransferFailure.Kind.NO_SUCH_PATH);
        }
    }

    /**
     * File names with spaces, '#', '%' and '+' (percent-encoded in their URL, as {@link FileUrls#under} makes it)
     * arrive under exactly that name: whole, as byte ranges, and copied server to server. A name with non-ASCII
     * characters fails at once as a bad request and touches nothing: the server's clear-text control channel
     * drops those bytes (globus_xio_telnet.c), and before, "déjà vu.bin" was stored as "dj vu.bin", over the
     * file of that name, and reported done (its CKSM asked of the same wrong file).
     */
    @Test
    void awkwardNamesArriveUnderTheirOwnNameAndNonAsciiOnesAreRefusedOverClearTextFtp() throws Exception {
        String big = "a b #1 100%+x.bin";
        String small = "small #2 50%25 + plus.txt";
        Path srcDir = root.resolve("src-names");
        Path src = file(srcDir, big, 24 << 20, 41);
        Path smallSrc = file(srcDir, small, 1000, 42);
        Path dst = destDir("dst-names");
        Path dst2 = destDir("dst-names-b");
        MoverSettings s = fast().withChunking(64L << 20, 8L << 20, 0); // the big one as byte ranges (ESTO)
        try (Mover mover = Movers.gridFtp(s, null)) {
            for (Path f : List.of(src, smallSrc)) {
                String name = f.getFileName().toString();
                FileCopy put = new FileCopy(name, f.toUri(), FileUrls.under(a.url(dst), name), Files.size(f), adler(f));
                assertThat(mover.submit(List.of(put)).result(put).get(60, TimeUnit.SECONDS).adler32()).isEqualTo(adler(f));
                assertThat(Files.mismatch(f, dst.resolve(name))).as(name).isEqualTo(-1L);
                FileCopy third = new FileCopy(name + "-tp", FileUrls.under(a.url(dst), name), FileUrls.under(b.url(dst2), name),
                        Files.size(f), null);
                assertThat(mover.submit(List.of(third)).result(third).get(60, TimeUnit.SECONDS).adler32()).isEqualTo(adler(f));
                assertThat(Files.mismatch(f, dst2.resolve(name))).as(name + " copied server to server").isEqualTo(-1L);
            }
            try (var names = Files.list(dst)) {
                assertThat(names.map(p -> p.getFileName().toString())).containsExactlyInAnyOrder(big, small);
            }

            Path accented = file(srcDir, "déjà vu.bin", 4096, 43);
            Path decoy = dst.resolve("dj vu.bin"); // what the server makes of the name
            Files.writeString(decoy, "someone else's file");
            Files.setPosixFilePermissions(decoy, java.nio.file.attribute.PosixFilePermissions.fromString("rw-rw-rw-"));
            FileCopy c = new FileCopy("accented", accented.toUri(), FileUrls.under(a.url(dst), "déjà vu.bin"), 4096, adler(accented));
            assertThatThrownBy(() -> mover.submit(List.of(c)).result(c).get(30, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class)
                    .cause().isInstanceOfSatisfying(TransferFailure.class, f -> {
                        assertThat(f.kind()).isEqualTo(TransferFailure.Kind.BAD_REQUEST);
                        assertThat(f.getMessage()).contains("non-ASCII", "gsiftp://");
                    });
            assertThat(Files.readString(decoy)).isEqualTo("someone else's file");
            assertThat(dst.resolve("déjà vu.bin")).doesNotExist();
        }
    }

    /**
     * A destination without ADLER32: GCT answers a CKSM of an algorithm it lacks "500 Unknown checksum algorithm
     * requested.", made to happen here by a relay in front of the real server that asks it for "ADLER31" and
     * leaves ADLER32 out of the algorithms its FEAT lists. The file is sent once and fails at once, saying what
     * the destination lacks; it used to be a retryable PROTOCOL error, the whole file sent max-attempts times.
     * A small file (verified by the server: SCKS before the STOR) is sent without SCKS to a server whose FEAT
     * lacks ADLER32: GCT takes an SCKS of an unknown algorithm and then never answers the STOR, so it used to
     * stall, be aborted by the watchdog and be sent again until its attempts ran out.
     */
    @Test
    void aDestinationWithoutAdler32FailsTheFileAfterOneSend() throws Exception {
        Path src = file(root.resolve("src-noadler"), "n.bin", 3 << 20, 51);
        Path small = file(root.resolve("src-noadler"), "s.bin", 64 << 10, 52);
        Path dst = destDir("dst-noadler");
        List<String> retried = new java.util.concurrent.CopyOnWriteArrayList<>();
        TransferListener retries = new TransferListener() {
            @Override
            public void retrying(FileCopy copy, TransferFailure failure) {
                retried.add(failure.getMessage());
            }
        };
        MoverSettings cksmAfter = fast().withServerVerifyMaxBytes(0); // 4 attempts allowed
        MoverSettings[] ways = {cksmAfter, cksmAfter.withChunking(64L << 20, 1L << 20, 0), fast()};
        Path[] files = {src, src, small};
        long[] puts = {1, 3, 1}; // 3 MiB as ranges of 1 MiB
        try (CksmRelay relay = new CksmRelay(a.port)) {
            for (int i = 0; i < ways.length; i++) {
                relay.commands.clear();
                try (Mover mover = Movers.gridFtp(ways[i], retries)) {
                    FileCopy c = copy(files[i], "ftp://127.0.0.1:" + relay.port() + dst.toAbsolutePath(), adler(files[i]));
                    int way = i;
                    assertThatThrownBy(() -> mover.submit(List.of(c)).result(c).get(60, TimeUnit.SECONDS))
                            .isInstanceOf(ExecutionException.class)
                            .cause().isInstanceOfSatisfying(TransferFailure.class, f -> {
                                assertThat(f.kind()).as("way %d", way).isEqualTo(TransferFailure.Kind.UNSUPPORTED);
                                assertThat(f.attempts()).isEqualTo(1);
                                assertThat(f.getMessage()).contains("destination 127.0.0.1:" + relay.port()
                                        + " does not support ADLER32 checksums (CKSM): Unknown checksum algorithm requested.");
                            });
                }
                long sent = relay.commands.stream().filter(l -> l.startsWith("STOR ") || l.startsWith("ESTO ")).count();
                assertThat(sent).as("way %d: sent once", i).isEqualTo(puts[i]);
                assertThat(relay.commands).as("way %d", i).anyMatch(l -> l.startsWith("CKSM ADLER31 "));
                assertThat(relay.commands).as("way %d", i).noneMatch(l -> l.startsWith("SCKS "));
            }
        }
        assertThat(retried).isEmpty();
    }

    /**
     * Relays control channels to a server, asking it for the checksum algorithm ADLER31 where ADLER32 was asked
     * (CKSM and SCKS), and leaving ADLER32 out of the algorithms its FEAT lists: a server without ADLER32.
     */
    static final class CksmRelay implements AutoCloseable {
        final java.net.ServerSocket listener = new java.net.ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress());
        final List<String> commands = new java.util.concurrent.CopyOnWriteArrayList<>();
        final List<java.net.Socket> open = new java.util.concurrent.CopyOnWriteArrayList<>();

        CksmRelay(int serverPort) throws Exception {
            Thread.ofVirtual().start(() -> {
                try {
                    while (true) {
                        java.net.Socket client = listener.accept();
                        java.net.Socket server = new java.net.Socket("127.0.0.1", serverPort);
                        open.add(client);
                        open.add(server);
                        Thread.ofVirtual().start(() -> replies(server, client));
                        Thread.ofVirtual().start(() -> commands(client, server));
                    }
                } catch (Exception closed) {
                    // the relay was closed
                }
            });
        }

        int port() {
            return listener.getLocalPort();
        }

        private static void replies(java.net.Socket from, java.net.Socket to) {
            var latin1 = java.nio.charset.StandardCharsets.ISO_8859_1;
            try (var in = new java.io.BufferedReader(new java.io.InputStreamReader(from.getInputStream(), latin1))) {
                var out = to.getOutputStream();
                for (String line; (line = in.readLine()) != null; ) {
                    // FEAT's " CKSM MD5:10;ADLER32:10;SHA1:10;..." without ADLER32
                    String sent = line.startsWith(" CKSM ") ? line.replaceAll("ADLER32(:\\d+)?;?", "") : line;
                    out.write((sent + "\r\n").getBytes(latin1));
                    out.flush();
                }
            } catch (Exception closed) {
                // either end went away
            } finally {
                close(from);
                close(to);
            }
        }

        private void commands(java.net.Socket client, java.net.Socket server) {
            var latin1 = java.nio.charset.StandardCharsets.ISO_8859_1;
            try (var in = new java.io.BufferedReader(new java.io.InputStreamReader(client.getInputStream(), latin1))) {
                var out = server.getOutputStream();
                for (String line; (line = in.readLine()) != null; ) {
                    String sent = line.startsWith("CKSM ADLER32 ") ? "CKSM ADLER31 " + line.substring(13)
                            : line.startsWith("SCKS ADLER32 ") ? "SCKS ADLER31 " + line.substring(13) : line;
                    commands.add(sent);
                    out.write((sent + "\r\n").getBytes(latin1));
                    out.flush();
                }
            } catch (Exception closed) {
                // either end went away
            } finally {
                close(client);
                close(server);
            }
        }

        private static void close(java.io.Closeable c) {
            try {
                c.close();
            } catch (Exception ignored) {
                // already closed
            }
        }

        @Override
        public void close() throws Exception {
            listener.close();
            for (var s : open) close(s);
        }
    }

    static void assertFailure(CopyBatch batch, FileCopy c, TransferFailure.Kind kind) throws Exception {
        try {
            batch.result(c).get(20, TimeUnit.SECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            GridFtpServer.dumpThreads("/tmp/stagehand-hang.txt"); // for diagnosis; the assertion below fails
        } catch (ExecutionException expected) {
            // asserted below
        }
        assertThatThrownBy(() -> batch.result(c).get(20, TimeUnit.SECONDS))
                .cause().isInstanceOfSatisfying(TransferFailure.class, f -> {
                    assertThat(f.kind()).isEqualTo(kind);
                    assertThat(f.attempts()).isEqualTo(1);
                });
    }
}
