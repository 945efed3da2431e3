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
    /**
     * More of its files are still to be taken in (the service takes a large request in slices, a round each): it
     * does not end, and no volume completes it, until the last slice has come ({@link QueueModel#addFiles}).
     */
    boolean intakePending;
    /** While it is taken in slices: the volumes its slices so far asked for (each counted once: {@link VolumeDemand}). */
    java.util.Set<String> askedVolumes;
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
    public boolean finished() { return remaining == 0 && !intakePending; }
    /** Whether more of its files are still to be taken in (see {@link QueueModel#addFiles}). */
    public boolean intakePending() { return intakePending; }
    /** The one volume whose queued files are all this request still waits for there, or null (none, several, more to come). */
    String completesOn() {
        return intakePending || queuedPerVolume.size() != 1 ? null : queuedPerVolume.keySet().iterator().next();
    }
    public boolean failed() { return failedFiles > 0; }
    public int failedFiles() { return failedFiles; }
    /** Bytes of all its files taken in (they change when some are cancelled or a slice is added: {@link #resetBytes}). */
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
    /** Estimated completion (seconds on the engine's time line), NaN before the first estimate and while it is still taken in. */
    public double eta() { return eta; }
}
