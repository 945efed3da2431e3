package dev.stagehand.recall.scheduler;

import dev.stagehand.recall.scheduler.RecallEngine.Drive;
import dev.stagehand.tape.ReadBatch;
import dev.stagehand.tape.ReadResult;
import dev.stagehand.tape.SegmentRead;
import dev.stagehand.tape.TapeFailure;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * One read list of a drive: its segments in tape order (the files, and the gaps between them worth reading
 * through), and once the library has it, the segments whose outcome the {@link RecallEngine} has not recorded
 * yet. Part of the engine: used only under the engine's monitor, no lock of its own.
 */
final class ReadList {

    /** Segment id and name of a gap read through (no file: its bytes are dropped). */
    static final long GAP_ID = -1;
    static final String GAP_NAME = "(gap read through)";

    final Drive drive;
    final List<SegmentRead> segments;
    /** Per segment, its file and cache slot; null for a gap read through. */
    final List<FileWork> files;
    final List<Staging.Slot> slots;
    /** The library's handle on the list, once handed to it ({@link #handedTo}). */
    ReadBatch batch;
    final Set<SegmentRead> done = new HashSet<>();
    int open;
    boolean cut;

    private ReadList(Drive drive, List<SegmentRead> segments, List<FileWork> files, List<Staging.Slot> slots) {
        this.drive = drive;
        this.segments = segments;
        this.files = files;
        this.slots = slots;
        this.open = segments.size();
    }

    /**
     * The read list of {@code files} (in this order, with their slots) on the drive's volume from its head,
     * gaps read through where that is quicker ({@code readThrough}: the library reads without a target).
     */
    static ReadList of(Drive d, String volume, List<FileWork> files, List<Staging.Slot> slots, boolean readThrough,
                       CostModel cost) {
        List<SegmentRead> segments = new ArrayList<>(files.size());
        List<FileWork> owners = new ArrayList<>(files.size());
        List<Staging.Slot> ownerSlots = new ArrayList<>(files.size());
        long h = d.head;
        long moved = d.moved;
        for (FileWork f : files) moved += f.sizeBytes;
        for (int i = 0; i < files.size(); i++) {
            FileWork f = files.get(i);
            long o = f.offsetOn(volume);
            if (readThrough && worthReadingThrough(cost, h, o, moved)) {
                moved += o - h;
                // streaming over the unrequested bytes before this file is quicker than a locate to it
                segments.add(new SegmentRead(GAP_ID, GAP_NAME, volume, h, o - h, null));
                owners.add(null);
                ownerSlots.add(null);
            }
            segments.add(new SegmentRead(f.id, f.name, volume, o, f.sizeBytes, slots.get(i).target(), f.targetedMetadata));
            owners.add(f);
            ownerSlots.add(slots.get(i));
            h = o + f.sizeBytes;
        }
        return new ReadList(d, segments, owners, ownerSlots);
    }

    /**
     * A gap is read through when streaming over it saves more than it may add to the rewind at dismount
     * (the rewind grows with the bytes a mount moved, and gap bytes count).
     */
    private static boolean worthReadingThrough(CostModel cost, long from, long to, long moved) {
        if (!cost.readThrough(from, to)) return false;
        double saving = cost.locateSeconds(from, to) - cost.readSeconds(to - from);
        return saving > cost.dismountSeconds(moved + (to - from)) - cost.dismountSeconds(moved);
    }

    /** The library took the list (or refused it: {@link #refused}). */
    void handedTo(ReadBatch batch) {
        this.batch = batch;
    }

    /** A read list whose every segment has failed with {@code f}. */
    static ReadBatch refused(TapeFailure f) {
        CompletableFuture<ReadResult> failed = CompletableFuture.failedFuture(f);
        return new ReadBatch() {
            @Override public CompletableFuture<ReadResult> result(SegmentRead s) { return failed; }
            @Override public void cancel(SegmentRead s) { }
            @Override public void cancelAll() { }
            @Override public CompletableFuture<Void> done() { return CompletableFuture.completedFuture(null); }
        };
    }

    /**
     * Ends the list after the segment under way: the segments not started yet are dropped (their files
     * go back to the queue, to be planned again with what arrived). Returns whether any was dropped.
     */
    boolean cutAfterCurrent() {
        if (cut) return false;
        int first = 0;
        while (first < segments.size() && done.contains(segments.get(first))) first++;
        if (first + 1 >= segments.size()) return false;
        cut = true;
        for (int i = first + 1; i < segments.size(); i++) {
            if (!done.contains(segments.get(i))) batch.cancel(segments.get(i));
        }
        return true;
    }

    /**
     * Drops the segments of {@code unwanted} files not started yet (the first one not done is under way and
     * ends as it is); each ends cancelled and its file leaves the queue (no open request wants it).
     */
    void cancel(Set<FileWork> unwanted) {
        if (batch == null) return;
        int first = 0;
        while (first < segments.size() && done.contains(segments.get(first))) first++;
        for (int i = first + 1; i < segments.size(); i++) {
            if (unwanted.contains(files.get(i)) && !done.contains(segments.get(i))) batch.cancel(segments.get(i));
        }
    }

    /**
     * One segment's outcome is recorded; returns whether it was the last, which ends the list (the engine
     * then takes the drive back).
     */
    boolean settled(SegmentRead s) {
        done.add(s);
        if (--open == 0) {
            if (drive.reading == this) drive.reading = null;
            return true;
        }
        return false;
    }
}
