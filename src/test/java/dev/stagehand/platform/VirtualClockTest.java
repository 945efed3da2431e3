package dev.stagehand.platform;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class VirtualClockTest {

    @Test
    void runsTasksInTimeOrderTiesInSubmissionOrder() {
        VirtualClock clock = new VirtualClock();
        List<String> ran = new ArrayList<>();
        clock.schedule(Duration.ofSeconds(5), () -> ran.add("b@" + clock.elapsedSeconds()));
        clock.schedule(Duration.ofSeconds(1), () -> {
            ran.add("a@" + clock.elapsedSeconds());
            clock.schedule(Duration.ofSeconds(4), () -> ran.add("c@" + clock.elapsedSeconds())); // same time as b
        });
        assertThat(clock.runUntilIdle()).isEqualTo(3);
        assertThat(ran).containsExactly("a@1.0", "b@5.0", "c@5.0");
        assertThat(clock.elapsed()).isEqualTo(Duration.ofSeconds(5));
    }

    @Test
    void cancelledTasksNeverRunAndRunUntilStopsAtItsTime() {
        VirtualClock clock = new VirtualClock();
        List<Integer> ran = new ArrayList<>();
        EventClock.Scheduled s = clock.schedule(Duration.ofSeconds(2), () -> ran.add(2));
        clock.schedule(Duration.ofSeconds(3), () -> ran.add(3));
        clock.schedule(Duration.ofSeconds(10), () -> ran.add(10));
        assertThat(s.cancel()).isTrue();
        assertThat(s.cancel()).isFalse();
        clock.runUntil(clock.start().plusSeconds(4));
        assertThat(ran).containsExactly(3);
        assertThat(clock.elapsedSeconds()).isEqualTo(4.0);
        clock.advance(Duration.ofSeconds(6));
        assertThat(ran).containsExactly(3, 10);
        assertThat(clock.now()).isEqualTo(clock.start().plusSeconds(10));
    }

    @Test
    void scaledClockRunsFasterThanRealTime() throws Exception {
        try (ScaledClock clock = new ScaledClock(1000)) {
            var start = clock.now();
            CountDownLatch done = new CountDownLatch(1);
            clock.schedule(Duration.ofSeconds(20), done::countDown); // 20 ms of wall time
            assertThat(done.await(10, TimeUnit.SECONDS)).isTrue();
            assertThat(Duration.between(start, clock.now())).isGreaterThanOrEqualTo(Duration.ofSeconds(20));
        }
    }
}
