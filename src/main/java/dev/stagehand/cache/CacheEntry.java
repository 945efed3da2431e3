package dev.stagehand.cache;

import java.nio.file.Path;
import java.time.Instant;

/**
 * A file's live copy in the cache.
 *
 * @param state         {@code CACHED}: verified, may be handed to movers; {@code STAGING}: space reserved and
 *                      being written, not readable yet (join it)
 * @param adler32       the verified checksum (null while staging)
 * @param reservationId the open reservation while staging, else null
 */
public record CacheEntry(long fileId, State state, Path path, long sizeBytes, String adler32, Long reservationId,
                         Instant lastAccess) {

    public enum State { CACHED, STAGING }

    public boolean cached() {
        return state == State.CACHED;
    }
}
