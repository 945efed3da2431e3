package dev.stagehand.tape;

import java.util.Map;

/**
 * What a simulated library has done so far, for simulation metrics (tape-model.md): mounts, positioning,
 * reading, accessor and drive occupancy. All times in seconds on the library's clock.
 *
 * @param mounts              mounts completed
 * @param dismounts           dismounts completed
 * @param segmentsRead        segments read successfully
 * @param bytesRead           bytes of those segments
 * @param segmentsFailed      segments that failed (any kind)
 * @param filesWritten        files appended
 * @param bytesWritten        bytes of those files
 * @param locateSeconds       time spent positioning (reads and writes)
 * @param readSeconds         time spent reading
 * @param writeSeconds        time spent writing
 * @param accessorBusySeconds total time accessors spent moving cartridges (over all accessors)
 * @param accessorWaitSeconds total time moves waited for a free accessor
 * @param drives              per drive
 */
public record LibraryStats(
        long mounts,
        long dismounts,
        long segmentsRead,
        long bytesRead,
        long segmentsFailed,
        long filesWritten,
        long bytesWritten,
        double locateSeconds,
        double readSeconds,
        double writeSeconds,
        double accessorBusySeconds,
        double accessorWaitSeconds,
        Map<String, DriveStats> drives) {

    /**
     * @param mounts        mounts completed on this drive
     * @param busySeconds   time mounting, locating, reading, writing or unloading (incl. waits for an accessor)
     * @param locateSeconds time positioning
     * @param readSeconds   time reading
     * @param bytesRead     bytes read
     */
    public record DriveStats(long mounts, double busySeconds, double locateSeconds, double readSeconds, long bytesRead) {}
}
