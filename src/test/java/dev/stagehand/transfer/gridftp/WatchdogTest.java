package dev.stagehand.transfer.gridftp;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The stall watchdog unblocks an attempt whatever it is blocked in, and never touches a finished one. */
class WatchdogTest {

    @Test
    void anAttemptBlockedInASocketReadWithNoSessionToCloseIsInterruptedOutOfIt() throws Exception {
        try (Watchdog watchdog = new Watchdog(TimeUnit.MILLISECONDS.toNanos(200));
             ServerSocket silent = new ServerSocket(0)) {
            var outcome = new CompletableFuture<Throwable>();
            var stalled = new CompletableFuture<Boolean>();
            Thread.ofVirtual().start(() -> {
                Watchdog.Attempt a = watchdog.watch();
                try (Socket s = new Socket("127.0.0.1", silent.getLocalPort())) {
                    s.getInputStream().read(); // the peer accepts and never says anything
                    outcome.complete(null);
                } catch (IOException e) {
                    outcome.complete(e);
                } finally {
                    stalled.complete(a.stalled);
                    watchdog.unwatch(a);
                }
            });
            try (Socket accepted = silent.accept()) {
                // a generous bound: without the watchdog this read would block for ever
                assertThat(outcome.get(30, TimeUnit.SECONDS)).isInstanceOf(IOException.class);
                assertThat(stalled.get(30, TimeUnit.SECONDS)).isTrue();
            }
        }
    }

    @Test
    void anEndedAttemptIsNeitherInterruptedNorLeavesAnInterruptBehind() throws Exception {
        try (Watchdog watchdog = new Watchdog(TimeUnit.SECONDS.toNanos(60))) {
            var result = new CompletableFuture<Boolean>();
            Thread t = Thread.ofVirtual().start(() -> {
                Watchdog.Attempt a = watchdog.watch();
                a.abort(); // e.g. its job was cancelled: the interrupt lands on this thread
                watchdog.unwatch(a);
                boolean clearAfterEnd = !Thread.currentThread().isInterrupted();
                a.abort(); // too late: the attempt is over
                result.complete(clearAfterEnd && !Thread.currentThread().isInterrupted());
            });
            assertThat(result.get(30, TimeUnit.SECONDS)).isTrue();
            t.join();
        }
    }
}
