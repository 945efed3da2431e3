package dev.stagehand.transfer.gridftp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import dev.stagehand.transfer.FileCopy;
import dev.stagehand.transfer.LinkStatus;
import dev.stagehand.transfer.MoverSettings;
import dev.stagehand.transfer.TransferFailure;
import dev.stagehand.transfer.TransferFailure.Kind;
import java.io.IOException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A put's local source that is bad (gone before the put, off the catalog's sum, a read that hangs) is the
 * source's failure: the destination host stays in rotation and the link's success rate (the adaptive
 * concurrency's input) is not lowered; a destination's own failure still lowers it.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class LocalSourceBlameTest {

    /** Adaptive, its window looked at every 50 ms, so a failure counted shows in the link's success rate at once. */
    private static MoverSettings settings(Duration stall) {
        return MoverSettings.defaults().withStreams(1, 1, true).withAdaptive(1, 2, Duration.ofMillis(50))
                .withRetry(stall, 2, Duration.ofMillis(20), Duration.ofSeconds(60));
    }

    private record Outcome(TransferFailure failure, LinkStatus link) {}

    /** How the movers {@link #run} makes open local files (a test's double: a file whose reads hang). */
    private LocalReadException.Opener opener = LocalReadException.READ;

    /**
     * Submits the copy {@code copy} makes of the destination base URL (two hosts, fresh servers set up by
     * {@code setUp}) and returns its failure and its link a few optimizer windows later (long enough for a
     * counted failure to have lowered the success rate). {@code jglobus}: puts through jglobus, not the own sender.
     */
    private Outcome run(MoverSettings s, boolean jglobus, java.util.function.Consumer<FakeGridFtpServer> setUp,
                        java.util.function.Function<String, FileCopy> copy) throws Exception {
        return run(s, jglobus, setUp, copy, base -> List.of());
    }

    /**
     * As above, {@code before} sent first (bigger than {@code copy}, submitted with it: the link's one worker
     * claims them all and sends the biggest first); they are to succeed.
     */
    private Outcome run(MoverSettings s, boolean jglobus, java.util.function.Consumer<FakeGridFtpServer> setUp,
                        java.util.function.Function<String, FileCopy> copy,
                        java.util.function.Function<String, List<FileCopy>> before) throws Exception {
        try (FakeGridFtpServer d1 = new FakeGridFtpServer(); FakeGridFtpServer d2 = new FakeGridFtpServer();
             GridFtpMover mover = new GridFtpMover(s, null, opener, jglobus)) {
            for (FakeGridFtpServer d : List.of(d1, d2)) {
                d.sizeReply = "550 /d/f: No such file or directory."; // nothing there
                setUp.accept(d);
            }
            String base = "ftp://127.0.0.1:" + d1.port() + ",127.0.0.1:" + d2.port();
            FileCopy c = copy.apply(base);
            List<FileCopy> first = before.apply(base);
            var batch = mover.submit(java.util.stream.Stream.concat(first.stream(), java.util.stream.Stream.of(c)).toList());
            for (FileCopy b : first) batch.result(b).get(30, TimeUnit.SECONDS);
            Throwable failure;
            try {
                batch.result(c).get(30, TimeUnit.SECONDS);
                failure = null;
            } catch (ExecutionException e) {
                failure = e.getCause();
            }
            assertThat(failure).isInstanceOf(TransferFailure.class);
            Thread.sleep(400);
            return new Outcome((TransferFailure) failure, mover.links().getFirst());
        }
    }

    /**
     * {@code o} is the source's stall: one attempt, failed as a blocked read of {@code local}, not named on a
     * destination host, within about two stall limits of 1 s from {@code t0} (nanoTime), nothing counted on the link.
     */
    private static void sourcesStall(Outcome o, Path local, String way, long t0) {
        long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertThat(o.failure().kind()).as(way).isEqualTo(Kind.BAD_REQUEST);
        assertThat(o.failure().attempts()).as(way).isEqualTo(1);
        assertThat(o.failure().getMessage()).as(way).contains("cannot read local file " + local, "blocked")
                .doesNotContain("(127.0.0.1:");
        assertThat(millis).as(way + ": ms to the failure (stall limit 1 s, 400 ms waited after it)").isLessThan(3_000);
        sourcesAlone(o, way);
    }

    private static void sourcesAlone(Outcome o, String way) {
        assertThat(o.link().hostsOut()).as(way + ": hosts out").isEmpty();
        assertThat(o.link().successRate()).as(way + ": the link's success rate").isEqualTo(1.0);
    }

    @Test
    void aDestinationsRefusalLowersTheLinksSuccessRate(@TempDir Path dir) throws Exception {
        // the control: what the tests below look at does show a failure counted against the link
        Path local = dir.resolve("f");
        Files.write(local, new byte[4096]);
        Outcome o = run(settings(Duration.ofSeconds(5)), false, d -> {
            d.storFailureAfterMillis = 1;
            d.storFailure = "553 /d/f: Permission denied";
        }, base -> new FileCopy("1", local.toUri(), URI.create(base + "/d/f"), 4096, null));
        assertThat(o.failure().kind()).isEqualTo(Kind.PERMISSION_DENIED);
        assertThat(o.link().successRate()).isEqualTo(0.0);
    }

    /**
     * The local source goes bad after the batch was prepared (gone, cut short, a directory in its place; here
     * while the file sent before it logs in), found by the check before the put: a failed read of the local file
     * like one while it is sent. Before, this check's failure lowered the link's success rate (a read's failure
     * did not).
     */
    @Test
    void aLocalSourceFoundBadBeforeItsPutIsNotCountedAgainstTheLink(@TempDir Path dir) throws Exception {
        Path good = dir.resolve("good");
        Files.write(good, new byte[8192]);
        for (String bad : List.of("gone", "short", "a directory")) {
            Path local = dir.resolve(bad.replace(' ', '-'));
            Files.write(local, new byte[4096]);
            Outcome o = run(settings(Duration.ofSeconds(5)), false, d -> d.heard = line -> {
                if (!line.toUpperCase(java.util.Locale.ROOT).startsWith("PASS")) return;
                try {
                    if (bad.equals("short")) Files.write(local, new byte[100]);
                    else if (Files.deleteIfExists(local) && bad.equals("a directory")) Files.createDirectory(local);
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            }, base -> new FileCopy("1", local.toUri(), URI.create(base + "/d/f"), 4096, null),
                    base -> List.of(new FileCopy("0", good.toUri(), URI.create(base + "/d/g"), 8192, null)));
            assertThat(o.failure().kind()).as(bad).isEqualTo(Kind.BAD_REQUEST);
            assertThat(o.failure().attempts()).as(bad).isEqualTo(1);
            assertThat(o.failure().getMessage()).as(bad).contains("cannot read local file " + local);
            if (bad.equals("short")) assertThat(o.failure().getMessage()).contains("is 100 bytes, expected 4096");
            assertThat(o.failure().getMessage()).as(bad).doesNotContain("(127.0.0.1:"); // not put on a destination host
            sourcesAlone(o, bad);
        }
    }

    /**
     * The local file's own bytes are off the catalog's Adler32 (a cached copy rotted on disk), found as it is
     * read for the server's SCKS (jglobus, a small file), found from the ranges' sums of a split file (jglobus),
     * and found after the server's SCKS check failed (own sender). Before, each lowered the link's success rate.
     */
    @Test
    void aLocalSourceOffTheCatalogsSumIsNotCountedAgainstTheLink(@TempDir Path dir) throws Exception {
        byte[] bytes = new byte[4 << 20];
        new java.util.Random(7).nextBytes(bytes);
        Path local = dir.resolve("rotted");
        Files.write(local, bytes);
        long wrong = Link.adler32(local) ^ 0x40;
        Path small = dir.resolve("small");
        Files.write(small, java.util.Arrays.copyOf(bytes, 64 << 10));
        long wrongSmall = Link.adler32(small) ^ 0x40;
        MoverSettings split = settings(Duration.ofSeconds(5)).withChunking(1 << 20, 1 << 20, 0);
        for (String way : List.of("jglobus, read for SCKS", "jglobus, split", "own sender, SCKS refused")) {
            boolean jglobus = way.startsWith("jglobus");
            Outcome o = switch (way) {
                case "jglobus, read for SCKS" -> run(settings(Duration.ofSeconds(5)), true, d -> {},
                        base -> new FileCopy("1", small.toUri(), URI.create(base + "/d/f"), 64 << 10, wrongSmall));
                case "jglobus, split" -> run(split, true, d -> {},
                        base -> new FileCopy("1", local.toUri(), URI.create(base + "/d/f"), 4 << 20, wrong));
                default -> run(settings(Duration.ofSeconds(5)), false, d -> {
                    d.storFailureAfterMillis = 1;
                    d.storFailure = "451 INCORRECT_CHECKSUM"; // the server's SCKS check
                }, base -> new FileCopy("1", small.toUri(), URI.create(base + "/d/f"), 64 << 10, wrongSmall));
            };
            assertThat(o.failure().kind()).as(way).isEqualTo(Kind.SOURCE_CHECKSUM_MISMATCH);
            assertThat(o.failure().attempts()).as(way).isEqualTo(1);
            assertThat(jglobus || o.failure().getMessage().contains("reads as ADLER32")).as(way).isTrue();
            sourcesAlone(o, way);
        }
    }

    /**
     * The destination's CKSM after the put (done off the attempt's thread, on a checker connection) found the file
     * bad: a CKSM never answered (a stall), a connection failure, the destination's bytes off the catalog's sum.
     * Each is the destination's, counted as the same failure found inline is: the link's success rate lowered, the
     * host out of rotation for a stall or a connection failure. Before, none of them was counted (and the put's
     * attempt counted as a success).
     */
    @Test
    void aDestinationsChecksumFailureFoundAfterThePutIsCountedAgainstTheLink(@TempDir Path dir) throws Exception {
        Path local = dir.resolve("f");
        byte[] bytes = new byte[64 << 10];
        new java.util.Random(11).nextBytes(bytes);
        Files.write(local, bytes);
        long adler = Link.adler32(local);
        for (String way : List.of("CKSM stalls", "CKSM's connection fails", "CKSM lies")) {
            // CKSM after the put (no SCKS), the catalog's sum known: the file is not summed here
            Outcome o = run(settings(Duration.ofSeconds(1)).withServerVerifyMaxBytes(0), false, d -> {
                switch (way) {
                    case "CKSM stalls" -> d.cksmDelayMillis = 20_000;
                    case "CKSM's connection fails" -> d.cksmRefusal = "421 Service not available, closing control connection.";
                    default -> d.cksm = String.format("%08x", adler ^ 0x40);
                }
            }, base -> new FileCopy("1", local.toUri(), URI.create(base + "/d/f"), bytes.length, adler));
            switch (way) {
                case "CKSM stalls" -> {
                    assertThat(o.failure().kind()).as(way).isEqualTo(Kind.STALL);
                    assertThat(o.failure().getMessage()).as(way).contains("no CKSM reply in 1 s from 127.0.0.1:");
                    assertThat(o.link().hostsOut()).as(way + ": hosts out").isNotEmpty();
                }
                case "CKSM's connection fails" -> {
                    assertThat(o.failure().kind()).as(way).isEqualTo(Kind.CONNECTION);
                    assertThat(o.link().hostsOut()).as(way + ": hosts out").isNotEmpty();
                }
                default -> {
                    assertThat(o.failure().kind()).as(way).isEqualTo(Kind.CHECKSUM_MISMATCH);
                    assertThat(o.link().hostsOut()).as(way + ": hosts out").isEmpty(); // the host's bytes, not its connection
                }
            }
            assertThat(o.failure().attempts()).as(way).isEqualTo(2); // the whole file sent again once
            assertThat(o.link().successRate()).as(way + ": the link's success rate").isEqualTo(0.0);
        }
    }

    /**
     * The same check after the put finding the local source's own bytes off the catalog's sum (read once after the
     * destination's sum differed): the source's failure, not counted against the link.
     */
    @Test
    void aLocalSourceFoundOffItsSumByTheCheckAfterThePutIsNotCountedAgainstTheLink(@TempDir Path dir) throws Exception {
        Path local = dir.resolve("rotted");
        byte[] bytes = new byte[64 << 10];
        new java.util.Random(13).nextBytes(bytes);
        Files.write(local, bytes);
        long wrong = Link.adler32(local) ^ 0x40;
        Outcome o = run(settings(Duration.ofSeconds(5)).withServerVerifyMaxBytes(0), false,
                d -> d.cksm = String.format("%08x", wrong ^ 0x1), // what the destination wrote: not the catalog's
                base -> new FileCopy("1", local.toUri(), URI.create(base + "/d/f"), bytes.length, wrong));
        assertThat(o.failure().kind()).isEqualTo(Kind.SOURCE_CHECKSUM_MISMATCH);
        assertThat(o.failure().getMessage()).contains("reads as ADLER32");
        sourcesAlone(o, "CKSM after the put");
    }

    /**
     * A read of the local file that hangs (a stuck NFS mount: read() never returns, not even when interrupted or
     * its channel closed, whose close waits for it as FileChannel's does), through the own sender and jglobus:
     * the stall is the source's, a failed read of the local file, and the destination host stays in rotation.
     * Before, the stall was put on the destination host (out of rotation, retried), and the put's attempt hung in
     * the channel's close.
     */
    @Test
    void aLocalReadThatHangsIsTheSourcesStallNotTheDestinationHosts(@TempDir Path dir) throws Exception {
        for (boolean jglobus : new boolean[] {false, true}) {
            String way = jglobus ? "jglobus" : "own sender";
            Path local = dir.resolve(jglobus ? "j" : "d");
            Files.write(local, new byte[64 << 10]);
            CountDownLatch release = new CountDownLatch(1);
            opener = file -> new HangingChannel(FileChannel.open(file), release);
            try {
                // the catalog's sum given, CKSM after the put: the file is read only as it is sent; the server
                // waits for the data (perf markers, nothing new), as a real one does
                Outcome o = run(settings(Duration.ofSeconds(1)).withServerVerifyMaxBytes(0), jglobus, d -> d.waitingMarkerMillis = 200,
                        base -> new FileCopy("1", local.toUri(), URI.create(base + "/d/f"), 64 << 10, 1L));
                assertThat(o.failure().kind()).as(way).isEqualTo(Kind.BAD_REQUEST);
                assertThat(o.failure().attempts()).as(way).isEqualTo(1);
                assertThat(o.failure().getMessage()).as(way).contains("cannot read local file " + local, "blocked")
                        .doesNotContain("(127.0.0.1:");
                sourcesAlone(o, way);
            } finally {
                release.countDown();
            }
        }
    }

    /**
     * A read of the local file made on the attempt's own thread before the put hangs: the small file's preload for
     * the server's SCKS (jglobus), its Adler32 read for SCKS (own sender), its Adler32 read to compare with a file
     * of its size at the destination (the look before the first write). The watchdog's abort ends the attempt (the
     * read is left behind), as the source's failure, within about two stall limits. Before, the attempt stayed in
     * the read (an interrupt does not end a read in a hung file system) and the copy never ended.
     */
    @Test
    void aLocalReadThatHangsBeforeThePutIsTheSourcesStall(@TempDir Path dir) throws Exception {
        for (String way : List.of("jglobus, preload for SCKS", "own sender, sum for SCKS", "sum for the look at the destination")) {
            boolean jglobus = way.startsWith("jglobus");
            boolean look = way.endsWith("destination");
            Path local = dir.resolve(way.substring(0, 3));
            Files.write(local, new byte[64 << 10]);
            CountDownLatch release = new CountDownLatch(1);
            opener = file -> new HangingChannel(FileChannel.open(file), release);
            try {
                long t0 = System.nanoTime();
                // no catalog sum: the file is read here for the server's SCKS before its STOR, or (the look) to
                // compare with the destination's CKSM of the file of its size there
                Outcome o = run(settings(Duration.ofSeconds(1)), jglobus, d -> {
                    if (look) d.sizeReply = "213 " + (64 << 10);
                }, base -> new FileCopy("1", local.toUri(), URI.create(base + "/d/f"), 64 << 10, null,
                        look ? FileCopy.Existing.KEEP : FileCopy.Existing.WRITE, () -> {}));
                sourcesStall(o, local, way, t0);
            } finally {
                release.countDown();
            }
        }
    }

    /**
     * The local source's open before the put (the check that it is there, of its size, before the destination is
     * logged in to) hangs, as an open or stat does in a hung NFS mount: the watchdog's abort ends the attempt (the
     * open is left behind), as the source's failure, within about two stall limits. Before, the attempt stayed in
     * the open for ever.
     */
    @Test
    void aLocalSourceWhoseOpenHangsBeforeThePutIsTheSourcesStall(@TempDir Path dir) throws Exception {
        Path local = dir.resolve("f");
        Files.write(local, new byte[64 << 10]);
        CountDownLatch release = new CountDownLatch(1);
        opener = file -> {
            awaitUninterruptibly(release);
            return FileChannel.open(file);
        };
        try {
            long t0 = System.nanoTime();
            Outcome o = assertTimeoutPreemptively(Duration.ofSeconds(60), () -> run(settings(Duration.ofSeconds(1)), false, d -> {},
                    base -> new FileCopy("1", local.toUri(), URI.create(base + "/d/f"), 64 << 10, 1L)));
            sourcesStall(o, local, "open before the put", t0);
        } finally {
            release.countDown();
        }
    }

    /**
     * The destination's sum differed from the catalog's (its SCKS check during the put, own sender; its CKSM after
     * the put), and the local source, read again to tell whose fault that is, hangs (a hung NFS mount): the
     * watchdog's abort ends that read's wait, as the source's failure (the destination host stays in rotation),
     * within about two stall limits. Before, the attempt (or the check after the put) stayed in the read for ever.
     */
    @Test
    void aLocalSourceWhoseReadAfterAChecksumMismatchHangsIsTheSourcesStall(@TempDir Path dir) throws Exception {
        byte[] bytes = new byte[64 << 10];
        new java.util.Random(17).nextBytes(bytes);
        for (String way : List.of("own sender, SCKS refused", "CKSM after the put")) {
            boolean after = way.startsWith("CKSM");
            Path local = dir.resolve(after ? "a" : "s");
            Files.write(local, bytes);
            long adler = Link.adler32(local); // the catalog's sum is right: the destination's differs
            CountDownLatch release = new CountDownLatch(1);
            var stored = new java.util.concurrent.atomic.AtomicBoolean();
            // the put's own channel is opened before its STOR; a file opened after it (to read it again) hangs
            opener = file -> stored.get() ? new HangingChannel(FileChannel.open(file), release) : FileChannel.open(file);
            try {
                long t0 = System.nanoTime();
                MoverSettings s = after ? settings(Duration.ofSeconds(1)).withServerVerifyMaxBytes(0) : settings(Duration.ofSeconds(1));
                Outcome o = assertTimeoutPreemptively(Duration.ofSeconds(60), () -> run(s, false, d -> {
                    d.heard = line -> {
                        if (line.toUpperCase(java.util.Locale.ROOT).startsWith("STOR")) stored.set(true);
                    };
                    if (after) {
                        d.cksm = String.format("%08x", adler ^ 0x1);
                    } else {
                        d.storFailureAfterMillis = 1;
                        d.storFailure = "451 INCORRECT_CHECKSUM"; // the server's SCKS check
                    }
                }, base -> new FileCopy("1", local.toUri(), URI.create(base + "/d/f"), bytes.length, adler)));
                sourcesStall(o, local, way, t0);
            } finally {
                release.countDown();
            }
        }
    }

    private static void awaitUninterruptibly(CountDownLatch latch) {
        boolean interrupted = false;
        while (true) {
            try {
                latch.await();
                break;
            } catch (InterruptedException e) {
                interrupted = true; // as an open in a hung file system: not interruptible
            }
        }
        if (interrupted) Thread.currentThread().interrupt();
    }

    /**
     * A local file whose reads block until {@code release}, interrupts and close notwithstanding (a read in a hung
     * file system); its close waits for the reads in it to leave, as FileChannel's does.
     */
    private static final class HangingChannel extends FileChannel {
        private final FileChannel real;
        private final CountDownLatch release;
        private int reading; // guarded by this

        HangingChannel(FileChannel real, CountDownLatch release) {
            this.real = real;
            this.release = release;
        }

        @Override
        public int read(ByteBuffer dst, long position) throws IOException {
            synchronized (this) {
                reading++;
            }
            try {
                boolean interrupted = false;
                while (true) {
                    try {
                        release.await();
                        break;
                    } catch (InterruptedException e) {
                        interrupted = true; // not interruptible
                    }
                }
                if (interrupted) Thread.currentThread().interrupt();
                return real.read(dst, position);
            } finally {
                synchronized (this) {
                    reading--;
                    notifyAll();
                }
            }
        }

        @Override
        public int read(ByteBuffer dst) throws IOException {
            return read(dst, real.position());
        }

        @Override
        protected void implCloseChannel() throws IOException {
            synchronized (this) {
                boolean interrupted = false;
                while (reading > 0) {
                    try {
                        wait();
                    } catch (InterruptedException e) {
                        interrupted = true;
                    }
                }
                if (interrupted) Thread.currentThread().interrupt();
            }
            real.close();
        }

        @Override
        public long read(ByteBuffer[] dsts, int offset, int length) {
            throw new UnsupportedOperationException();
        }

        @Override
        public int write(ByteBuffer src) {
            throw new UnsupportedOperationException();
        }

        @Override
        public long write(ByteBuffer[] srcs, int offset, int length) {
            throw new UnsupportedOperationException();
        }

        @Override
        public int write(ByteBuffer src, long position) {
            throw new UnsupportedOperationException();
        }

        @Override
        public long position() throws IOException {
            return real.position();
        }

        @Override
        public FileChannel position(long newPosition) throws IOException {
            real.position(newPosition);
            return this;
        }

        @Override
        public long size() throws IOException {
            return real.size();
        }

        @Override
        public FileChannel truncate(long size) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void force(boolean metaData) {}

        @Override
        public long transferTo(long position, long count, WritableByteChannel target) {
            throw new UnsupportedOperationException();
        }

        @Override
        public long transferFrom(ReadableByteChannel src, long position, long count) {
            throw new UnsupportedOperationException();
        }

        @Override
        public MappedByteBuffer map(MapMode mode, long position, long size) {
            throw new UnsupportedOperationException();
        }

        @Override
        public FileLock lock(long position, long size, boolean shared) {
            throw new UnsupportedOperationException();
        }

        @Override
        public FileLock tryLock(long position, long size, boolean shared) {
            throw new UnsupportedOperationException();
        }
    }
}
