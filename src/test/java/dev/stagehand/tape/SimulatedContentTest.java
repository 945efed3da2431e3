package dev.stagehand.tape;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.util.zip.Adler32;
import org.junit.jupiter.api.Test;

class SimulatedContentTest {

    @Test
    void adler32FormulaMatchesTheStreamedBytes() throws Exception {
        int b = SimulatedContent.BLOCK;
        for (long size : new long[] {0, 1, 100, b - 1, b, b + 1, 2L * b, 5L * b + 17, 7L * b + b / 2}) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            long streamed = SimulatedContent.write("/cmip6/tas_day_" + size + ".nc", size, out);
            Adler32 a = new Adler32();
            a.update(out.toByteArray());
            assertThat(out.size()).isEqualTo((int) size);
            assertThat(streamed).isEqualTo(a.getValue());
            assertThat(SimulatedContent.adler32("/cmip6/tas_day_" + size + ".nc", size)).as("size %d", size)
                    .isEqualTo(a.getValue());
        }
    }

    @Test
    void contentDependsOnTheName() {
        assertThat(SimulatedContent.adler32("/a", 1_000_000)).isNotEqualTo(SimulatedContent.adler32("/b", 1_000_000));
        assertThat(SimulatedContent.adler32Hex("/a", 0)).isEqualTo("00000001");
        // a 10 GB file's checksum costs no 10 GB of work
        assertThat(SimulatedContent.adler32Hex("/big", 10_000_000_000L)).hasSize(8);
    }
}
