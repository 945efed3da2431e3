package dev.stagehand.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import org.junit.jupiter.api.Test;

class TapeDemoCommandTest {

    @Test
    // ×1000, not faster: the simulated mount timeout (15 min) must stay far above a loaded machine's scheduling stalls
    void theDemoMountsReadsAndDismountsWithMatchingChecksums() {
        PrintStream old = System.out;
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        int code;
        try {
            System.setOut(new PrintStream(buf, true));
            code = Main.run("tape-demo", "--scale", "1000", "--drives", "2", "--volumes", "3", "--files", "2");
        } finally {
            System.setOut(old);
        }
        String out = buf.toString();
        assertThat(code).as(out).isZero();
        assertThat(out).contains("drive01 mounted DEMO01", "drive02 mounted DEMO02", "dismounted DEMO03",
                "Done: 3 mounts, 6 files", "checksums all match");
    }

    @Test
    void badOptionsAreRefused() {
        assertThat(Main.run("tape-demo", "--drives", "0")).isEqualTo(2);
    }
}
