package dev.stagehand.cache;

import java.util.List;

/**
 * Published (as a Spring application event, after the database change committed) when copies become
 * cached, are refused or removed, or pins are released. The recall scheduler may listen to retry waiting
 * reservations or wake joined stages; the database stays the truth, so polling works too.
 */
public record CacheChanged(Kind kind, List<Long> fileIds) {

    public enum Kind {
        /** Copies verified: requests waiting on these files (joined or not) can proceed. */
        CACHED,
        /** Copies refused on commit (checksum or size mismatch); joined stages must retry. */
        CORRUPT,
        /** Reservations aborted or discarded; joined stages must retry. Space was returned. */
        DISCARDED,
        /** Verified copies evicted to make room. */
        EVICTED,
        /** Verified copies whose file was found gone from disk (start-up inventory): read from tape again. */
        MISSING,
        /** Pins released or expired pins purged: space may have become evictable. */
        RELEASED
    }
}
