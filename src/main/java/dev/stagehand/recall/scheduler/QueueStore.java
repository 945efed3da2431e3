package dev.stagehand.recall.scheduler;

import java.util.Collection;
import java.util.List;

/**
 * Where the engine's decisions become durable. PostgreSQL in production (claims with
 * {@code SELECT ... FOR UPDATE SKIP LOCKED}, so several instances share one queue without double reads);
 * in memory for simulation. The decisions themselves are the same code either way.
 */
public interface QueueStore {

    /**
     * Claims {@code files} (in read order) for reading from {@code volume} by this instance. Returns the
     * files this instance may read; the others are being read or were read by another instance.
     */
    List<FileWork> claim(String volume, List<FileWork> files);

    /** The file's bytes are on disk at {@code path} (null when none are kept) and verified. */
    void staged(FileWork file, String volume, long adler32, java.nio.file.Path path);

    /** The file's claim is released: it is queued again (another copy, a retry). */
    void released(FileWork file);

    /** The file cannot be staged: {@code file.error()} says why. */
    void failed(FileWork file);

    /** The request ended (done, or failed when {@code request.failed()}). */
    void requestFinished(RequestWork request);

    /** Fresh estimated completion times of open requests. */
    void etas(Collection<RequestWork> requests);

    /**
     * The library reported the volume unavailable (it cannot be mounted): recorded so that no new work is
     * planned on it until an operator restores it.
     */
    default void volumeUnavailable(String volume, String reason) { }

    /**
     * Takes {@code volume} for this instance before mounting it: false while another instance holds it
     * (mounted there), so two instances sharing a library never mount one cartridge twice.
     */
    default boolean claimVolume(String volume) {
        return true;
    }

    /** The volume left this instance's drives (dismounted, or its mount failed). */
    default void releaseVolume(String volume) {}

    /** Where a file this engine holds as queued went in the shared queue. */
    enum Elsewhere { CLAIMED, ON_DISK, FAILED }

    /** A file taken by another instance sharing the queue: claimed (read there now), read, or failed. */
    record Taken(long fileId, Elsewhere state, String error) {}

    /**
     * Of {@code files} (queued here), those another instance has claimed, read or failed since this engine took
     * them in. Asked before a mount; none with a queue of its own.
     */
    default List<Taken> takenElsewhere(List<FileWork> files) {
        return List.of();
    }

    /** Keeps nothing: the simulation's store (one process, no restart). */
    QueueStore IN_MEMORY = new QueueStore() {
        @Override public List<FileWork> claim(String volume, List<FileWork> files) { return files; }
        @Override public void staged(FileWork file, String volume, long adler32, java.nio.file.Path path) { }
        @Override public void released(FileWork file) { }
        @Override public void failed(FileWork file) { }
        @Override public void requestFinished(RequestWork request) { }
        @Override public void etas(Collection<RequestWork> requests) { }
    };
}
