package dev.stagehand.tape;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The locate, read and unload costs of tape-model.md. */
class TapeModelTest {

    final TapeModel m = TapeModel.lto9();
    final double cw = m.wrapCapacity();

    long at(int wrap, double fraction) {
        return (long) Math.round(wrap * cw + fraction * cw);
    }

    @Test
    void geometry() {
        assertThat(cw).isCloseTo(64.2857e9, within(1e6));
        assertThat(m.wrap(0)).isZero();
        assertThat(m.wrap(at(1, 0.25))).isEqualTo(1);
        assertThat(m.position(at(1, 0.25))).isCloseTo(0.75, within(1e-9)); // odd wraps run back
        assertThat(m.band(69)).isZero();
        assertThat(m.band(70)).isEqualTo(1);
        assertThat(m.wrap(m.capacityBytes())).isEqualTo(279);
    }

    @Test
    void noLocateWhenAlreadyAtTheHead() {
        assertThat(m.locateSeconds(12345, 12345)).isZero();
        assertThat(m.locateSeconds(0, 0)).isZero();
    }

    @Test
    void sameWrapForward() {
        assertThat(m.locateSeconds(at(0, 0.1), at(0, 0.6))).isCloseTo(4.3 + 60 * 0.5, within(1e-6));
    }

    @Test
    void sameWrapBehindTheHead() {
        assertThat(m.locateSeconds(at(0, 0.5), at(0, 0.25))).isCloseTo(4.3 + 11.3 + 60 * 0.25, within(1e-6));
        // on a backward wrap "behind" is still by offset, i.e. towards the wrap's start
        assertThat(m.locateSeconds(at(3, 0.5), at(3, 0.25))).isCloseTo(4.3 + 11.3 + 60 * 0.25, within(1e-6));
    }

    @Test
    void wrapChangeSameDirection() {
        assertThat(m.locateSeconds(at(0, 0.5), at(2, 0.5))).isCloseTo(4.3 + 6.7, within(1e-6));
    }

    @Test
    void wrapChangeOtherDirection() {
        // from BOT to a quarter into wrap 1 (which runs back): x = 0.75
        assertThat(m.locateSeconds(0, at(1, 0.25))).isCloseTo(4.3 + 6.7 + 5.2 + 60 * 0.75, within(1e-6));
    }

    @Test
    void bandChange() {
        assertThat(m.locateSeconds(at(0, 0.3), at(70, 0.3))).isCloseTo(4.3 + 6.7 + 3.2, within(1e-6));
        assertThat(m.locateSeconds(at(69, 0.5), at(140, 0.5))).isCloseTo(4.3 + 6.7 + 3.2 + 5.2, within(1e-6));
    }

    @Test
    void averageLocateFromBotIsAbout46Seconds() {
        SplittableRandom r = new SplittableRandom(1);
        double sum = 0, max = 0;
        int n = 200_000;
        for (int i = 0; i < n; i++) {
            double s = m.locateFromBotSeconds(r.nextLong(m.capacityBytes()));
            sum += s;
            max = Math.max(max, s);
        }
        assertThat(sum / n).isBetween(44.0, 48.0);
        assertThat(max).isBetween(75.0, 80.0);
    }

    @Test
    void readAndUnload() {
        assertThat(m.transferSeconds(400_000_000L)).isEqualTo(1.0);
        assertThat(m.mountSeconds()).isCloseTo(23.7, within(1e-9));
        assertThat(m.unloadSeconds(0)).isEqualTo(85.0);
        assertThat(m.unloadSeconds(4_999_999_999L)).isEqualTo(85.0);
        assertThat(m.unloadSeconds(5_000_000_000L)).isEqualTo(140.0);
        assertThat(m.unloadSeconds(49_999_999_999L)).isEqualTo(140.0);
        assertThat(m.unloadSeconds(60_000_000_000L)).isEqualTo(195.0);
    }
}
