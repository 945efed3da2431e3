package dev.stagehand.transfer.gridftp;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Random;
import java.util.zip.Adler32;
import org.junit.jupiter.api.Test;

/** Byte-range sums combine into the whole file's Adler32 (how split files are checked against the catalog). */
class AdlerCombineTest {

    static long adler(byte[] b, int off, int len) {
        Adler32 a = new Adler32();
        a.update(b, off, len);
        return a.getValue();
    }

    @Test
    void rangesCombineToTheWholeSum() {
        Random rnd = new Random(1);
        for (int trial = 0; trial < 200; trial++) {
            byte[] data = new byte[1 + rnd.nextInt(300_000)];
            rnd.nextBytes(data);
            if (trial % 3 == 0) java.util.Arrays.fill(data, (byte) 0xff); // sums near the modulus
            long combined = 1;
            int pos = 0;
            while (pos < data.length) {
                int len = Math.min(data.length - pos, 1 + rnd.nextInt(100_000));
                combined = Link.combine(combined, adler(data, pos, len), len);
                pos += len;
            }
            assertThat(combined).isEqualTo(adler(data, 0, data.length));
        }
    }

    @Test
    void emptyRangeChangesNothing() {
        assertThat(Link.combine(0x12345678L, 1, 0)).isEqualTo(0x12345678L);
    }
}
