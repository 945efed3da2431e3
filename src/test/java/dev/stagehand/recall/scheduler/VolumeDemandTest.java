package dev.stagehand.recall.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Test;

class VolumeDemandTest {

    @Test
    void eachRequestCountsOneAndDecaysWithTime() {
        VolumeDemand d = new VolumeDemand();
        assertThat(d.of("V", 0)).isZero();
        d.asked("V", 0);
        assertThat(d.of("V", 0)).isEqualTo(1.0);
        assertThat(d.popular("V", 0)).isFalse();
        d.asked("V", 100);
        assertThat(d.of("V", 100)).isCloseTo(Math.exp(-100 / VolumeDemand.TAU_S) + 1, within(1e-12));
        assertThat(d.popular("V", 100)).isTrue();
        // an hour later the two requests count as less than one and a half: no longer popular
        assertThat(d.popular("V", 100 + 3600)).isFalse();
        assertThat(d.of("W", 100)).isZero();
    }

    @Test
    void volumesNotAskedForInALongTimeAreForgotten() {
        VolumeDemand d = new VolumeDemand();
        d.asked("OLD", 0);
        d.asked("NEW", 20_000);
        d.prune(20_000);
        assertThat(d.size()).isEqualTo(1);
        assertThat(d.of("OLD", 20_000)).isZero();
        assertThat(d.of("NEW", 20_000)).isEqualTo(1.0);
    }
}
