package dev.stagehand.tape;

import java.util.concurrent.CompletableFuture;

/**
 * A read list under way on one drive. Segments are read in the order given; each completes on its own,
 * so the caller can hand a file on as soon as it is on disk.
 */
public interface ReadBatch {

    /**
     * Completes when this segment's bytes are in its target and forced to disk (fsync of the file and its
     * directory, {@link dev.stagehand.platform.Durable}): the caller commits the copy as cached at once. Fails with a
     * {@link TapeFailure}, or untyped when the target could not be written or forced (the file is read again); not
     * forced, with {@link dev.stagehand.platform.Durable.NotForced}, which the cache counts against its directory.
     */
    CompletableFuture<ReadResult> result(SegmentRead segment);

    /** Drops a segment not yet started (its future is cancelled); a segment being read is abandoned. */
    void cancel(SegmentRead segment);

    /** Cancels every segment not yet finished; the drive stays mounted. */
    void cancelAll();

    /**
     * Completes when every segment has completed, failed or been cancelled, and the drive is free for the
     * next read, write or dismount. A segment's own future may complete earlier.
     */
    CompletableFuture<Void> done();
}
