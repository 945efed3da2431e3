package dev.stagehand.tape;

import java.nio.file.Path;

/**
 * One file to read from the mounted volume.
 *
 * @param fileId           catalog id of the file
 * @param fileName         logical file name
 * @param volume           label of the volume it is read from
 * @param offsetBytes      byte offset of the file's first byte on the volume
 * @param sizeBytes        file size
 * @param target           where the bytes go (a reserved cache slot)
 * @param targetedMetadata what a client addressed to this site for the file (a JSON object: WLCG
 *                         targetedMetadata, e.g. an activity), for the tape system; null when none
 */
public record SegmentRead(long fileId, String fileName, String volume, long offsetBytes, long sizeBytes, Path target,
                          String targetedMetadata) {

    public SegmentRead(long fileId, String fileName, String volume, long offsetBytes, long sizeBytes, Path target) {
        this(fileId, fileName, volume, offsetBytes, sizeBytes, target, null);
    }
}
