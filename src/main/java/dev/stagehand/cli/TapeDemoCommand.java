package dev.stagehand.cli;

import dev.stagehand.platform.ScaledClock;
import dev.stagehand.tape.LibraryEventPrinter;
import dev.stagehand.tape.LibraryStats;
import dev.stagehand.tape.ReadResult;
import dev.stagehand.tape.SegmentRead;
import dev.stagehand.tape.SimulatedContent;
import dev.stagehand.tape.SimulatedLibrary;
import dev.stagehand.tape.TapeModel;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Shows the simulated LTO-9 library at work on the scaled clock, without a database: drives wait for the
 * accessor, mount, locate and read real bytes (checked against their expected Adler32), unload, dismount.
 */
@Command(name = "tape-demo", mixinStandardHelpOptions = true,
        description = "Show the simulated tape library mounting and reading on the scaled clock (no database).")
final class TapeDemoCommand implements java.util.concurrent.Callable<Integer> {

    @Option(names = "--drives", defaultValue = "3", description = "drives (default ${DEFAULT-VALUE})")
    int drives;

    @Option(names = "--accessors", defaultValue = "1", description = "robot accessors (default ${DEFAULT-VALUE})")
    int accessors;

    @Option(names = "--volumes", defaultValue = "5", description = "volumes to read (default ${DEFAULT-VALUE})")
    int volumes;

    @Option(names = "--files", defaultValue = "4", description = "files per volume (default ${DEFAULT-VALUE})")
    int files;

    @Option(names = "--scale", defaultValue = "60", description = "clock speed-up (default ${DEFAULT-VALUE}: an hour in a minute)")
    double scale;

    @Option(names = "--seed", defaultValue = "1", description = "random seed of the file layout")
    long seed;

    @Override
    public Integer call() throws Exception {
        if (drives < 1 || accessors < 1 || volumes < 1 || files < 1 || !(scale > 0)) {
            System.err.println("tape-demo: --drives, --accessors, --volumes, --files must be >= 1 and --scale > 0");
            return 2;
        }
        Path work = Files.createTempDirectory("stagehand-tape-demo");
        try (ScaledClock clock = new ScaledClock(scale)) {
            TapeModel model = TapeModel.lto9();
            java.time.Instant start = clock.now();
            ConcurrentLinkedQueue<List<SegmentRead>> queue = new ConcurrentLinkedQueue<>();
            SplittableRandom r = new SplittableRandom(seed);
            for (int v = 1; v <= volumes; v++) {
                List<SegmentRead> segs = new ArrayList<>();
                String vol = String.format("DEMO%02d", v);
                for (int f = 1; f <= files; f++) {
                    String name = String.format("/demo/%s/file%02d.dat", vol, f);
                    long size = (4 + r.nextInt(28)) * 1_000_000L;
                    long offset = r.nextLong(model.capacityBytes() - size);
                    segs.add(new SegmentRead(v * 1000L + f, name, vol, offset, size, work.resolve("cache" + name)));
                }
                // simple serpentine-friendly order for the demo: by wrap, then along each wrap's direction
                segs.sort(Comparator.comparingInt((SegmentRead s) -> model.wrap(s.offsetBytes()))
                        .thenComparingLong(SegmentRead::offsetBytes));
                queue.add(segs);
            }
            System.out.printf("Simulated LTO-9 library: %d drives, %d accessor(s), clock x%.0f; %d volumes x %d files%n",
                    drives, accessors, scale, volumes, files);
            start = clock.now();
            SimulatedLibrary lib = SimulatedLibrary.builder(clock).drives(drives).accessors(accessors)
                    .root(work.resolve("tape")).events(new LibraryEventPrinter(System.out, start, false)).build();
            AtomicInteger bad = new AtomicInteger();
            List<CompletableFuture<Void>> drivesDone = new ArrayList<>();
            for (String d : lib.layout().drives()) drivesDone.add(serve(lib, d, queue, bad));
            CompletableFuture.allOf(drivesDone.toArray(CompletableFuture[]::new)).get(1, TimeUnit.HOURS);
            LibraryStats s = lib.stats();
            System.out.printf("Done: %d mounts, %d files (%.0f MB) read, checksums %s; tape time %.0f s: locate %.0f s, "
                            + "read %.1f s, accessor busy %.0f s%n", s.mounts(), s.segmentsRead(), s.bytesRead() / 1e6,
                    bad.get() == 0 ? "all match" : bad.get() + " MISMATCHED",
                    java.time.Duration.between(start, clock.now()).toMillis() / 1e3,
                    s.locateSeconds(), s.readSeconds(), s.accessorBusySeconds());
            lib.close();
            return bad.get() == 0 ? 0 : 1;
        } finally {
            deleteTree(work);
        }
    }

    /** One drive: take the next volume, mount, read its list, dismount, repeat. */
    private static CompletableFuture<Void> serve(SimulatedLibrary lib, String drive,
            ConcurrentLinkedQueue<List<SegmentRead>> queue, AtomicInteger bad) {
        List<SegmentRead> segs = queue.poll();
        if (segs == null) return CompletableFuture.completedFuture(null);
        return lib.mount(drive, segs.get(0).volume())
                .thenCompose(v -> {
                    var batch = lib.read(drive, segs);
                    for (SegmentRead s : segs)
                        batch.result(s).thenAccept((ReadResult res) -> {
                            if (res.adler32() != SimulatedContent.adler32(s.fileName(), s.sizeBytes())) bad.incrementAndGet();
                        });
                    return batch.done();
                })
                .thenCompose(v -> lib.dismount(drive))
                .thenCompose(v -> serve(lib, drive, queue, bad));
    }

    private static void deleteTree(Path p) throws IOException {
        if (!Files.exists(p)) return;
        try (Stream<Path> all = Files.walk(p)) {
            for (Path x : all.sorted(Comparator.reverseOrder()).toList()) Files.deleteIfExists(x);
        }
    }
}
