package dev.stagehand.tape;

import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.platform.ScaledClock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** On a scaled clock bytes are copied on worker threads while the clock times the transfer. */
class ScaledClockLibraryTest {

    @TempDir
    Path tmp;

    @Test
    void mountReadWriteAndDismountOnAScaledClock() throws Exception {
        try (ScaledClock clock = new ScaledClock(2000);
                SimulatedLibrary lib = SimulatedLibrary.builder(clock).drives(2).accessors(1).root(tmp.resolve("tape")).build()) {
            long size = 5_000_000;
            SegmentRead s = new SegmentRead(1, "/scaled/a", "S1", 1_000_000_000L, size, tmp.resolve("cache/a"));
            var started = clock.now();
            ReadResult r = lib.mount("drive01", "S1")
                    .thenCompose(v -> lib.read("drive01", List.of(s)).result(s))
                    .get(30, TimeUnit.SECONDS);
            assertThat(r.adler32()).isEqualTo(SimulatedContent.adler32("/scaled/a", size));
            assertThat(Files.size(s.target())).isEqualTo(size);
            // at least mount + locate + read of clock time passed
            double min = lib.model().mountSeconds() + lib.model().locateFromBotSeconds(s.offsetBytes());
            assertThat(Duration.between(started, r.finishedAt()).toMillis() / 1e3).isGreaterThanOrEqualTo(min);

            Path src = tmp.resolve("src");
            Files.write(src, new byte[] {9, 8, 7});
            FileWrite w = new FileWrite(2, "/scaled/w", src, 3);
            WriteBatch.WrittenSegment ws = lib.write("drive01", List.of(w)).result(w).get(30, TimeUnit.SECONDS);
            assertThat(ws.offsetBytes()).isZero();
            lib.dismount("drive01").get(30, TimeUnit.SECONDS);
            assertThat(lib.drive("drive01").state()).isEqualTo(DriveState.EMPTY);
        }
    }
}
