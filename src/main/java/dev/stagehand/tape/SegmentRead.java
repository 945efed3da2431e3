package dev.stagehand.tape;

import java.nio.file.Path;

/**
 * One file to read from the mounted volume.
 *
 * @param fileId      catalog id of the file
 * @param fileName    logical file name
 * @param volume      label of the volume it is read from
 * @param offsetBytes byte offset of the file's first byte on the volume
 * @param sizeBytes   file size
 * @param target      where the bytes go (a reserved cache slot)
 */
public record SegmentRead(long fileId, String fileName, String volume, long offsetBytes, long sizeBytes, Path target) {}
