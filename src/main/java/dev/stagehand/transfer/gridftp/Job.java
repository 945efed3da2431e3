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
        volatile Long adler32; // of this range, summed while it was sent

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
    final AtomicLong bytes = new AtomicLong();
    final Set<Watchdog.Attempt> running = ConcurrentHashMap.newKeySet();
    volatile List<Piece> pieces = List.of();
    volatile boolean cancelled;

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
        future.complete(new CopyResult(copy, bytes.get(), Duration.ofNanos(System.nanoTime() - startedNanos),
                1 + retries.get(), host, adler32));
    }

    void fail(TransferFailure f) {
        future.completeExceptionally(f);
        for (Watchdog.Attempt a : running) a.abort();
    }
}
