package dev.stagehand.tape;

import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.platform.ScaledClock;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every read is told to the listeners exactly once, with the library's clock threads, the copy threads and
 * the callers' callbacks (which call back into the library) all running at once. A race in handing queued
 * events from one thread to another told about 1 in 400 reads twice here (and a file looked read twice
 * to the fault suite's read log).
 */
class EventsToldOnceTest {

    @TempDir
    Path tmp;

    @Test
    void eachReadIsToldOnceUnderConcurrentCallbacks() throws Exception {
        Map<Long, AtomicInteger> told = new ConcurrentHashMap<>();
        LibraryEvents count = new LibraryEvents() {
            @Override
            public void segmentRead(String drive, ReadResult r) {
                told.computeIfAbsent(r.segment().fileId(), k -> new AtomicInteger()).incrementAndGet();
            }
        };
        Random rnd = new Random(7);
        long id = 0;
        try (ScaledClock clock = new ScaledClock(2000);
                SimulatedLibrary lib = SimulatedLibrary.builder(clock).drives(2).accessors(1).root(tmp.resolve("tape"))
                        .events(count).build()) {
            lib.mount("drive01", "V1").get(30, TimeUnit.SECONDS);
            lib.mount("drive02", "V2").get(30, TimeUnit.SECONDS);
            for (int round = 0; round < 40; round++) {
                List<ReadBatch> batches = new ArrayList<>();
                for (String[] dv : new String[][] {{"drive01", "V1"}, {"drive02", "V2"}}) {
                    List<SegmentRead> segments = new ArrayList<>();
                    for (int i = 0; i < 20; i++) {
                        long fid = ++id;
                        segments.add(new SegmentRead(fid, "/f/" + fid, dv[1], (i + 1) * 2_000_000_000L + round,
                                65_536 + rnd.nextInt(200_000), tmp.resolve("cache/" + fid)));
                    }
                    ReadBatch b = lib.read(dv[0], segments);
                    for (SegmentRead s : segments) {
                        b.result(s).whenComplete((r, e) -> {
                            // as the scheduler does: some work, and a call back into the library
                            try {
                                Thread.sleep(fid(s) % 3);
                            } catch (InterruptedException ie) {
                                Thread.currentThread().interrupt();
                            }
                            lib.drives();
                        });
                    }
                    batches.add(b);
                }
                for (ReadBatch b : batches) b.done().get(60, TimeUnit.SECONDS);
            }
        }
        List<Long> twice = new ArrayList<>();
        told.forEach((f, n) -> { if (n.get() != 1) twice.add(f); });
        assertThat(twice).as("reads told more than once").isEmpty();
        assertThat(told).hasSize((int) id);
    }

    private static long fid(SegmentRead s) {
        return s.fileId();
    }
}
