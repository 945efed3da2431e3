package dev.stagehand.recall.scheduler;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * One file wanted from tape, shared by every request that asks for it: read once, completes them all.
 * Lives on exactly one volume queue at a time (its "home" copy) while queued.
 */
public final class FileWork {

    /** Where the file is in its life. */
    public enum State { QUEUED, CLAIMED, ON_DISK, FAILED }

    final long id;
    final String name;
    final long sizeBytes;
    final List<Copy> copies;
    final String experiment;
    final String dataset;
    final String adler32;
    State state = State.QUEUED;
    double firstArrival;
    int priority = Integer.MIN_VALUE;
    final List<RequestWork> requests = new ArrayList<>(1);
    /** The copy it is queued on or being read from. */
    Copy home;
    /** Volumes whose copy failed for this file. */
    Set<String> failedVolumes;
    String error;
    /** On the {@link FifoPolicy}'s arrival-order queue. */
    boolean inFifo;
    /** Staged copies lost before they were verified (see {@link RecallEngine#MAX_LOST_COPIES}). */
    int lostCopies;
    /** The first targetedMetadata a request addressed to this site for the file (JSON object), or null. */
    String targetedMetadata;

    public FileWork(long id, String name, long sizeBytes, List<Copy> copies, String experiment, String dataset,
                    String adler32) {
        if (copies.isEmpty()) throw new IllegalArgumentException("file " + name + " has no tape copy");
        this.id = id;
        this.name = name;
        this.sizeBytes = sizeBytes;
        this.copies = List.copyOf(copies);
        this.experiment = experiment;
        this.dataset = dataset;
        this.adler32 = adler32;
    }

    public long id() { return id; }
    public String name() { return name; }
    public long sizeBytes() { return sizeBytes; }
    public List<Copy> copies() { return copies; }
    public String experiment() { return experiment; }
    public String dataset() { return dataset; }
    /** Catalog checksum (lower-case hex) or null when unknown. */
    public String adler32() { return adler32; }
    public State state() { return state; }
    /** The highest priority among the open requests that want it (while queued). */
    public int priority() { return priority; }
    public Copy home() { return home; }
    public String error() { return error; }
    public List<RequestWork> requests() { return requests; }
    public String targetedMetadata() { return targetedMetadata; }

    /** Volumes holding a copy. */
    List<String> volumes() {
        List<String> l = new ArrayList<>(copies.size());
        for (Copy c : copies) l.add(c.volume());
        return l;
    }

    long offsetOn(String volume) {
        for (Copy c : copies) if (c.volume().equals(volume)) return c.offsetBytes();
        throw new IllegalArgumentException(name + " has no copy on " + volume);
    }

    boolean usable(Copy c) {
        return failedVolumes == null || !failedVolumes.contains(c.volume());
    }

    void markFailedOn(String volume) {
        if (failedVolumes == null) failedVolumes = new HashSet<>(2);
        failedVolumes.add(volume);
    }
}
