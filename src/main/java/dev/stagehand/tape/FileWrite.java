package dev.stagehand.tape;

import java.nio.file.Path;

/**
 * One file to append to the mounted volume.
 *
 * @param fileId    catalog id of the file
 * @param fileName  logical file name
 * @param source    where its bytes are (the landing buffer)
 * @param sizeBytes file size
 */
public record FileWrite(long fileId, String fileName, Path source, long sizeBytes) {}
