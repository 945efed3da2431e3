package dev.stagehand.tape;

import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.platform.ScaledClock;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A segment's outcome is decided under the library's lock and told to its future once the lock is free, on
 * the thread that decided it. A dismount (or a drive failure) on another thread in between must not
 * overturn it: a read reported done would else reach the caller as cancelled, its verified copy thrown
 * away and the file read again. The thread telling the outcome is held at the read event (told before the
 * future) while the other thread dismounts.
 */
class DecidedOutcomeTest {

    @TempDir
    Path tmp;

    @Test
    void aReadThatFinishedIsNotCancelledByADismountBeforeItsFutureIsTold() throws Exception {
        CountDownLatch readDecided = new CountDownLatch(1);
        CountDownLatch dismounted = new CountDownLatch(1);
        LibraryEvents holdAtFirstRead = new LibraryEvents() {
            @Override
            public void segmentRead(String drive, ReadResult result) {
                if (result.segment().fileId() != 1) return;
                readDecided.countDown();
                try {
                    dismounted.await(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        };
        try (ScaledClock clock = new ScaledClock(20);
                SimulatedLibrary lib = SimulatedLibrary.builder(clock).drives(1).accessors(1).root(tmp.resolve("tape"))
                        .events(holdAtFirstRead).build()) {
            SegmentRead first = new SegmentRead(1, "/held/a", "H1", 1_000_000_000L, 1_000_000, tmp.resolve("cache/a"));
            SegmentRead second = new SegmentRead(2, "/held/b", "H1", 5_000_000_000_000L, 1_000_000, tmp.resolve("cache/b"));
            lib.mount("drive01", "H1").get(30, TimeUnit.SECONDS);
            ReadBatch batch = lib.read("drive01", List.of(first, second));
            assertThat(readDecided.await(30, TimeUnit.SECONDS)).isTrue();
            // the first read is decided (its event is being told), its future not yet; the second is locating
            // (a long way: ~30 s of tape time, 1.5 s at this scale)
            CompletableFuture<Void> dismount = lib.dismount("drive01");
            dismounted.countDown();

            ReadResult r = batch.result(first).get(30, TimeUnit.SECONDS);
            assertThat(r.adler32()).isEqualTo(SimulatedContent.adler32("/held/a", 1_000_000));
            // the second was broken off by the dismount (or, on a slow machine, had finished before it)
            assertThat(batch.done()).succeedsWithin(30, TimeUnit.SECONDS);
            dismount.get(30, TimeUnit.SECONDS);
        }
    }
}
