package dev.stagehand.tape;

import java.util.concurrent.CompletableFuture;

/** A write list under way on one drive; each file completes (its segment is known) or fails on its own. */
public interface WriteBatch {

    /** Completes with where the file landed on the volume; fails with a {@link TapeFailure}. */
    CompletableFuture<WrittenSegment> result(FileWrite file);

    /** Cancels every file not yet written. */
    void cancelAll();

    /**
     * Completes when every file has been written, failed or been cancelled, and the drive is free for the
     * next read, write or dismount. A file's own future may complete earlier.
     */
    CompletableFuture<Void> done();

    /**
     * @param file        what was written
     * @param volume      the volume it is on
     * @param offsetBytes its offset on the volume
     * @param adler32     Adler32 of the bytes written
     * @param verified    whether the library reported {@code adler32} for what it wrote; false when it is the
     *                    source file's sum taken here (a site script that reports none): nothing confirms the
     *                    bytes on the volume
     */
    record WrittenSegment(FileWrite file, String volume, long offsetBytes, long adler32, boolean verified) {}
}
