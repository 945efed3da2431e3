package dev.stagehand.transfer.gridftp;

import dev.stagehand.transfer.CopyResult;
import dev.stagehand.transfer.FileCopy;
import dev.stagehand.transfer.TransferFailure;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/** One file being moved: its pieces (one, or byte ranges of a big file), retries and result. */
final class Job {

    /** A part of the job a single connection sends in one attempt. */
    static final class Piece {
        final Job job;
        final long offset;
        final long length;
        int attempts;
        volatile Long adler32; // of this range, summed while it was sent (or what the server verified)
        volatile boolean serverVerified; // the server compared the whole file before its 226 (SCKS)

        /** What the server reported written (restart markers), relative to {@link #offset}; kept across attempts. */
        private org.globus.ftp.ByteRangeList written = new org.globus.ftp.ByteRangeList();

        private Endpoint.HostPort writtenOn;

        /** Records a restart marker of an attempt on {@code host} that began {@code base} bytes into this piece. */
        synchronized void written(org.globus.ftp.GridFTPRestartMarker marker, long base, Endpoint.HostPort host) {
            writtenOn = host;
            for (Object o : marker.toVector()) {
                org.globus.ftp.ByteRange r = (org.globus.ftp.ByteRange) o;
                written.merge(new org.globus.ftp.ByteRange(base + r.from, base + r.to));
            }
        }

        /**
         * Where an attempt starting now on {@code host} begins: after the bytes from the piece's start the
         * server has written without a gap. Another host of the link is trusted to share the storage only
         * when the file's checksum is verified afterwards (a mismatch sends the whole file again). An attempt
         * that begins at 0 writes the piece again (a STOR truncates the file), so the markers of earlier
         * attempts are forgotten: resuming from them later would leave a hole.
         */
        synchronized long resumeAt(Endpoint.HostPort host, boolean verified) {
            return resumeAt(host, verified, length);
        }

        /** As above for a piece of {@code size} bytes (a third-party copy whose size the catalog did not know). */
        synchronized long resumeAt(Endpoint.HostPort host, boolean verified, long size) {
            long at = 0;
            var ranges = written.toVector();
            if ((verified || host.equals(writtenOn)) && !ranges.isEmpty()) {
                org.globus.ftp.ByteRange first = (org.globus.ftp.ByteRange) ranges.getFirst();
                if (first.from == 0) at = Math.min(first.to, size);
            }
            if (at == 0) forget();
            return at;
        }

        /** Forgets what was written (the destination is to be written again from scratch). */
        synchronized void forget() {
            written = new org.globus.ftp.ByteRangeList();
            writtenOn = null;
        }

        Piece(Job job, long offset, long length) {
            this.job = job;
            this.offset = offset;
            this.length = length;
        }
    }

    final FileCopy copy;
    final Endpoint destination;
    final Endpoint source; // null: local file
    final Path local;
    final CompletableFuture<CopyResult> future = new CompletableFuture<>();
    final long startedNanos = System.nanoTime();
    final AtomicInteger remaining = new AtomicInteger();
    final AtomicInteger retries = new AtomicInteger();
    /** Times the whole file has been sent (every piece): what a failure found after that counts against. */
    final AtomicInteger wholeSends = new AtomicInteger(1);
    final AtomicLong bytes = new AtomicLong();
    final Set<Watchdog.Attempt> running = ConcurrentHashMap.newKeySet();
    volatile List<Piece> pieces = List.of();
    volatile boolean cancelled;
    private boolean destinationCleared; // guarded by this
    private boolean writing; // guarded by this: the destination was looked at and the copy's writing hook ran

    /** The look at the destination before the first write: what is there, decided by the link's worker. */
    interface Look {
        /** Null: nothing there (or it may be written over); else how the job ended instead (done, or failed). */
        Runnable ending() throws Exception;
    }

    /**
     * Before any piece writes: runs {@code look} (per the copy's {@link dev.stagehand.transfer.FileCopy.Existing})
     * and then the copy's writing hook, once per job; the other pieces wait for the first. False: the job
     * ended instead (the same file was there, or another one that may not be replaced), nothing written.
     */
    synchronized boolean mayWrite(Look look) throws Exception {
        if (writing) return true;
        if (finished()) return false;
        if (copy.existing() != dev.stagehand.transfer.FileCopy.Existing.WRITE) {
            Runnable ending = look.ending();
            if (ending != null) {
                ending.run();
                return false;
            }
        }
        copy.writing().run();
        writing = true;
        return true;
    }

    /**
     * Removes what the destination holds before the first byte range is written: ranges go with ESTO, which
     * does not truncate, so an older, longer file there would keep its tail (each range still checks out).
     * The first range to start does it; the others wait for it.
     */
    synchronized void clearDestination(GridFtpSession s) throws Exception {
        if (destinationCleared) return;
        try {
            s.deleteFile(destination.path());
        } catch (Exception e) {
            if (Failures.classify(e) != dev.stagehand.transfer.TransferFailure.Kind.NO_SUCH_PATH) throw e; // none yet
        }
        destinationCleared = true;
    }

    Job(FileCopy copy, Endpoint destination, Endpoint source, Path local) {
        this.copy = copy;
        this.destination = destination;
        this.source = source;
        this.local = local;
    }

    void pieces(List<Piece> pieces) {
        this.pieces = pieces;
        remaining.set(pieces.size());
    }

    boolean finished() {
        return future.isDone();
    }

    void complete(String host, long adler32) {
        // the file's size: bytes sent twice (retried or resumed ranges) are not part of what was moved
        long moved = copy.sizeBytes() > 0 ? copy.sizeBytes() : bytes.get();
        future.complete(new CopyResult(copy, moved, Duration.ofNanos(System.nanoTime() - startedNanos),
                1 + retries.get(), host, adler32));
    }

    /** The same file ({@code size} bytes, {@code adler32}) is at the destination already: done, nothing sent (0 attempts). */
    void alreadyThere(String host, long size, long adler32) {
        future.complete(new CopyResult(copy, size, Duration.ofNanos(System.nanoTime() - startedNanos), 0, host, adler32));
    }

    void fail(TransferFailure f) {
        future.completeExceptionally(f);
        for (Watchdog.Attempt a : running) a.abort();
    }
}
