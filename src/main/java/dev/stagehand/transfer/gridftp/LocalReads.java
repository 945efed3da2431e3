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

    /**
     * {@code ch.read(dst, position)}, recorded as under way while it runs. On the attempt's own thread (the sums
     * and the small file's preload before its put) the read is made on a thread of its own, waited for
     * interruptibly: the watchdog's interrupt ends the wait ({@link ClosedByInterruptException}) and the read is
     * left behind. Before, a read there that hung (a hung NFS mount: an interrupt does not end it) kept the
     * attempt, and its copy, for ever. After that, {@code dst} may still be written by the read left behind:
     * the caller must not use it again.
     */
    int read(FileChannel ch, ByteBuffer dst, long position) throws IOException {
        if (Thread.currentThread() != owner) return recorded(ch, dst, position);
        var read = new java.util.concurrent.FutureTask<>(() -> recorded(ch, dst, position));
        Thread.ofVirtual().name("local-read").start(read);
        try {
            return read.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // the attempt's: it was aborted
            throw new ClosedByInterruptException();
        } catch (java.util.concurrent.ExecutionException e) {
            if (e.getCause() instanceof IOException io) throw io;
            if (e.getCause() instanceof RuntimeException r) throw r;
            throw new IOException(e.getCause());
        }
    }

    private int recorded(FileChannel ch, ByteBuffer dst, long position) throws IOException {
        Thread t = Thread.currentThread();
        since.put(t, System.nanoTime());
        try {
            return ch.read(dst, position);
        } finally {
            since.remove(t);
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
