package dev.stagehand.cache;

/**
 * What {@link DiskCache#reserve} did for one requested file.
 *
 * @param reservation for {@code RESERVED}: the new reservation; for {@code IN_FLIGHT}: the reservation of the
 *                    stage already running (join it: wait for the file to be cached instead of reading it again)
 * @param cached      for {@code CACHED}: the verified copy on disk
 */
public record ReserveResult(long fileId, Outcome outcome, Reservation reservation, CacheEntry cached) {

    public enum Outcome {
        /** Space reserved: read the file from tape into {@code reservation.path()}. */
        RESERVED,
        /** A verified copy is on disk already: answer the request at once (its access time was updated). */
        CACHED,
        /** Another stage of this file is being written: join it, do not read the tape again. */
        IN_FLIGHT,
        /** Not enough free or evictable space now: wait for space to free up (nothing failed, nothing held). */
        NO_SPACE,
        /** Larger than every cache directory: it can never be staged here. */
        TOO_LARGE,
        /** No such file in the catalog. */
        UNKNOWN_FILE
    }

    public boolean reserved() {
        return outcome == Outcome.RESERVED;
    }
}
