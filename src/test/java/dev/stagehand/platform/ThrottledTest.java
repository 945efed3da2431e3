package dev.stagehand.platform;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class ThrottledTest {

    final AtomicLong now = new AtomicLong();
    final AtomicInteger computed = new AtomicInteger();

    @Test
    void aFigureIsReusedForItsMinimumAgeOrTenTimesWhatItTookWhicheverIsLonger() {
        long[] takes = {1, 3_000}; // ms: a quick computation, then a slow one
        Throttled<Integer> t = new Throttled<>(Duration.ofSeconds(5), () -> {
            now.addAndGet(takes[Math.min(computed.get(), 1)] * 1_000_000L);
            return computed.incrementAndGet();
        }, now::get);

        assertThat(t.get()).isEqualTo(1);
        now.addAndGet(4_000_000_000L);
        assertThat(t.get()).as("younger than 5 s").isEqualTo(1);
        now.addAndGet(2_000_000_000L);
        assertThat(t.get()).as("older than 5 s: computed again, taking 3 s").isEqualTo(2);
        now.addAndGet(20_000_000_000L);
        assertThat(t.get()).as("reused for ten times 3 s").isEqualTo(2);
        now.addAndGet(11_000_000_000L);
        assertThat(t.get()).isEqualTo(3);
        assertThat(t.asOf()).isNotNull();
    }

    @Test
    void aForgottenFigureIsComputedAgainAtTheNextRead() {
        Throttled<Integer> t = new Throttled<>(Duration.ofSeconds(5), computed::incrementAndGet, now::get);
        assertThat(t.get()).isEqualTo(1);
        assertThat(t.get()).isEqualTo(1);
        t.forget();
        assertThat(t.get()).as("known to have changed: not reused").isEqualTo(2);
    }

    @Test
    void aFailedComputationKeepsTheLastFigureAndIsTriedAgainAtTheNextRead() {
        boolean[] fail = {false};
        Throttled<Integer> t = new Throttled<>(Duration.ofSeconds(5), () -> {
            if (fail[0]) throw new IllegalStateException("database away");
            return computed.incrementAndGet();
        }, now::get);
        assertThat(t.get()).isEqualTo(1);
        fail[0] = true;
        now.addAndGet(6_000_000_000L);
        assertThatThrownBy(t::get).hasMessageContaining("database away");
        fail[0] = false;
        assertThat(t.get()).isEqualTo(2);
    }
}
