package dev.stagehand.platform;

import java.time.Duration;
import java.time.Instant;
import java.util.PriorityQueue;

/**
 * A discrete-event clock for simulations and tests: time only moves when {@link #runUntilIdle()} or
 * {@link #runUntil(Instant)} runs the next due task, on the calling thread, in time order (ties in
 * submission order). Nothing ever sleeps, so a day of tape work passes in as long as its events take to
 * run. Tasks may be scheduled from any thread; they always run on the thread that drives the clock.
 */
public final class VirtualClock implements EventClock {

    private final Instant epoch;
    private final PriorityQueue<Task> queue = new PriorityQueue<>();
    private long nowNanos;
    private long seq;
    private long executed;

    /** A clock starting at 2026-01-01T00:00:00Z (a fixed start keeps simulations reproducible). */
    public VirtualClock() {
        this(Instant.parse("2026-01-01T00:00:00Z"));
    }

    public VirtualClock(Instant start) {
        this.epoch = start;
    }

    @Override
    public synchronized Instant now() {
        return epoch.plusNanos(nowNanos);
    }

    /** Time passed since the clock's start. */
    public synchronized Duration elapsed() {
        return Duration.ofNanos(nowNanos);
    }

    /** Seconds passed since the clock's start. */
    public synchronized double elapsedSeconds() {
        return nowNanos / 1e9;
    }

    /** The clock's start. */
    public Instant start() {
        return epoch;
    }

    @Override
    public Scheduled schedule(Duration delay, Runnable task) {
        return scheduleNanos(delay.isNegative() ? 0 : delay.toNanos(), task);
    }

    /** Like {@link #schedule} with the delay in nanoseconds (no Duration object on hot paths). */
    public synchronized Scheduled scheduleNanos(long delayNanos, Runnable task) {
        Task t = new Task(nowNanos + Math.max(0, delayNanos), seq++, task);
        queue.add(t);
        return t;
    }

    /** Runs every task, including those scheduled by tasks, until none is left. @return tasks run */
    public long runUntilIdle() {
        return runUntilNanos(Long.MAX_VALUE);
    }

    /** Runs every task due at or before {@code until}, then sets the time to {@code until}. @return tasks run */
    public long runUntil(Instant until) {
        long target = Duration.between(epoch, until).toNanos();
        long n = runUntilNanos(target);
        synchronized (this) {
            if (target > nowNanos) nowNanos = target;
        }
        return n;
    }

    /** Runs the tasks due within {@code d} from now, then advances the time by {@code d}. */
    public long advance(Duration d) {
        return runUntil(now().plus(d));
    }

    /** Tasks waiting (cancelled ones not counted until they reach the head of the queue). */
    public synchronized int pending() {
        return queue.size();
    }

    /** Tasks run since the clock was made. */
    public synchronized long executed() {
        return executed;
    }

    private long runUntilNanos(long target) {
        long n = 0;
        while (true) {
            Task t;
            synchronized (this) {
                t = queue.peek();
                if (t == null || t.at > target) return n;
                queue.poll();
                if (t.state != Task.WAITING) continue;
                t.state = Task.RUN;
                nowNanos = t.at;
                executed++;
            }
            n++;
            t.task.run();
        }
    }

    private final class Task implements Scheduled, Comparable<Task> {
        static final int WAITING = 0, RUN = 1, CANCELLED = 2;
        final long at;
        final long seq;
        final Runnable task;
        int state;

        Task(long at, long seq, Runnable task) {
            this.at = at;
            this.seq = seq;
            this.task = task;
        }

        @Override
        public boolean cancel() {
            synchronized (VirtualClock.this) {
                if (state != WAITING) return false;
                state = CANCELLED;
                return true;
            }
        }

        @Override
        public int compareTo(Task o) {
            int c = Long.compare(at, o.at);
            return c != 0 ? c : Long.compare(seq, o.seq);
        }
    }
}
