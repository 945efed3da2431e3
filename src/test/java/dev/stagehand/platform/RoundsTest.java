package dev.stagehand.platform;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class RoundsTest {

    @Test
    void aRoundInProgressEndsUninterruptedBeforeStopReturnsAndNoOtherStarts() throws Exception {
        ScheduledExecutorService ex = Executors.newSingleThreadScheduledExecutor();
        CountDownLatch inRound = new CountDownLatch(1);
        AtomicInteger rounds = new AtomicInteger();
        AtomicBoolean ended = new AtomicBoolean(), interrupted = new AtomicBoolean();
        ex.scheduleWithFixedDelay(() -> {
            if (rounds.incrementAndGet() > 1) return;
            inRound.countDown();
            try {
                Thread.sleep(300); // its queries, while the service stops
                ended.set(true);
            } catch (InterruptedException e) {
                interrupted.set(true);
            }
        }, 0, 1, TimeUnit.MILLISECONDS);
        assertThat(inRound.await(5, TimeUnit.SECONDS)).isTrue();

        assertThat(Rounds.stop(ex, Duration.ofSeconds(10), "test rounds")).isTrue();

        // before: shutdownNow interrupted it and returned at once, and the pool closed under its query
        assertThat(ended).isTrue();
        assertThat(interrupted).isFalse();
        assertThat(ex.isTerminated()).isTrue();
        assertThat(rounds.get()).isEqualTo(1);
    }

    @Test
    void aRoundThatOutlastsTheWaitIsInterruptedAndLeft() throws Exception {
        ScheduledExecutorService ex = Executors.newSingleThreadScheduledExecutor();
        CountDownLatch inRound = new CountDownLatch(1), interrupted = new CountDownLatch(1);
        ex.execute(() -> {
            inRound.countDown();
            try {
                Thread.sleep(60_000);
            } catch (InterruptedException e) {
                interrupted.countDown();
            }
        });
        assertThat(inRound.await(5, TimeUnit.SECONDS)).isTrue();

        assertThat(Rounds.stop(ex, Duration.ofMillis(200), "test rounds")).isFalse();
        assertThat(interrupted.await(5, TimeUnit.SECONDS)).isTrue();
    }
}
