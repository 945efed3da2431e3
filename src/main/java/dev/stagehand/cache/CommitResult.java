package dev.stagehand.cache;

import java.nio.file.Path;

/**
 * What {@link DiskCache#commit} found.
 *
 * @param expectedAdler32 the catalog's checksum (null if the catalog had none)
 * @param measuredAdler32 what the writer measured
 * @param reason          why the copy was refused, for {@code CORRUPT} and {@code UNKNOWN_RESERVATION}
 */
public record CommitResult(long fileId, Outcome outcome, Path path, String expectedAdler32, String measuredAdler32,
                           String reason) {

    public enum Outcome {
        /** Checksum matches the catalog: the copy is cached and may be handed out. */
        VERIFIED,
        /** The catalog had no checksum: the measured one is now recorded there and the copy is cached. */
        VERIFIED_RECORDED,
        /**
         * Checksum or size mismatch: the copy was deleted and its space returned; it was never visible as
         * cached. The caller marks the tape segment suspect and retries from another copy, or fails the file
         * with {@link #reason()}.
         */
        CORRUPT,
        /** The reservation no longer exists (aborted, or discarded by recovery): nothing was cached. */
        UNKNOWN_RESERVATION
    }

    public boolean verified() {
        return outcome == Outcome.VERIFIED || outcome == Outcome.VERIFIED_RECORDED;
    }
}
