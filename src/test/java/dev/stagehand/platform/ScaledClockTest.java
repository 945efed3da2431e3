package dev.stagehand.platform;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

class ScaledClockTest {

    /**
     * A service's round still running at shutdown asked the closed clock for a pass: the rejection reached the
     * round and was logged as an intake failure (seen in bench/shared-library.sh at each instance's stop).
     */
    @Test
    void aTaskScheduledOnAClosedClockIsDroppedNotThrown() throws Exception {
        ScaledClock clock = new ScaledClock(60);
        CountDownLatch ran = new CountDownLatch(1);
        clock.schedule(Duration.ofSeconds(6), ran::countDown); // 0.1 s of wall time
        assertThat(ran.await(5, TimeUnit.SECONDS)).as("runs while open").isTrue();
        clock.close();
        AtomicBoolean late = new AtomicBoolean();
        assertThatCode(() -> clock.schedule(Duration.ZERO, () -> late.set(true)).cancel()).doesNotThrowAnyException();
        Thread.sleep(100);
        assertThat(late).isFalse();
    }
}
