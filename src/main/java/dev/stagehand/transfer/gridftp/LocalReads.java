package dev.stagehand.transfer.gridftp;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.FileChannel;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The reads of an attempt's local file under way, by thread, and when each began. A stall while one has been
 * blocked for long (a hung NFS mount: read() never returns) is the local source's, not the destination's:
 * the watchdog asks {@link #blockedNanos} when it fires. Before, stall detection saw only no progress, and put
 * the stall on the destination host (taken out of rotation, the link's success rate lowered).
 */
final class LocalReads {

    private final ConcurrentHashMap<Thread, Long> since = new ConcurrentHashMap<>();
    /** The attempt's own thread (the one that made this): the one the watchdog's abort must free. */
    private final Thread owner = Thread.currentThread();

    /** Reads of the local file, run by {@link #apart}. */
    interface Work<T> {
        T run() throws IOException;
    }

    /**
     * Runs {@code work} (reads of the local file: the small file's preload for SCKS, a sum; its open and size
     * looked at before the put) off the attempt's own thread, on one of its own, waited for interruptibly and
     * recorded as a read under way while it runs: the watchdog's interrupt ends the wait
     * ({@link ClosedByInterruptException}) and the work is left behind, holding its thread until the file system
     * answers (accepted: one thread per hung file, not the attempt). Before, a read there that hung (a hung NFS
     * mount: an interrupt does not end it) kept the attempt, and its copy, for ever. The buffers the work fills may
     * still be written by the work left behind: the caller must not use them again. On another thread (jglobus's,
     * the own sender's writers), run there.
     */
    <T> T apart(Work<T> work) throws IOException {
        if (Thread.currentThread() != owner) return work.run();
        var task = new java.util.concurrent.FutureTask<T>(() -> recorded(work));
        Thread.ofVirtual().name("local-read").start(task);
        try {
            return task.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // the attempt's: it was aborted
            throw new ClosedByInterruptException();
        } catch (java.util.concurrent.ExecutionException e) {
            if (e.getCause() instanceof IOException io) throw io;
            if (e.getCause() instanceof RuntimeException r) throw r;
            throw new IOException(e.getCause());
        }
    }

    /**
     * {@code ch.read(dst, position)}, recorded as under way while it runs. A read on the attempt's own thread not
     * already {@link #apart} is made apart, alone (a thread per read: the preload and the sums run whole apart).
     */
    int read(FileChannel ch, ByteBuffer dst, long position) throws IOException {
        if (Thread.currentThread() != owner) return recorded(() -> ch.read(dst, position));
        return apart(() -> ch.read(dst, position));
    }

    /** {@code work} recorded as under way while it runs; within work apart, as a read of its own from its start. */
    private <T> T recorded(Work<T> work) throws IOException {
        Thread t = Thread.currentThread();
        Long outer = since.put(t, System.nanoTime());
        try {
            return work.run();
        } finally {
            if (outer == null) since.remove(t);
            else since.put(t, outer);
        }
    }

    /** How long the oldest read under way has been blocked at {@code now} (0: none under way). */
    long blockedNanos(long now) {
        long longest = 0;
        for (long s : since.values()) longest = Math.max(longest, now - s);
        return longest;
    }

    /**
     * Closes {@code ch}; from another thread while a read of it is under way: a FileChannel's close waits for
     * the reads in it to leave, and one blocked in a hung file system never does (the attempt would hang in
     * its close, its failure never reported).
     */
    void close(FileChannel ch) throws IOException {
        if (since.isEmpty()) {
            ch.close();
            return;
        }
        Thread.ofVirtual().name("local-close").start(() -> {
            try {
                ch.close();
            } catch (IOException ignored) {
                // the attempt has failed already
            }
        });
    }
}
