package dev.stagehand.cache;

import java.nio.file.Path;
import java.time.Instant;

/**
 * Accounting of one cache directory, for the console and metrics.
 *
 * @param usedBytes       verified copies
 * @param reservedBytes   open reservations (copies being written)
 * @param pinnedBytes     verified or staging copies held by at least one unexpired pin
 * @param evictableBytes  verified copies without an unexpired pin (freed on demand, least recently used first)
 * @param freeBytes       capacity minus used minus reserved, and no more than its disk's free space minus what
 *                        is reserved in every cache directory on that file system (never negative)
 * @param beyondDiskBytes capacity its disk cannot hold now (its file system has less free space than the
 *                        accounting: data outside the cache, a capacity larger than the disk, or other cache
 *                        directories on the same file system holding it). Directories on one file system share
 *                        its free space: their reservable bytes are not to be added up ({@link DiskCache#reservableBytes()} does not)
 * @param id                 its cache_directory row
 * @param outOfServiceSince  when it was taken out of service ({@link DiskCache#abortNotForced}); null: in service
 * @param outOfServiceReason why; null when in service
 */
public record DirectoryUsage(Path path, long capacityBytes, long usedBytes, long reservedBytes, long pinnedBytes,
                             long evictableBytes, long freeBytes, long cachedFiles, long stagingFiles,
                             long pinnedFiles, long beyondDiskBytes, int id, Instant outOfServiceSince,
                             String outOfServiceReason) {

    /** Whether it takes new copies ({@link DiskCache#putInService} after it was taken out). */
    public boolean inService() {
        return outOfServiceSince == null;
    }

    /**
     * Bytes a reservation could get here now: free plus evictable. Free counted as it is, negative when the
     * directory holds more than its capacity (lowered below what is cached) or its disk allows: evicting first
     * brings it back within them, which frees nothing for a reservation.
     */
    public long reservableBytes() {
        return Math.max(0, capacityBytes - usedBytes - reservedBytes - beyondDiskBytes + evictableBytes);
    }
}
