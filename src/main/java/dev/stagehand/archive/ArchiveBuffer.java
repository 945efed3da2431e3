package dev.stagehand.archive;

import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * The archive's landing buffer: files registered here are checksummed, entered in the catalog and flushed
 * to tape by file family; they stay in the buffer until archived and released by every
 * {@link EvictionHold}. State lives in PostgreSQL ({@code archive_file}, {@code archive_copy},
 * {@code archive_volume}).
 */
public interface ArchiveBuffer {

    /**
     * Registers files (all or none): each is checked, checksummed (Adler32, streamed) and entered in the
     * catalog with its dataset, and queued for tape. Registering a file again with the same content
     * returns its status without change (once it was evicted too: its name, path, size and the checksum when given
     * are then compared with the registered ones); but a file failed because its buffer file was deleted or changed is
     * queued again once its registered bytes are back (its tape copies failing their checksum need {@link #retry}).
     *
     * @throws ArchiveRejected INVALID or CONFLICT with one error per offending entry; BUFFER_FULL when the
     *                         files would take the buffer past its high-water mark
     */
    List<ArchiveFileStatus> register(List<NewArchiveFile> files);

    /** One registered file's state. */
    Optional<ArchiveFileStatus> file(long fileId);

    /**
     * Writes a {@code failed} file again (once the drive or media that failed it is dealt with): its copies not
     * yet on tape are queued with their attempts counted from zero, in their place in the family's write order.
     *
     * @throws ArchiveRejected NOT_FOUND for an unknown file; CONFLICT when it is not failed, or when its buffer
     *                         file no longer has the registered bytes (writing it again cannot help: {@link #delete} it
     *                         and register it anew)
     */
    ArchiveFileStatus retry(long fileId);

    /**
     * Takes a registered file that is not on tape yet out of the archive (a producer's or operator's cancel): one that
     * is queued or failed, none of its copies being written. Its catalog entry, its copies (their places in the family
     * queue) and any segment of a copy already written go in one commit, so its name and path may be registered anew
     * with other bytes. Its bytes in the landing area are left where they are: they are the producer's (often the very
     * bytes it means to register again). A copy already on tape stays there as dead space on its volume. Stage requests
     * that named it keep it in their file list, under its name, with the state it ended in: finished ones, and open ones
     * whose row of it ended failed or cancelled (the request ends with its other files).
     *
     * @return the file as it was just before it was deleted
     * @throws ArchiveRejected NOT_FOUND for an unknown file; CONFLICT when a copy is being written now (retry once the
     *                         write ends), when every copy is on tape (archived, evictable or evicted: not a cancel) or was (a
     *                         file archived and queued again to make a bad copy again), or
     *                         while a stage request wants it (its row of the file not ended in an open request, or the
     *                         file pinned on disk for it and not released)
     */
    ArchiveFileStatus delete(long fileId);

    /** A registered file by its logical name or by its path in the buffer. */
    Optional<ArchiveFileStatus> fileByName(String nameOrPath);

    /** Where a registered file's bytes are in the buffer, while they are there (until evicted). */
    Optional<Path> locate(long fileId);

    /**
     * The logical names among {@code names} whose bytes are in the buffer (registered, not evicted nor failed):
     * on disk, whether or not on tape yet. What the WLCG {@code archiveinfo} answers as DISK before the flush.
     */
    java.util.Set<String> inBuffer(java.util.Collection<String> names);

    /** Files archived at or after {@code since}, oldest first, at most {@code limit}. */
    List<FileArchived> archivedSince(Instant since, int limit);

    /** Buffer size, usage and counts per state. */
    BufferUsage usage();

    /** The volumes written for a file family (all families when null), in the order they were opened. */
    default List<FamilyVolume> volumes(String family) {
        return volumes(family, null);
    }

    /** As {@link #volumes(String)}, only of families holding files of one of {@code experiments} (null: all). */
    List<FamilyVolume> volumes(String family, Set<String> experiments);

    /** What each family's copy has not yet on tape, with the volume it appends to, oldest waiting first. */
    List<FamilyQueue> queues();

    /** Copies whose last write attempt failed and that are not written yet, most recent first. */
    List<WriteFailure> failures(int limit);

    /**
     * @param family     file family
     * @param copy       copy number
     * @param files      copies queued (including those waiting out a retry backoff)
     * @param bytes      their bytes
     * @param writing    copies being written now
     * @param oldest     registration time of the oldest file not yet on tape
     * @param openVolume volume it appends to, or null (a blank one will be opened)
     * @param writer     the instance writing that volume now (its lease is current), or null
     */
    record FamilyQueue(String family, int copy, long files, long bytes, long writing, Instant oldest, String openVolume,
                       String writer) {}

    /**
     * @param fileId      catalog id
     * @param name        logical name
     * @param family      file family
     * @param copy        copy number
     * @param attempts    failed attempts so far
     * @param error       the last failure
     * @param nextAttempt when the copy may be tried again
     */
    record WriteFailure(long fileId, String name, String family, int copy, int attempts, String error, Instant nextAttempt) {}

    /**
     * A registered file.
     *
     * @param fileId    catalog id
     * @param name      logical name
     * @param path      where it is (or was) in the buffer
     * @param sizeBytes size
     * @param adler32   Adler32 hex
     * @param dataset   dataset name
     * @param family    file family
     * @param storageClass storage class
     * @param state     queued, writing, archived, evictable, evicted, or failed (for good: see {@code error})
     * @param copies    tape copies wanted
     * @param segments  copies written: volume label, offset and fseq
     * @param attempts  failed write attempts so far (all copies)
     * @param error     the last write failure, if any
     * @param registeredAt when registered
     * @param archivedAt   when every copy was confirmed, or null
     */
    record ArchiveFileStatus(long fileId, String name, String path, long sizeBytes, String adler32, String dataset,
                             String family, String storageClass, String state, int copies, List<WrittenCopy> segments,
                             int attempts, String error, Instant registeredAt, Instant archivedAt) {}

    /**
     * One tape copy of a file.
     *
     * @param verified whether the library reported the Adler32 of what reached the volume (false: a site script
     *                 that reports none, stagehand.tape.script.write-checksum trust-source; until a read matches)
     */
    record WrittenCopy(int copy, String volume, long offsetBytes, Integer fseq, boolean verified) {}

    /**
     * Tape copies written without a checksum from the library (not confirmed from the volume), by volume and
     * offset; only of files of {@code experiments} (null: all). A recall whose read of such a copy matches the
     * catalogue confirms it (it leaves this list).
     */
    List<UnverifiedCopy> unverifiedCopies(Set<String> experiments, int limit);

    /** A tape copy not confirmed from its volume, with its segment's state (ok, suspect, lost). */
    record UnverifiedCopy(String name, String volume, long offsetBytes, Integer fseq, String adler32, String segmentState) {}

    /**
     * @param capacityBytes  buffer capacity
     * @param usedBytes      bytes of files not yet evicted
     * @param highWaterBytes registrations beyond this are refused (back-pressure)
     * @param lowWaterBytes  eviction brings usage down to this
     * @param files          files per state
     * @param bytes          bytes per state
     */
    record BufferUsage(long capacityBytes, long usedBytes, long highWaterBytes, long lowWaterBytes,
                       java.util.Map<String, Long> files, java.util.Map<String, Long> bytes) {}

    /**
     * @param family   file family
     * @param copy     which copy (1 or 2) it holds
     * @param volume   label
     * @param state    open (being appended) or full
     * @param files    files on it now (a segment in the catalog): one deleted after its copy was written there is
     *                 not, as CTA and dCache count a tape's files
     * @param written  files written to it, the deleted ones' included (their bytes stay there as dead space)
     * @param usedBytes end of data
     * @param capacityBytes volume capacity
     */
    record FamilyVolume(String family, int copy, String volume, String state, int files, int written, long usedBytes,
                        long capacityBytes) {}
}
