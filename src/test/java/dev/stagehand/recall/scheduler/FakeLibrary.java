package dev.stagehand.recall.scheduler;

import dev.stagehand.tape.DriveState;
import dev.stagehand.tape.DriveStatus;
import dev.stagehand.tape.FileWrite;
import dev.stagehand.tape.LibraryLayout;
import dev.stagehand.tape.ReadBatch;
import dev.stagehand.tape.ReadResult;
import dev.stagehand.tape.SegmentRead;
import dev.stagehand.tape.TapeFailure;
import dev.stagehand.tape.TapeLibrary;
import dev.stagehand.tape.WriteBatch;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/** Test-only library on a {@link TestClock} with the model's timings; records what it read. */
final class FakeLibrary implements TapeLibrary {
    private final TestClock clock;
    private final TestCosts costs = new TestCosts();
    private final LibraryLayout layout;
    private final Map<String, String> mounted = new HashMap<>();
    private final Map<String, Long> head = new HashMap<>();
    private final Map<String, Long> moved = new HashMap<>();
    private final List<List<double[]>> accessorMoves = new ArrayList<>();
    final List<SegmentRead> reads = new ArrayList<>();
    final List<String> mounts = new ArrayList<>();
    final Set<String> badSegments = new HashSet<>(); // "volume:fileId"
    /** The next read of each file here ends with the given failure (once), whatever the volume. */
    final Map<Long, RuntimeException> failOnce = new HashMap<>();
    final Set<String> missingVolumes = new HashSet<>(); // mounts fail with VOLUME_UNAVAILABLE
    final Set<String> outOfService = new HashSet<>(); // drives reported DISABLED
    final Set<String> goingDown = new HashSet<>(); // disabled while holding a volume: DISABLED once unloaded
    final List<String> dismounts = new ArrayList<>();
    final Set<String> elsewhere = new HashSet<>(); // drives reported ELSEWHERE (used by another instance)
    int maxConcurrentMoves;
    /** Exchanges another instance sharing the library noted after the engine's look: {@link #reserveMount} counts them. */
    int exchangesNotedElsewhere;
    private final List<double[]> moves = new ArrayList<>();

    FakeLibrary(TestClock clock, int drives, int accessors) {
        this.clock = clock;
        List<String> names = new ArrayList<>();
        for (int i = 0; i < drives; i++) names.add("d" + i);
        this.layout = new LibraryLayout("fake", names, accessors);
        for (int i = 0; i < accessors; i++) accessorMoves.add(new ArrayList<>());
    }

    @Override public LibraryLayout layout() { return layout; }

    @Override
    public boolean reserveMount(String drive, java.util.Collection<String> drives, int budget) {
        return exchangesNotedElsewhere < budget;
    }

    @Override
    public List<DriveStatus> drives() {
        List<DriveStatus> l = new ArrayList<>();
        for (String d : layout.drives()) {
            l.add(new DriveStatus(d, elsewhere.contains(d) ? DriveState.ELSEWHERE : outOfService.contains(d) ? DriveState.DISABLED
                    : mounted.containsKey(d) ? DriveState.MOUNTED_IDLE : DriveState.EMPTY, mounted.get(d), 0, goingDown.contains(d)));
        }
        return l;
    }

    /** Books one accessor move in the earliest gap no earlier than {@code earliest}; returns its end time. */
    private double move(double earliest) {
        double bestStart = Double.POSITIVE_INFINITY;
        int bestAcc = 0;
        for (int a = 0; a < accessorMoves.size(); a++) {
            double start = earliest;
            for (double[] m : accessorMoves.get(a)) { // sorted by start
                if (m[1] <= start) continue;
                if (m[0] >= start + 6.7) break;
                start = m[1];
            }
            if (start < bestStart) { bestStart = start; bestAcc = a; }
        }
        List<double[]> l = accessorMoves.get(bestAcc);
        l.add(new double[] {bestStart, bestStart + 6.7});
        l.sort((x, y) -> Double.compare(x[0], y[0]));
        moves.add(new double[] {bestStart, bestStart + 6.7});
        int overlap = 0;
        for (double[] m : moves) if (m[0] < bestStart + 6.7 - 1e-9 && m[1] > bestStart + 1e-9) overlap++;
        maxConcurrentMoves = Math.max(maxConcurrentMoves, overlap);
        return bestStart + 6.7;
    }

    private CompletableFuture<Void> at(double t) {
        CompletableFuture<Void> f = new CompletableFuture<>();
        clock.schedule(Duration.ofNanos((long) ((t - clock.seconds()) * 1e9)), () -> f.complete(null));
        return f;
    }

    @Override
    public CompletableFuture<Void> mount(String drive, String volume) {
        if (mounted.containsKey(drive)) return CompletableFuture.failedFuture(new IllegalStateException("drive full"));
        if (mounted.containsValue(volume)) return CompletableFuture.failedFuture(new IllegalStateException(volume + " already mounted"));
        if (missingVolumes.contains(volume)) {
            mounts.add(volume);
            return CompletableFuture.failedFuture(new TapeFailure(TapeFailure.Kind.VOLUME_UNAVAILABLE, drive, volume, "not in the library"));
        }
        mounted.put(drive, volume);
        head.put(drive, 0L);
        moved.put(drive, 0L);
        mounts.add(volume);
        double in = move(clock.seconds());
        return at(in + 17);
    }

    /** Segments the engine cancelled, in order. */
    final List<SegmentRead> cancelled = new ArrayList<>();

    /** Whether a cancelled segment not yet started is skipped (as the simulated library does). */
    boolean dropsCancelled = true;

    @Override
    public boolean dropsCancelledReads() {
        return dropsCancelled;
    }

    @Override
    public ReadBatch read(String drive, List<SegmentRead> segments) {
        String vol = mounted.get(drive);
        Map<SegmentRead, CompletableFuture<ReadResult>> fs = new LinkedHashMap<>();
        double t = clock.seconds();
        long h = head.get(drive);
        for (SegmentRead s : segments) {
            if (!s.volume().equals(vol)) throw new IllegalArgumentException(s.volume() + " not in " + drive);
            double loc = costs.locateSeconds(h, s.offsetBytes());
            t += loc + costs.readSeconds(s.sizeBytes());
            h = s.offsetBytes() + s.sizeBytes();
            CompletableFuture<ReadResult> f = new CompletableFuture<>();
            fs.put(s, f);
            boolean bad = badSegments.contains(vol + ":" + s.fileId());
            RuntimeException failure = failOnce.remove(s.fileId());
            long end = h;
            at(t).thenRun(() -> {
                if (f.isCancelled()) return; // dropped before it started: the head never went there
                head.put(drive, end);
                moved.merge(drive, s.sizeBytes(), Long::sum);
                if (failure != null) {
                    f.completeExceptionally(failure);
                } else if (bad) {
                    f.completeExceptionally(new TapeFailure(TapeFailure.Kind.MEDIA_ERROR, drive, vol, "bad block in " + s.fileName()));
                } else {
                    reads.add(s);
                    f.complete(new ReadResult(s, 1L, loc, clock.now(), clock.now()));
                }
            });
        }
        CompletableFuture<Void> done = CompletableFuture.allOf(fs.values().stream()
                .map(f -> f.handle((r, e) -> null)).toArray(CompletableFuture[]::new));
        return new ReadBatch() {
            @Override public CompletableFuture<ReadResult> result(SegmentRead s) { return fs.get(s); }
            @Override public void cancel(SegmentRead s) { cancelled.add(s); fs.get(s).cancel(false); }
            @Override public void cancelAll() { fs.values().forEach(f -> f.cancel(false)); }
            @Override public CompletableFuture<Void> done() { return done; }
        };
    }

    @Override
    public WriteBatch write(String drive, List<FileWrite> files) {
        throw new UnsupportedOperationException("not needed by recall tests");
    }

    /** Disabled drives are reported DISABLED ({@link #outOfService}); enabling one takes it back. */
    @Override
    public void setEnabled(String drive, boolean enabled) {
        if (enabled) {
            outOfService.remove(drive);
            goingDown.remove(drive);
        } else if (mounted.containsKey(drive)) goingDown.add(drive);
        else outOfService.add(drive);
    }

    /** Its drives never fail: a recovery only takes it back into service. */
    @Override
    public CompletableFuture<Void> recover(String drive) {
        outOfService.remove(drive);
        return CompletableFuture.completedFuture(null);
    }

    @Override
    public CompletableFuture<Void> dismount(String drive) {
        double unloaded = clock.seconds() + TestCosts.unload(moved.get(drive));
        double out = move(unloaded);
        dismounts.add(drive + " " + mounted.get(drive));
        return at(out).thenRun(() -> {
            mounted.remove(drive);
            if (goingDown.remove(drive)) outOfService.add(drive);
        });
    }
}
