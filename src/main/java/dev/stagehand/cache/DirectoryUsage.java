package dev.stagehand.cache;

import java.nio.file.Path;

/**
 * Accounting of one cache directory, for the console and metrics.
 *
 * @param usedBytes       verified copies
 * @param reservedBytes   open reservations (copies being written)
 * @param pinnedBytes     verified or staging copies held by at least one unexpired pin
 * @param evictableBytes  verified copies without an unexpired pin (freed on demand, least recently used first)
 * @param freeBytes       capacity minus used minus reserved, and no more than its disk's free space minus
 *                        reserved (never negative)
 */
public record DirectoryUsage(Path path, long capacityBytes, long usedBytes, long reservedBytes, long pinnedBytes,
                             long evictableBytes, long freeBytes, long cachedFiles, long stagingFiles,
                             long pinnedFiles) {

    /** Bytes a reservation could get here now: free plus evictable. */
    public long reservableBytes() {
        return freeBytes + evictableBytes;
    }
}
