package dev.stagehand.recall.scheduler;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** A recall request as the scheduler sees it: done when its last file is on disk. */
public final class RequestWork {

    final String id;
    final double arrival;
    int priority;
    final String experiment;
    final List<FileWork> files = new ArrayList<>();
    int remaining;
    int failedFiles;
    double completedAt = Double.NaN;
    double eta = Double.NaN;
    /** Scratch mark of {@link MountPlanner#progress}: the last call that counted this request. */
    long progressVisit;
    private long bytes = -1;
    /** Files of this request still queued, per home volume: when one volume is left, that volume completes it. */
    final Map<String, Integer> queuedPerVolume = new HashMap<>(4);
    /** Files of this request being read (claimed), per volume: its ETA waits for those volumes too. */
    final Map<String, Integer> claimedPerVolume = new HashMap<>(4);

    RequestWork(String id, double arrival, int priority, String experiment) {
        this.id = id;
        this.arrival = arrival;
        this.priority = priority;
        this.experiment = experiment;
    }

    public String id() { return id; }
    /** Arrival, seconds on the engine's time line. */
    public double arrival() { return arrival; }
    public int priority() { return priority; }
    public List<FileWork> files() { return files; }
    public boolean finished() { return remaining == 0; }
    public boolean failed() { return failedFiles > 0; }
    public int failedFiles() { return failedFiles; }
    /** Bytes of all its files (its files change only when some are cancelled: {@link #resetBytes}). */
    public long bytes() {
        if (bytes < 0) {
            long b = 0;
            for (FileWork f : files) b += f.sizeBytes;
            bytes = b;
        }
        return bytes;
    }
    void resetBytes() { bytes = -1; }
    /** Completion time (seconds on the engine's time line), NaN while open. */
    public double completedAt() { return completedAt; }
    /** Estimated completion (seconds on the engine's time line), NaN before the first estimate. */
    public double eta() { return eta; }
}
