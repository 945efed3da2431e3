package dev.stagehand.transfer.gridftp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.stagehand.transfer.FileCopy;
import dev.stagehand.transfer.MoverSettings;
import dev.stagehand.transfer.TransferFailure;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A third-party copy's trouble at its source is put on the source, not on the destination host. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ThirdPartyBlameTest {

    /**
     * With no catalog checksum, a third-party copy asks the source for its CKSM after the copy: a source that
     * never answers it was reported as "no progress ... on" the destination host, which left its link's rotation.
     */
    @Test
    void aSourceThatNeverAnswersItsChecksumIsNamedAndTheDestinationHostStaysInRotation() throws Exception {
        MoverSettings once = MoverSettings.defaults().withStreams(1, 1, false)
                .withRetry(Duration.ofSeconds(1), 1, Duration.ofMillis(20), Duration.ofSeconds(60));
        try (FakeGridFtpServer source = new FakeGridFtpServer(); FakeGridFtpServer d1 = new FakeGridFtpServer();
             FakeGridFtpServer d2 = new FakeGridFtpServer(); GridFtpMover mover = new GridFtpMover(once, null)) {
            source.cksmDelayMillis = 30_000; // summing for ever
            FileCopy c = new FileCopy("tp", URI.create("ftp://127.0.0.1:" + source.port() + "/s/f.bin"),
                    URI.create("ftp://127.0.0.1:" + d1.port() + ",127.0.0.1:" + d2.port() + "/d/f.bin"), 1024, null);
            assertThatThrownBy(() -> mover.submit(List.of(c)).result(c).get(30, TimeUnit.SECONDS))
                    .cause().isInstanceOfSatisfying(TransferFailure.class, f -> {
                        assertThat(f.kind()).isEqualTo(TransferFailure.Kind.STALL);
                        assertThat(f.getMessage()).contains("source 127.0.0.1:" + source.port()).doesNotContain("destination");
                    });
            assertThat(source.count("CKSM")).isEqualTo(1);
            assertThat(mover.links()).singleElement().satisfies(l -> assertThat(l.hostsOut()).isEmpty());
        }
    }

    /**
     * A third-party copy stalls: when the destination keeps sending markers with nothing new (it is up, waiting
     * for data) and the source says nothing, the stall is the source's; the destination host stays in rotation.
     * When the destination falls silent too, it is the destination's (and its host leaves rotation).
     */
    @Test
    void aStalledThirdPartyCopyIsPutOnTheSideThatStopped() throws Exception {
        MoverSettings once = MoverSettings.defaults().withStreams(1, 1, false)
                .withRetry(Duration.ofSeconds(1), 1, Duration.ofMillis(20), Duration.ofSeconds(60));
        for (boolean destinationUp : new boolean[] {true, false}) {
            try (FakeGridFtpServer source = new FakeGridFtpServer(); FakeGridFtpServer d1 = new FakeGridFtpServer();
                 FakeGridFtpServer d2 = new FakeGridFtpServer(); GridFtpMover mover = new GridFtpMover(once, null)) {
                source.silent = java.util.Set.of("RETR"); // the source never sends
                for (FakeGridFtpServer d : List.of(d1, d2)) {
                    if (destinationUp) d.waitingMarkerMillis = 200;
                    else d.silent = java.util.Set.of("STOR");
                }
                FileCopy c = new FileCopy("tp", URI.create("ftp://127.0.0.1:" + source.port() + "/s/f.bin"),
                        URI.create("ftp://127.0.0.1:" + d1.port() + ",127.0.0.1:" + d2.port() + "/d/f.bin"), 1024, 1L);
                assertThatThrownBy(() -> mover.submit(List.of(c)).result(c).get(30, TimeUnit.SECONDS))
                        .as("destination up: %s", destinationUp)
                        .cause().isInstanceOfSatisfying(TransferFailure.class, f -> {
                            assertThat(f.kind()).isEqualTo(TransferFailure.Kind.STALL);
                            if (destinationUp) {
                                assertThat(f.getMessage()).contains("from source 127.0.0.1:" + source.port(), "was up, waiting for data");
                            } else {
                                assertThat(f.getMessage()).contains("on destination 127.0.0.1:").doesNotContain("source");
                            }
                        });
                assertThat(mover.links()).singleElement().satisfies(l -> assertThat(l.hostsOut())
                        .as("destination up: %s", destinationUp).hasSize(destinationUp ? 0 : 1));
            }
        }
    }

    private static final MoverSettings ONCE = MoverSettings.defaults().withStreams(1, 1, false)
            .withRetry(Duration.ofSeconds(1), 1, Duration.ofMillis(20), Duration.ofSeconds(60));

    /** The copy of {@code source}'s /s/f.bin to /d/f.bin on either destination, failed: its failure. */
    private static TransferFailure failure(FakeGridFtpServer source, FakeGridFtpServer d1, FakeGridFtpServer d2,
                                           GridFtpMover mover, long size) {
        FileCopy c = new FileCopy("tp", URI.create("ftp://127.0.0.1:" + source.port() + "/s/f.bin"),
                URI.create("ftp://127.0.0.1:" + d1.port() + ",127.0.0.1:" + d2.port() + "/d/f.bin"), size, 1L);
        Throwable t = org.junit.jupiter.api.Assertions.assertThrows(java.util.concurrent.ExecutionException.class,
                () -> mover.submit(List.of(c)).result(c).get(30, TimeUnit.SECONDS));
        assertThat(t.getCause()).isInstanceOf(TransferFailure.class);
        return (TransferFailure) t.getCause();
    }

    /** The copy failed as {@code kind}, named on the source and its path, no destination host named or out of rotation. */
    private static void putOnTheSource(TransferFailure f, TransferFailure.Kind kind, FakeGridFtpServer source,
                                       FakeGridFtpServer d1, FakeGridFtpServer d2, GridFtpMover mover) {
        assertThat(f.kind()).isEqualTo(kind);
        assertThat(f.getMessage()).contains("(source 127.0.0.1:" + source.port() + " /s/f.bin)")
                .doesNotContain("(127.0.0.1:" + d1.port() + ")", "(127.0.0.1:" + d2.port() + ")");
        assertThat(mover.links()).singleElement().satisfies(l -> assertThat(l.hostsOut()).isEmpty());
    }

    /**
     * A third-party copy stalls in its set-up, waiting for the source: its PORT, its SIZE (no size in the
     * catalog), or its RETR while the destination had answered its STOR (no marker yet). It was put on the
     * destination host, which left its link's rotation; it is the source's, named with its path.
     */
    @Test
    void aSetUpStallWaitingForTheSourceIsTheSources() throws Exception {
        for (String silent : List.of("PORT", "SIZE", "RETR")) {
            try (FakeGridFtpServer source = new FakeGridFtpServer(); FakeGridFtpServer d1 = new FakeGridFtpServer();
                 FakeGridFtpServer d2 = new FakeGridFtpServer(); GridFtpMover mover = new GridFtpMover(ONCE, null)) {
                source.silent = java.util.Set.of(silent);
                for (FakeGridFtpServer d : List.of(d1, d2)) d.waitingMarkerMillis = 60_000; // 150, then no marker yet
                TransferFailure f = failure(source, d1, d2, mover, silent.equals("SIZE") ? 0 : 1024);
                assertThat(f.kind()).as(silent).isEqualTo(TransferFailure.Kind.STALL);
                assertThat(f.getMessage()).as(silent).contains("on source 127.0.0.1:" + source.port() + " /s/f.bin")
                        .doesNotContain("destination");
                assertThat(source.count(silent)).as(silent).isEqualTo(1);
                assertThat(mover.links()).singleElement().satisfies(l -> assertThat(l.hostsOut()).as(silent).isEmpty());
            }
        }
    }

    /**
     * The source's control connection drops mid-copy (its server process gone) while the destination is up:
     * a connection failure of the source, named; the destination host used to leave its link's rotation.
     */
    @Test
    void aSourceConnectionThatDropsMidCopyIsTheSources() throws Exception {
        try (FakeGridFtpServer source = new FakeGridFtpServer(); FakeGridFtpServer d1 = new FakeGridFtpServer();
             FakeGridFtpServer d2 = new FakeGridFtpServer(); GridFtpMover mover = new GridFtpMover(ONCE, null)) {
            source.dropRetrAfterMillis = 300;
            for (FakeGridFtpServer d : List.of(d1, d2)) d.waitingMarkerMillis = 100;
            putOnTheSource(failure(source, d1, d2, mover, 1024), TransferFailure.Kind.CONNECTION, source, d1, d2, mover);
        }
    }

    /**
     * The source's control connection is reset mid-copy while the destination is up, waiting for data: jglobus
     * reports the reset as an interrupt (its sign of the other side's abort), and the copy failed as PROTOCOL
     * ("Transfer thread has been killed"), where the same connection closed is a connection failure. It is
     * one, of the source, at once (well before the stall limit).
     */
    @Test
    void aSourceConnectionResetMidCopyIsTheSourcesConnectionFailure() throws Exception {
        MoverSettings slowStall = MoverSettings.defaults().withStreams(1, 1, false)
                .withRetry(Duration.ofSeconds(20), 1, Duration.ofMillis(20), Duration.ofSeconds(60));
        try (FakeGridFtpServer source = new FakeGridFtpServer(); FakeGridFtpServer d1 = new FakeGridFtpServer();
             FakeGridFtpServer d2 = new FakeGridFtpServer(); GridFtpMover mover = new GridFtpMover(slowStall, null)) {
            source.dropRetrAfterMillis = 300;
            source.dropRetrByReset = true;
            for (FakeGridFtpServer d : List.of(d1, d2)) d.waitingMarkerMillis = 100;
            long start = System.nanoTime();
            TransferFailure f = failure(source, d1, d2, mover, 1024);
            assertThat(Duration.ofNanos(System.nanoTime() - start)).as("failed before the stall limit").isLessThan(Duration.ofSeconds(10));
            putOnTheSource(f, TransferFailure.Kind.CONNECTION, source, d1, d2, mover);
        }
    }

    /**
     * A source killed mid-file closes its data connection and its control connection at once; the destination's
     * refusal ("an end-of-file was reached", GCT's words) often arrives before the source's broken control
     * connection is read. It was put on the destination (a PROTOCOL failure there; MoverFaultsIT flaked on it): the
     * data connection the sender closed early is the source's, a connection failure.
     */
    @Test
    void aDestinationSayingTheDataEndedEarlyPutsTheCopyOnTheSource() throws Exception {
        try (FakeGridFtpServer source = new FakeGridFtpServer(); FakeGridFtpServer d1 = new FakeGridFtpServer();
             FakeGridFtpServer d2 = new FakeGridFtpServer(); GridFtpMover mover = new GridFtpMover(ONCE, null)) {
            source.dropRetrAfterMillis = 3000;
            for (FakeGridFtpServer d : List.of(d1, d2)) {
                d.storFailureAfterMillis = 100;
                d.storFailure = "451 Command failed. : callback failed. an end-of-file was reached globus_xio: An end of "
                        + "file occurred End.";
            }
            putOnTheSource(failure(source, d1, d2, mover, 1024), TransferFailure.Kind.CONNECTION, source, d1, d2, mover);
        }
    }

    /**
     * The source's control connection broke between two copies (its server process gone, the connection reset):
     * the next copy's RETR cannot be written to it. That is the source's (named, with its path); it was put on
     * the destination host, which left its link's rotation.
     */
    @Test
    void aRetrThatCannotBeWrittenToTheSourceIsTheSources() throws Exception {
        try (FakeGridFtpServer source = new FakeGridFtpServer(); FakeGridFtpServer d1 = new FakeGridFtpServer();
             FakeGridFtpServer d2 = new FakeGridFtpServer(); GridFtpMover mover = new GridFtpMover(ONCE, null)) {
            source.resetAfterRetrMillis = 100;
            String destinations = "ftp://127.0.0.1:" + d1.port() + ",127.0.0.1:" + d2.port();
            FileCopy first = new FileCopy("1", URI.create("ftp://127.0.0.1:" + source.port() + "/s/f1.bin"),
                    URI.create(destinations + "/d/f1.bin"), 1024, 1L);
            FileCopy second = new FileCopy("2", URI.create("ftp://127.0.0.1:" + source.port() + "/s/f2.bin"),
                    URI.create(destinations + "/d/f2.bin"), 1024, 1L);
            mover.submit(List.of(first)).result(first).get(30, TimeUnit.SECONDS);
            assertThat(source.reset.await(10, TimeUnit.SECONDS)).as("the source's connection reset").isTrue();
            Throwable t = org.junit.jupiter.api.Assertions.assertThrows(java.util.concurrent.ExecutionException.class,
                    () -> mover.submit(List.of(second)).result(second).get(30, TimeUnit.SECONDS));
            assertThat(t.getCause()).isInstanceOfSatisfying(TransferFailure.class, f -> {
                assertThat(f.kind()).isEqualTo(TransferFailure.Kind.CONNECTION);
                assertThat(f.getMessage()).contains("(source 127.0.0.1:" + source.port() + " /s/f2.bin)")
                        .doesNotContain("(127.0.0.1:" + d1.port() + ")", "(127.0.0.1:" + d2.port() + ")");
            });
            assertThat(source.count("RETR")).as("the second RETR never arrived").isEqualTo(1);
            assertThat(mover.links()).singleElement().satisfies(l -> assertThat(l.hostsOut()).isEmpty());
        }
    }

    /** The source refuses the file (missing, not readable): the error names the source host and path, not a destination host. */
    @Test
    void aSourceRefusalNamesTheSourceAndItsPath() throws Exception {
        var refusals = java.util.Map.of("550 /s/f.bin: No such file or directory.", TransferFailure.Kind.NO_SUCH_PATH,
                "550 /s/f.bin: Permission denied.", TransferFailure.Kind.PERMISSION_DENIED);
        for (var refusal : refusals.entrySet()) {
            try (FakeGridFtpServer source = new FakeGridFtpServer(); FakeGridFtpServer d1 = new FakeGridFtpServer();
                 FakeGridFtpServer d2 = new FakeGridFtpServer(); GridFtpMover mover = new GridFtpMover(ONCE, null)) {
                source.retrRefusal = refusal.getKey();
                TransferFailure f = failure(source, d1, d2, mover, 1024);
                assertThat(f.kind()).as(refusal.getKey()).isEqualTo(refusal.getValue());
                assertThat(f.getMessage()).as(refusal.getKey()).contains("(source 127.0.0.1:" + source.port() + " /s/f.bin)")
                        .doesNotContain("(127.0.0.1:" + d1.port() + ")", "(127.0.0.1:" + d2.port() + ")");
                assertThat(mover.links()).singleElement().satisfies(l -> assertThat(l.hostsOut()).isEmpty());
            }
        }
    }
}
