package dev.stagehand.archive;

import java.nio.file.Path;
import java.time.Instant;

/**
 * Published (as a Spring application event, after the commit that made it so) when every tape copy of a
 * file is written and its segments are in the catalog. The file is still in the buffer at {@code path}
 * until it becomes evictable and is evicted. Events are not durable: after a restart, use
 * {@link ArchiveBuffer#archivedSince} to catch up.
 *
 * @param fileId     catalog id
 * @param datasetId  catalog id of its dataset
 * @param name       logical file name
 * @param path       where it is in the landing buffer
 * @param sizeBytes  size
 * @param adler32    Adler32, eight lower-case hex digits
 * @param archivedAt when the last copy was confirmed
 */
public record FileArchived(long fileId, long datasetId, String name, Path path, long sizeBytes, String adler32,
                           Instant archivedAt) {}
