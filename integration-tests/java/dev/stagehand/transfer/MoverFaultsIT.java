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
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Hung and dead servers: stalls are detected by the watchdog and files finish elsewhere; dead hosts leave rotation. */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class MoverFaultsIT {

    GridFtpScratch scratch;
    Path root;
    GridFtpServer a;
    GridFtpServer b;
    final List<TransferFailure> retries = new CopyOnWriteArrayList<>();
    final TransferListener recorder = new TransferListener() {
        @Override
        public void retrying(FileCopy copy, TransferFailure failure) {
            retries.add(failure);
        }
    };

    @BeforeEach
    void servers() throws Exception {
        scratch = GridFtpScratch.create("stagehand-gridftp-faults");
        root = scratch.root;
        GridFtpServer.openUp(root.resolve("dst"));
        a = scratch.anonymous("a");
        b = scratch.anonymous("b");
    }

    @AfterEach
    void stop() throws Exception {
        scratch.close();
    }

    MoverSettings settings(Duration stall) {
        return MoverSettings.defaults().withStreams(2, 2, false)
                .withRetry(stall, 4, Duration.ofMillis(100), Duration.ofSeconds(60));
    }

    List<FileCopy> files(String prefix, int n, String hosts) throws Exception {
        List<FileCopy> copies = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            Path f = file(root.resolve("src"), prefix + i, 3 << 20, i + prefix.hashCode());
            copies.add(new FileCopy(prefix + i, f.toUri(), URI.create("ftp://" + hosts + root.resolve("dst") + "/" + prefix + i),
                    Files.size(f), adler(f)));
        }
        return copies;
    }

    String both() {
        return "127.0.0.1:" + a.port + ",127.0.0.1:" + b.port;
    }

    @Test
    void stalledServerIsDetectedWithinTheTimeoutAndTheFilesFinishOnTheOtherHost() throws Exception {
        try (Mover mover = Movers.gridFtp(settings(Duration.ofSeconds(2)), recorder)) {
            List<FileCopy> warm = files("warm", 4, both());
            mover.submit(warm).done().get(30, TimeUnit.SECONDS);
            assertThat(a.children()).isNotEmpty();
            for (long pid : a.children()) GridFtpServer.signal(pid, "STOP"); // host a hangs mid-session
            try {
                List<FileCopy> copies = files("after", 6, both());
                long start = System.nanoTime();
                CopyBatch batch = mover.submit(copies);
                try {
                    batch.done().get(30, TimeUnit.SECONDS);
                } catch (java.util.concurrent.TimeoutException e) {
                    GridFtpServer.dumpThreads("/tmp/stagehand-stall-hang.txt");
                    throw e;
                }
                double seconds = (System.nanoTime() - start) / 1e9;
                for (FileCopy c : copies) {
                    CopyResult r = batch.result(c).get();
                    assertThat(r.adler32()).isEqualTo(c.adler32());
                    assertThat(Files.mismatch(Path.of(c.source()), root.resolve("dst").resolve(c.id()))).isEqualTo(-1L);
                }
                assertThat(retries).extracting(TransferFailure::kind).contains(TransferFailure.Kind.STALL);
                assertThat(seconds).as("stall limit 2 s, then the retry").isLessThan(15);
                assertThat(mover.links().getFirst().hostsOut()).containsExactly("127.0.0.1:" + a.port);
            } finally {
                for (long pid : a.children()) GridFtpServer.signal(pid, "CONT");
            }
        }
    }

    @Test
    void stalledSingleHostCompletesAfterResume() throws Exception {
        String only = "127.0.0.1:" + a.port;
        try (Mover mover = Movers.gridFtp(settings(Duration.ofSeconds(2)).withStreams(2, 1, false), recorder)) {
            mover.submit(files("w", 1, only)).done().get(30, TimeUnit.SECONDS);
            List<Long> stopped = a.children();
            for (long pid : stopped) GridFtpServer.signal(pid, "STOP");
            List<FileCopy> copies = files("s", 2, only);
            CopyBatch batch = mover.submit(copies);
            Thread.sleep(3000);
            for (long pid : stopped) GridFtpServer.signal(pid, "CONT");
            batch.done().get(30, TimeUnit.SECONDS);
            for (FileCopy c : copies) assertThat(batch.result(c).get().adler32()).isEqualTo(c.adler32());
            assertThat(retries).extracting(TransferFailure::kind).contains(TransferFailure.Kind.STALL);
        }
    }

    @Test
    void stalledBigFileResumesFromTheServersRestartMarkers() throws Exception {
        String only = "127.0.0.1:" + a.port;
        int size = 160 << 20;
        Path f = file(root.resolve("src"), "resume", size, 11);
        FileCopy c = new FileCopy("resume", f.toUri(), URI.create("ftp://" + only + root.resolve("dst") + "/resume"),
                size, adler(f));
        // a throttled source (~20 MB/s): GCT sends its restart markers every 5 s, so part of the file is
        // acknowledged before the server hangs
        ThrottledSource slow = new ThrottledSource(20L << 20);
        MoverSettings s = settings(Duration.ofSeconds(2)).withStreams(2, 1, false).withChunking(64L << 20, 0, 0);
        List<Long> stopped = new ArrayList<>();
        try (Mover mover = Movers.gridFtp(s, slow)) {
            CopyBatch batch = mover.submit(List.of(c));
            while (slow.sinceFirstByte() < 6_000_000_000L) Thread.sleep(20);
            stopped.addAll(a.children());
            for (long pid : stopped) GridFtpServer.signal(pid, "STOP"); // the server hangs mid-file
            long atStop = slow.sent.get();
            assertThat(atStop).as("stopped mid-file").isLessThan(size);
            CopyResult r;
            try {
                r = batch.result(c).get(40, TimeUnit.SECONDS);
            } catch (java.util.concurrent.TimeoutException e) {
                GridFtpServer.dumpThreads("/tmp/stagehand-resume-hang.txt");
                throw e;
            }
            assertThat(r.attempts()).isGreaterThan(1);
            assertThat(slow.retries).extracting(TransferFailure::kind).contains(TransferFailure.Kind.STALL);
            assertThat(r.adler32()).isEqualTo(adler(f));
            assertThat(Files.mismatch(f, root.resolve("dst").resolve("resume"))).isEqualTo(-1L);
            long resent = slow.sent.get() - size;
            // without resume the whole 160 MiB go again; with it, what was sent after the last marker
            assertThat(resent).as("bytes sent twice").isPositive().isLessThan(size / 4);
        } finally {
            for (long pid : stopped) GridFtpServer.signal(pid, "CONT");
        }
    }

    @Test
    void killedServerLeavesRotationAndTheOtherHostTakesEverything() throws Exception {
        try (Mover mover = Movers.gridFtp(settings(Duration.ofSeconds(5)), recorder)) {
            mover.submit(files("warm", 4, both())).done().get(30, TimeUnit.SECONDS);
            a.kill();
            List<FileCopy> copies = files("k", 10, both());
            CopyBatch batch = mover.submit(copies);
            batch.done().get(40, TimeUnit.SECONDS);
            for (FileCopy c : copies) {
                CopyResult r = batch.result(c).get();
                assertThat(r.host()).isEqualTo("127.0.0.1:" + b.port);
                assertThat(r.adler32()).isEqualTo(c.adler32());
            }
            assertThat(mover.links().getFirst().hostsOut()).containsExactly("127.0.0.1:" + a.port);
        }
    }

    /**
     * A destination's host list with its first host down: directories are made through the other host. Before,
     * they were made on the first host only and failed (replication counted a failed attempt per file at a site
     * whose other door was up).
     */
    @Test
    void directoriesAreMadeThroughAnotherHostWhenTheFirstIsDown() throws Exception {
        String hosts = "127.0.0.1:" + a.port + ",127.0.0.1:" + b.port;
        a.kill();
        Path made = root.resolve("dst").resolve("made/deeper");
        try (Mover mover = Movers.gridFtp(settings(Duration.ofSeconds(5)), recorder)) {
            mover.makeDirectories(URI.create("ftp://" + hosts + made));
            assertThat(made).isDirectory();
        }
    }

    /** As above for deletes (partial files, unwanted replicas): before, they failed and the files stayed. */
    @Test
    void filesAreDeletedThroughAnotherHostWhenTheFirstIsDown() throws Exception {
        String hosts = "127.0.0.1:" + a.port + ",127.0.0.1:" + b.port;
        a.kill();
        Path doomed = root.resolve("dst").resolve("doomed.bin");
        Files.write(doomed, new byte[1000]);
        try (Mover mover = Movers.gridFtp(settings(Duration.ofSeconds(5)), recorder)) {
            assertThat(mover.delete(List.of(URI.create("ftp://" + hosts + doomed)))).isEmpty();
            assertThat(doomed).doesNotExist();
        }
    }

    /**
     * Server-to-server copies whose source is a host list with hosts down (three of four here): every file
     * comes from the host that is up, at its first attempt. Before, each worker used one source host of its
     * own: a worker on a host that was down failed every file it took (and put the failure on the destination
     * host, naming it in the error).
     */
    @Test
    void thirdPartyCopiesFromAHostListWithHostsDownComeFromTheHostThatIsUp() throws Exception {
        Path srcDir = root.resolve("tp-src");
        GridFtpServer.openUp(srcDir);
        String sources = "127.0.0.1:" + GridFtpServer.freePort() + ",127.0.0.1:" + GridFtpServer.freePort() + ",127.0.0.1:"
                + GridFtpServer.freePort() + ",127.0.0.1:" + a.port;
        List<FileCopy> copies = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            Path f = file(srcDir, "tp" + i, 1 << 20, 70 + i);
            copies.add(new FileCopy("tp" + i, URI.create("ftp://" + sources + f),
                    URI.create("ftp://127.0.0.1:" + b.port + root.resolve("dst") + "/tp" + i), Files.size(f), adler(f)));
        }
        MoverSettings s = MoverSettings.defaults().withStreams(2, 8, false) // eight workers, one file each
                .withRetry(Duration.ofSeconds(5), 1, Duration.ofMillis(100), Duration.ofSeconds(60));
        try (Mover mover = Movers.gridFtp(s, recorder)) {
            CopyBatch batch = mover.submit(copies);
            batch.done().get(60, TimeUnit.SECONDS);
            for (FileCopy c : copies) {
                assertThat(batch.result(c)).as(c.id()).succeedsWithin(Duration.ZERO)
                        .satisfies(r -> assertThat(r.adler32()).isEqualTo(c.adler32()));
                assertThat(Files.mismatch(Path.of(c.source().getPath()), root.resolve("dst").resolve(c.id()))).isEqualTo(-1L);
            }
        }
    }

    /** A 256 MiB file and a 1 MiB warm-up file on server a, to be copied third-party to b or a new server c. */
    record ThirdParty(GridFtpServer c, int size, Path f, Path w, FileCopy warm, FileCopy big) {}

    private ThirdParty thirdParty(String dir, int seed) throws Exception {
        GridFtpServer c = scratch.anonymous("c");
        Path srcDir = root.resolve(dir);
        GridFtpServer.openUp(srcDir);
        int size = 256 << 20;
        Path f = file(srcDir, "big.bin", size, seed);
        Path w = file(srcDir, "warm.bin", 1 << 20, seed + 1);
        String destinations = "ftp://127.0.0.1:" + b.port + ",127.0.0.1:" + c.port + root.resolve("dst");
        FileCopy warm = new FileCopy("warm", URI.create("ftp://127.0.0.1:" + a.port + w), URI.create(destinations + "/warm.bin"),
                Files.size(w), adler(w));
        FileCopy big = new FileCopy("big", URI.create("ftp://127.0.0.1:" + a.port + f), URI.create(destinations + "/big.bin"),
                size, adler(f));
        return new ThirdParty(c, size, f, w, warm, big);
    }

    /**
     * A third-party copy whose source stops mid-file (its server process is stopped, as a hung source host):
     * the destination keeps sending its markers every 5 s with nothing new, so the stall is the source's. It
     * used to be put on the destination host: taken out of its link's rotation and named in the error.
     */
    @Test
    @Timeout(value = 150, unit = TimeUnit.SECONDS)
    void aThirdPartyCopyWhoseSourceStopsMidFileIsPutOnTheSourceNotOnTheDestinationHost() throws Exception {
        ThirdParty t = thirdParty("tps-src", 91);
        GridFtpServer c = t.c();
        int size = t.size();
        Path f = t.f(), w = t.w();
        FileCopy warm = t.warm(), big = t.big();
        // progress of a third-party copy is its markers (every 5 s): the stall limit must be longer
        MoverSettings s = MoverSettings.defaults().withStreams(1, 1, false)
                .withRetry(Duration.ofSeconds(8), 3, Duration.ofMillis(100), Duration.ofSeconds(60));
        List<Long> stopped = new ArrayList<>();
        Process signals = new ProcessBuilder("bash", "-c", "while read s p; do kill -$s $p; done").start();
        var kill = new java.io.PrintWriter(signals.getOutputStream(), true);
        try (Mover mover = Movers.gridFtp(s, recorder)) {
            // the worker keeps its source connection: the process serving it is throttled, then stopped
            assertThat(mover.submit(List.of(warm)).result(warm).get(60, TimeUnit.SECONDS).adler32()).isEqualTo(adler(w));
            List<Long> source = a.children();
            assertThat(source).isNotEmpty();
            stopped.addAll(source);
            for (long pid : source) kill.println("STOP " + pid);
            CopyBatch batch = mover.submit(List.of(big));
            Path out = root.resolve("dst").resolve("big.bin");
            long started = 0;
            while (true) { // about 12 MiB/s for 6 s, so the destination has sent markers mid-file
                long now = System.nanoTime();
                long have = Files.exists(out) ? Files.size(out) : 0;
                if (started == 0 && have > 0) started = now;
                if (started != 0 && now - started > 6_000_000_000L) break;
                assertThat(have).as("still mid-file").isLessThan(size);
                boolean behind = started == 0 || have < (now - started) / 1_000_000_000.0 * (12 << 20);
                if (behind) for (long pid : source) kill.println("CONT " + pid);
                Thread.sleep(behind ? 10 : 100);
                for (long pid : source) kill.println("STOP " + pid);
                Thread.sleep(20);
            }
            // the source stays stopped until the watchdog gave the attempt up
            long deadline = System.nanoTime() + 30_000_000_000L;
            while (retries.isEmpty() && System.nanoTime() < deadline) Thread.sleep(50);
            assertThat(retries).as("the stall was retried").isNotEmpty();
            assertThat(mover.links()).singleElement().satisfies(l -> assertThat(l.hostsOut())
                    .as("no destination host out of rotation for the source's stall").isEmpty());
            for (long pid : source) kill.println("CONT " + pid);
            assertThat(retries.getFirst().kind()).isEqualTo(TransferFailure.Kind.STALL);
            assertThat(retries.getFirst().getMessage()).contains("from source 127.0.0.1:" + a.port)
                    .contains("was up, waiting for data");
            assertThat(batch.result(big).get(90, TimeUnit.SECONDS).adler32()).isEqualTo(adler(f));
            assertThat(Files.mismatch(f, out)).isEqualTo(-1L);
        } finally {
            for (long pid : stopped) GridFtpServer.signal(pid, "CONT");
            signals.destroy();
        }
    }

    /**
     * A third-party copy whose source's server process is killed mid-file: the source's control connection
     * drops. A connection failure of the source, named with its path; the destination host used to be taken
     * out of its link's rotation for it. The retry (a new source connection) completes the file.
     */
    @Test
    @Timeout(value = 150, unit = TimeUnit.SECONDS)
    void aThirdPartyCopyWhoseSourceConnectionDropsMidFileIsPutOnTheSource() throws Exception {
        ThirdParty t = thirdParty("tpd-src", 93);
        GridFtpServer c = t.c();
        int size = t.size();
        Path f = t.f(), w = t.w();
        FileCopy warm = t.warm(), big = t.big();
        MoverSettings s = MoverSettings.defaults().withStreams(1, 1, false)
                .withRetry(Duration.ofSeconds(8), 3, Duration.ofMillis(100), Duration.ofSeconds(60));
        List<Long> stopped = new ArrayList<>();
        try (Mover mover = Movers.gridFtp(s, recorder)) {
            // the worker keeps its source connection: the process serving it is stopped, let run a little, killed
            assertThat(mover.submit(List.of(warm)).result(warm).get(60, TimeUnit.SECONDS).adler32()).isEqualTo(adler(w));
            List<Long> source = a.children();
            assertThat(source).isNotEmpty();
            stopped.addAll(source);
            for (long pid : source) GridFtpServer.signal(pid, "STOP");
            CopyBatch batch = mover.submit(List.of(big));
            Path out = root.resolve("dst").resolve("big.bin");
            while (!Files.exists(out) || Files.size(out) == 0) {
                for (long pid : source) GridFtpServer.signal(pid, "CONT");
                Thread.sleep(2);
                for (long pid : source) GridFtpServer.signal(pid, "STOP");
                Thread.sleep(50);
            }
            assertThat(Files.size(out)).as("mid-file").isLessThan(size);
            for (long pid : source) GridFtpServer.signal(pid, "KILL");
            assertThat(batch.result(big).get(90, TimeUnit.SECONDS).adler32()).isEqualTo(adler(f));
            assertThat(Files.mismatch(f, out)).isEqualTo(-1L);
            assertThat(retries).isNotEmpty();
            assertThat(retries.getFirst().kind()).isEqualTo(TransferFailure.Kind.CONNECTION);
            assertThat(retries.getFirst().getMessage()).contains("(source 127.0.0.1:" + a.port + " " + f + ")");
            assertThat(mover.links()).singleElement().satisfies(l -> assertThat(l.hostsOut())
                    .as("no destination host out of rotation for the source's dropped connection").isEmpty());
        } finally {
            for (long pid : stopped) GridFtpServer.signal(pid, "CONT");
        }
    }

    /** The source has no such file: the error names the source host and the path, not the destination host. */
    @Test
    void aThirdPartyCopyOfAFileTheSourceLacksNamesTheSourceAndPath() throws Exception {
        Path missing = root.resolve("tpm-src").resolve("missing.bin");
        GridFtpServer.openUp(missing.getParent());
        FileCopy copy = new FileCopy("missing", URI.create("ftp://127.0.0.1:" + a.port + missing),
                URI.create("ftp://127.0.0.1:" + b.port + root.resolve("dst") + "/missing.bin"), 1024, 1L);
        try (Mover mover = Movers.gridFtp(settings(Duration.ofSeconds(8)), recorder)) {
            assertThatThrownBy(() -> mover.submit(List.of(copy)).result(copy).get(60, TimeUnit.SECONDS))
                    .cause().isInstanceOfSatisfying(TransferFailure.class, f -> {
                        assertThat(f.kind()).isEqualTo(TransferFailure.Kind.NO_SUCH_PATH);
                        assertThat(f.getMessage()).contains("(source 127.0.0.1:" + a.port + " " + missing + ")")
                                .doesNotContain("(127.0.0.1:" + b.port + ")");
                    });
        }
    }

    @Test
    void deadSingleHostIsRetriedThenFailsAsConnectionTrouble() throws Exception {
        String only = "127.0.0.1:" + a.port;
        a.kill();
        try (Mover mover = Movers.gridFtp(settings(Duration.ofSeconds(5)), recorder)) {
            FileCopy c = files("dead", 1, only).getFirst();
            assertThatThrownBy(() -> mover.submit(List.of(c)).result(c).get(30, TimeUnit.SECONDS))
                    .cause().isInstanceOfSatisfying(TransferFailure.class, f -> {
                        assertThat(f.kind()).isEqualTo(TransferFailure.Kind.CONNECTION);
                        assertThat(f.attempts()).isEqualTo(4);
                    });
        }
    }
}
