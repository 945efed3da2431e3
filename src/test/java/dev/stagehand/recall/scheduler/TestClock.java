package dev.stagehand.recall.scheduler;

import dev.stagehand.platform.EventClock;
import java.time.Duration;
import java.time.Instant;
import java.util.PriorityQueue;

/** Test-only virtual clock: tasks run in time order (ties in submission order) when {@link #run} is called. */
final class TestClock implements EventClock {
    private record Task(long at, long seq, Runnable r, boolean[] cancelled) {}

    private final PriorityQueue<Task> tasks = new PriorityQueue<>((a, b) -> a.at != b.at ? Long.compare(a.at, b.at) : Long.compare(a.seq, b.seq));
    private long nowNanos;
    private long seq;

    @Override
    public Instant now() {
        return Instant.EPOCH.plusNanos(nowNanos);
    }

    double seconds() {
        return nowNanos / 1e9;
    }

    @Override
    public Scheduled schedule(Duration delay, Runnable task) {
        boolean[] c = {false};
        tasks.add(new Task(nowNanos + Math.max(0, delay.toNanos()), seq++, task, c));
        return () -> {
            if (c[0]) return false;
            c[0] = true;
            return true;
        };
    }

    /** Runs tasks until none is left or the clock passes {@code untilSeconds}. */
    void run(double untilSeconds) {
        while (!tasks.isEmpty() && tasks.peek().at <= untilSeconds * 1e9) {
            Task t = tasks.poll();
            if (t.cancelled[0]) continue;
            t.cancelled[0] = true;
            nowNanos = t.at;
            t.r.run();
        }
    }
}
