package dev.stagehand.transfer.gridftp;

import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.transfer.MoverSettings;
import dev.stagehand.transfer.TransferListener;
import java.net.URI;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The per-link optimizer (FTS3-like): more transfers while throughput holds and all succeed, fewer on errors. */
class AdaptiveConcurrencyTest {

    final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
    final Watchdog watchdog = new Watchdog(Duration.ofSeconds(30).toNanos());
    Link link;

    Link link(int start, int min, int max) {
        // the interval is long: the test drives optimize() itself
        MoverSettings s = MoverSettings.defaults().withStreams(1, start, true).withAdaptive(min, max, Duration.ofHours(1));
        link = new Link(Endpoint.parse(URI.create("ftp://127.0.0.1:9/dst/")), s, TransferListener.NONE, watchdog, timer, () -> null,
                LocalReadException.READ, false);
        return link;
    }

    @AfterEach
    void close() {
        if (link != null) link.close();
        watchdog.close();
        timer.shutdownNow();
    }

    @Test
    void risesWhileThroughputHoldsAndStopsAtTheMaximum() {
        Link l = link(2, 1, 5);
        for (int i = 0; i < 6; i++) {
            l.record(100L << 20, true);
            l.optimize(true);
        }
        assertThat(l.concurrency()).isEqualTo(5);
        assertThat(l.status().successRate()).isEqualTo(1.0);
    }

    @Test
    void fallingThroughputTakesOneBack() {
        Link l = link(3, 1, 8);
        l.record(1000L << 20, true);
        l.optimize(true); // first window: 3 -> 4
        l.record(10L << 20, true);
        l.optimize(true); // throughput fell: 4 -> 3
        assertThat(l.concurrency()).isEqualTo(3);
    }

    @Test
    void errorsBackOffWithinTheMinimum() {
        Link l = link(6, 2, 8);
        for (int i = 0; i < 8; i++) l.record(0, false);
        l.record(1 << 20, true);
        l.optimize(true); // success 1 of 9: -2
        assertThat(l.concurrency()).isEqualTo(4);
        for (int i = 0; i < 3; i++) {
            l.record(0, false);
            l.optimize(true);
        }
        assertThat(l.concurrency()).isEqualTo(2);
    }

    @Test
    void nothingWaitingAndNothingDoneChangesNothing() {
        Link l = link(3, 1, 8);
        l.optimize(false);
        assertThat(l.concurrency()).isEqualTo(3);
    }

    /**
     * A copy cancelled while it is sent (its request cancelled, its transfer withdrawn) says nothing about the
     * link: its attempt, ended by the cancel, is not a failure in the optimizer's window. Before, each lowered
     * the success rate and, below 0.9, the link's concurrency by two: a bulk cancel throttled the link.
     */
    @Test
    void aCancelledCopyDoesNotLowerTheLinksSuccessRate(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        java.nio.file.Path local = dir.resolve("f");
        java.nio.file.Files.write(local, new byte[4096]);
        MoverSettings s = MoverSettings.defaults().withStreams(1, 1, true).withAdaptive(1, 2, Duration.ofMillis(50));
        try (FakeGridFtpServer d = new FakeGridFtpServer(); GridFtpMover mover = new GridFtpMover(s, null)) {
            d.sizeReply = "550 /d/f: No such file or directory.";
            d.silent = java.util.Set.of("STOR"); // the put is under way until the cancel ends it
            var stor = new java.util.concurrent.CountDownLatch(1);
            d.heard = line -> {
                if (line.startsWith("STOR")) stor.countDown();
            };
            var copy = new dev.stagehand.transfer.FileCopy("1", local.toUri(), URI.create("ftp://127.0.0.1:" + d.port() + "/d/f"), 4096, null);
            var batch = mover.submit(java.util.List.of(copy));
            assertThat(stor.await(30, java.util.concurrent.TimeUnit.SECONDS)).as("the put started").isTrue();
            batch.cancel(copy);
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> batch.result(copy).get(30, java.util.concurrent.TimeUnit.SECONDS))
                    .hasCauseInstanceOf(dev.stagehand.transfer.TransferFailure.class);
            long until = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (mover.links().getFirst().active() > 0 && System.nanoTime() < until) Thread.sleep(10);
            assertThat(mover.links().getFirst().active()).as("the cancelled attempt ended").isZero();
            Thread.sleep(300); // several optimizer windows
            assertThat(mover.links().getFirst().successRate()).isEqualTo(1.0);
            assertThat(mover.links().getFirst().hostsOut()).isEmpty();
        }
    }
}
