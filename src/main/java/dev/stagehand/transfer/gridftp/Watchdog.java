package dev.stagehand.transfer.gridftp;

import java.util.Arrays;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Stall detection: every attempt reports progress (bytes read for sending, replies, markers); an attempt
 * with no progress for the stall limit is marked stalled and aborted from here: its connections are closed
 * and the thread running it is interrupted (a virtual thread blocked in socket I/O then has its socket closed
 * and the call throws), so the blocked jglobus call fails at once without leaving a thread behind. An
 * attempt still running a stall limit after its abort is aborted again, with its thread's stack logged. An
 * attempt found blocked in a read of its local file is marked so ({@link Attempt#localReadBlockedNanos}): the
 * stall is its source's.
 */
final class Watchdog implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(Watchdog.class);

    /** One attempt being watched, run by the thread that asked to watch it. */
    static final class Attempt {
        final CopyOnWriteArrayList<GridFtpSession> sessions = new CopyOnWriteArrayList<>();
        private final Thread thread = Thread.currentThread();
        volatile long lastProgress = System.nanoTime();
        volatile boolean stalled;
        /** The attempt's reads of its local file (a put's source). */
        final LocalReads localReads = new LocalReads();
        /**
         * Stalled while waiting on a read of its local file: how long that read had been blocked (0: it was
         * not). Set before {@link #stalled}.
         */
        volatile long localReadBlockedNanos;
        volatile boolean aborted;
        private volatile long abortedAt;
        private volatile boolean quiet;
        private volatile long quietUntil;
        private boolean over; // guarded by this: no interrupt once the attempt has ended

        void progress() {
            lastProgress = System.nanoTime();
        }

        /**
         * Runs {@code call}, whose reply comes only when the server is done (CKSM of a big file: no markers,
         * no bytes meanwhile), held to {@code nanos} instead of the stall limit.
         */
        <T> T quietly(long nanos, java.util.concurrent.Callable<T> call) throws Exception {
            quietUntil = System.nanoTime() + nanos;
            quiet = true;
            try {
                return call.call();
            } finally {
                quiet = false;
                progress();
            }
        }

        void add(GridFtpSession s) {
            sessions.add(s);
            progress();
            // aborted before this session was opened (a slow set-up): nobody else would close it
            if (aborted) Thread.ofVirtual().start(s::close);
        }

        /** Closes the attempt's connections and interrupts its thread (from another thread). */
        void abort() {
            aborted = true;
            abortedAt = System.nanoTime();
            for (GridFtpSession s : sessions) Thread.ofVirtual().start(s::close);
            synchronized (this) {
                if (!over) thread.interrupt();
            }
        }

        /** The attempt has ended: its thread is not interrupted any more, and an interrupt meant for it is cleared. */
        void end() {
            synchronized (this) {
                over = true;
            }
            if (Thread.currentThread() == thread) Thread.interrupted();
        }
    }

    private final Set<Attempt> active = ConcurrentHashMap.newKeySet();
    private final ScheduledExecutorService timer;
    private final long stallNanos;

    Watchdog(long stallNanos) {
        this.stallNanos = stallNanos;
        this.timer = Executors.newSingleThreadScheduledExecutor(Thread.ofPlatform().daemon().name("gridftp-watchdog").factory());
        long period = Math.max(50, Math.min(500, TimeUnit.NANOSECONDS.toMillis(stallNanos) / 10));
        timer.scheduleAtFixedRate(this::scan, period, period, TimeUnit.MILLISECONDS);
    }

    /** Watches an attempt run by the calling thread. */
    Attempt watch() {
        Attempt a = new Attempt();
        active.add(a);
        return a;
    }

    /** Called by the attempt's own thread when it is over. */
    void unwatch(Attempt a) {
        active.remove(a);
        a.end();
    }

    private void scan() {
        // never lets an exception out: a periodic task that throws is never run again
        try {
            long now = System.nanoTime();
            for (Attempt a : active) {
                boolean overdue = a.quiet ? now - a.quietUntil > 0 : now - a.lastProgress > stallNanos;
                if (!a.aborted && overdue) {
                    // a read of the local file blocked for half the limit or more: the attempt waits on its source
                    long blocked = a.localReads.blockedNanos(now);
                    if (blocked >= stallNanos / 2) a.localReadBlockedNanos = blocked;
                    a.stalled = true;
                    a.abort();
                } else if (a.aborted && now - a.abortedAt > stallNanos) {
                    log.warn("a GridFTP attempt is still blocked {} s after its abort (sessions {}); aborting it again; its thread {}:\n  {}",
                            TimeUnit.NANOSECONDS.toSeconds(now - a.abortedAt), a.sessions.size(), a.thread,
                            Arrays.stream(a.thread.getStackTrace()).map(String::valueOf).collect(Collectors.joining("\n  ")));
                    a.abort();
                }
            }
        } catch (Throwable t) {
            log.error("GridFTP stall watchdog pass failed", t);
        }
    }

    @Override
    public void close() {
        timer.shutdownNow();
    }
}
