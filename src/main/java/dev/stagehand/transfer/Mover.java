package dev.stagehand.transfer;

import java.net.URI;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The mover SPI, shaped for bulk work like the tape SPI: hand over many files at once; each completes or
 * fails on its own with a typed {@link TransferFailure}; each can be cancelled. Implementations keep a
 * per-destination (link) pool of connections, retry transient failures and verify every file's checksum
 * before reporting it done.
 */
public interface Mover extends AutoCloseable {

    /** Queues {@code copies}; the returned batch tracks them. */
    CopyBatch submit(List<FileCopy> copies);

    /**
     * Creates the directory {@code url} (an {@code ftp://} or {@code gsiftp://} URL) and its missing parents
     * on its server, like {@code gfal-mkdir -p}: replication writes files under their logical names at remote
     * sites, whose directories may not exist yet. A directory that exists already is fine. Fails with the
     * server's reason (permission denied, authentication) as a {@link TransferFailure}.
     */
    default void makeDirectories(java.net.URI url) {
        throw new TransferFailure(TransferFailure.Kind.BAD_REQUEST, "this mover cannot create directories: " + url);
    }

    /**
     * Deletes files at their servers ({@code ftp://} or {@code gsiftp://} URLs), like {@code gfal-rm}:
     * replication removes the copies no rule wants any more. A file already gone counts as deleted. Returns
     * the failures by URL (none: all deleted).
     */
    default Map<URI, TransferFailure> delete(Collection<URI> urls) {
        Map<URI, TransferFailure> failed = new LinkedHashMap<>();
        for (URI u : urls) failed.put(u, new TransferFailure(TransferFailure.Kind.BAD_REQUEST, "this mover cannot delete files: " + u));
        return failed;
    }

    /** Current per-link state (concurrency, throughput, hosts out of rotation). */
    List<LinkStatus> links();

    /** Stops every link: queued files are cancelled, connections closed. */
    @Override
    void close();
}
