package dev.stagehand.bench;

import dev.stagehand.platform.VirtualClock;
import dev.stagehand.tape.LibraryStats;
import dev.stagehand.tape.SegmentRead;
import dev.stagehand.tape.SimulatedLibrary;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Event throughput of the simulated library on the virtual clock: a naive FIFO driver (each free drive
 * mounts the next volume, reads its files in offset order, dismounts) over a synthetic catalogue of
 * {@code files} files of ~1.8 GB on {@code volumes} tapes. Prints wall time per simulated file; the recall
 * scheduler's simulate must replay 100,000 files in under 60 s, so the library's share must be small.
 * Args: files volumes drives accessors.
 */
public final class TapeSimBench {

    public static void main(String[] args) {
        int files = args.length > 0 ? Integer.parseInt(args[0]) : 100_000;
        int volumes = args.length > 1 ? Integer.parseInt(args[1]) : 2_000;
        int drives = args.length > 2 ? Integer.parseInt(args[2]) : 8;
        int accessors = args.length > 3 ? Integer.parseInt(args[3]) : 2;
        SplittableRandom rnd = new SplittableRandom(42);
        List<List<SegmentRead>> perVolume = new ArrayList<>();
        for (int v = 0; v < volumes; v++) perVolume.add(new ArrayList<>());
        long[] eod = new long[volumes];
        long bytes = 0;
        for (int i = 0; i < files; i++) {
            int v = rnd.nextInt(volumes);
            long size = 200_000_000L + rnd.nextLong(3_200_000_000L);
            long gap = rnd.nextInt(4) == 0 ? rnd.nextLong(50_000_000_000L) : 0; // runs with holes between
            eod[v] += gap;
            perVolume.get(v).add(new SegmentRead(i, "/bench/f" + i, String.format("B%05d", v), eod[v], size, null));
            eod[v] += size;
            bytes += size;
        }
        VirtualClock clock = new VirtualClock();
        SimulatedLibrary lib = SimulatedLibrary.builder(clock).drives(drives).accessors(accessors)
                .root(Path.of("target/bench-tape")).build();
        AtomicInteger nextVolume = new AtomicInteger();
        long t0 = System.nanoTime();
        for (String d : lib.layout().drives()) serve(lib, d, perVolume, nextVolume);
        long events = clock.runUntilIdle();
        double wall = (System.nanoTime() - t0) / 1e9;
        LibraryStats s = lib.stats();
        System.out.printf("simulated %d files, %.1f TB on %d volumes, %d drives, %d accessors%n", files, bytes / 1e12,
                volumes, drives, accessors);
        System.out.printf("makespan %.0f s simulated (%.1f days), mounts %d, locate %.0f s, read %.0f s, accessor busy %.0f s%n",
                clock.elapsedSeconds(), clock.elapsedSeconds() / 86400, s.mounts(), s.locateSeconds(), s.readSeconds(),
                s.accessorBusySeconds());
        System.out.printf("wall %.2f s for %d clock events (%.2f us/event, %.2f us/file); budget for the whole simulate: 60 s%n",
                wall, events, wall * 1e6 / events, wall * 1e6 / files);
    }

    private static void serve(SimulatedLibrary lib, String drive, List<List<SegmentRead>> perVolume, AtomicInteger next) {
        int v = next.getAndIncrement();
        if (v >= perVolume.size()) return;
        List<SegmentRead> segs = perVolume.get(v);
        if (segs.isEmpty()) {
            serve(lib, drive, perVolume, next);
            return;
        }
        lib.mount(drive, segs.get(0).volume())
                .thenCompose(x -> lib.read(drive, segs).done())
                .thenCompose(x -> lib.dismount(drive))
                .thenRun(() -> serve(lib, drive, perVolume, next));
    }
}
