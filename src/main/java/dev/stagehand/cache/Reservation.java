package dev.stagehand.cache;

import java.nio.file.Path;
import java.time.Instant;

/**
 * Space held in one cache directory for one file being written. The writer writes {@code path} (its parent
 * directory exists), then calls {@link DiskCache#commit} with the Adler32 it measured, or
 * {@link DiskCache#abort} if the read failed.
 *
 * @param id        reservation id (what commit and abort take)
 * @param fileId    catalog file id
 * @param copyId    id of the cached copy being written
 * @param path      where to write the file
 * @param sizeBytes bytes reserved (the file's size)
 * @param node      the service instance that made it
 */
public record Reservation(long id, long fileId, long copyId, Path path, long sizeBytes, String node, Instant createdAt) {}
