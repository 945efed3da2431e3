package dev.stagehand.recall.scheduler;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * The files queued on one volume with aggregates kept up to date on every change, so a scheduling pass
 * costs O(volumes), not O(files).
 */
public final class VolumeQueue {

    final String label;
    /** Insertion (arrival) order: the first entry is the oldest. */
    final LinkedHashMap<Long, FileWork> files = new LinkedHashMap<>();
    long bytes;
    /** Queued files by offset on this volume, to count runs (files lying back to back) incrementally. */
    private final TreeMap<Long, FileWork> byOffset = new TreeMap<>();
    private int adjacencies;
    /** Bumped on every change; caches of planned locate time compare against it. */
    int version;
    int cachedVersion = -1;
    double cachedLocateSeconds;
    int cachedTourVersion = -1;
    double cachedTourSeconds;
    /** Set by {@link MountPlanner#progress} in each pass's ranking (0 when the volume completes a request). */
    double progress, shortProgress;
    /** Requests whose every still-queued file is on this volume: a mount here completes them. */
    int completable;
    private final int[] priorityCounts = new int[PRIORITY_SPAN];
    /** Counts of priorities outside the array's span (rare), so lowering one is seen too. */
    private final TreeMap<Integer, Integer> outOfRange = new TreeMap<>();
    final Map<String, Long> bytesPerExperiment = new HashMap<>(2);
    final Map<String, Integer> filesPerExperiment = new HashMap<>(2);

    static final int PRIORITY_MIN = -16;
    static final int PRIORITY_SPAN = 64;

    VolumeQueue(String label) {
        this.label = label;
    }

    public String label() { return label; }
    public int fileCount() { return files.size(); }
    public long bytes() { return bytes; }
    public int completable() { return completable; }
    public boolean isEmpty() { return files.isEmpty(); }
    /** Runs: maximal sets of queued files lying back to back (each after the first needs a locate). */
    public int runs() { return files.size() - adjacencies; }

    /** Arrival of the oldest queued file (seconds), or +inf when empty. */
    public double oldestArrival() {
        return files.isEmpty() ? Double.POSITIVE_INFINITY : files.firstEntry().getValue().firstArrival;
    }

    public int maxPriority() {
        int high = outOfRange.isEmpty() ? Integer.MIN_VALUE : outOfRange.lastKey();
        if (high >= PRIORITY_MIN + PRIORITY_SPAN) return high;
        for (int i = PRIORITY_SPAN - 1; i >= 0; i--) if (priorityCounts[i] > 0) return i + PRIORITY_MIN;
        return files.isEmpty() || high == Integer.MIN_VALUE ? 0 : high;
    }

    /** The experiment with most queued bytes here (a volume belongs to one tape pool in practice). */
    public String experiment() {
        String best = null;
        long b = -1;
        for (var e : bytesPerExperiment.entrySet()) if (e.getValue() > b) { b = e.getValue(); best = e.getKey(); }
        return best;
    }

    void add(FileWork f) {
        files.put(f.id, f);
        version++;
        long o = f.home.offsetBytes();
        if (byOffset.putIfAbsent(o, f) == null) {
            var prev = byOffset.lowerEntry(o);
            if (prev != null && prev.getKey() + prev.getValue().sizeBytes == o) adjacencies++;
            var next = byOffset.higherEntry(o);
            if (next != null && o + f.sizeBytes == next.getKey()) adjacencies++;
        }
        bytes += f.sizeBytes;
        countPriority(f.priority, 1);
        bytesPerExperiment.merge(f.experiment, f.sizeBytes, Long::sum);
        filesPerExperiment.merge(f.experiment, 1, Integer::sum);
    }

    void remove(FileWork f) {
        if (files.remove(f.id) == null) return;
        version++;
        long o = f.home.offsetBytes();
        if (byOffset.get(o) == f) {
            var prev = byOffset.lowerEntry(o);
            if (prev != null && prev.getKey() + prev.getValue().sizeBytes == o) adjacencies--;
            var next = byOffset.higherEntry(o);
            if (next != null && o + f.sizeBytes == next.getKey()) adjacencies--;
            byOffset.remove(o);
        }
        bytes -= f.sizeBytes;
        countPriority(f.priority, -1);
        if (bytesPerExperiment.merge(f.experiment, -f.sizeBytes, Long::sum) <= 0) bytesPerExperiment.remove(f.experiment);
        if (filesPerExperiment.merge(f.experiment, -1, Integer::sum) <= 0) filesPerExperiment.remove(f.experiment);
    }

    void reprioritise(FileWork f, int from, int to) {
        countPriority(from, -1);
        countPriority(to, 1);
    }

    private void countPriority(int p, int d) {
        int i = p - PRIORITY_MIN;
        if (i >= 0 && i < PRIORITY_SPAN) priorityCounts[i] += d;
        else if (outOfRange.merge(p, d, Integer::sum) <= 0) outOfRange.remove(p);
    }
}
