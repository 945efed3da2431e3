package dev.stagehand.transfer.gridftp;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Stall detection: every attempt reports progress (bytes read for sending, replies, markers); an attempt
 * with no progress for the stall limit is marked stalled and its connections closed from here, which makes
 * the blocked jglobus call throw at once without leaving a thread behind.
 */
final class Watchdog implements AutoCloseable {

    /** One attempt being watched. */
    static final class Attempt {
        final CopyOnWriteArrayList<GridFtpSession> sessions = new CopyOnWriteArrayList<>();
        volatile long lastProgress = System.nanoTime();
        volatile boolean stalled;
        volatile boolean aborted;

        void progress() {
            lastProgress = System.nanoTime();
        }

        void add(GridFtpSession s) {
            sessions.add(s);
            progress();
        }

        /** Closes the attempt's connections (from another thread). */
        void abort() {
            aborted = true;
            for (GridFtpSession s : sessions) Thread.ofVirtual().start(s::close);
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

    Attempt watch() {
        Attempt a = new Attempt();
        active.add(a);
        return a;
    }

    void unwatch(Attempt a) {
        active.remove(a);
    }

    private void scan() {
        long now = System.nanoTime();
        for (Attempt a : active) {
            if (!a.stalled && !a.aborted && now - a.lastProgress > stallNanos) {
                a.stalled = true;
                a.abort();
            }
        }
    }

    @Override
    public void close() {
        timer.shutdownNow();
    }
}
