package dev.stagehand.platform;

import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Real time scaled by a factor: with factor 60 an hour of tape work passes in a wall-clock minute (the
 * demo); factor 1 is plain real time (production). Tasks run on a small pool of daemon threads, so they
 * never keep the JVM alive.
 */
public final class ScaledClock implements EventClock, AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(ScaledClock.class);

    private final double factor;
    private final Instant start;
    private final long startNanos;
    private final ScheduledExecutorService executor;

    public ScaledClock(double factor) {
        this(factor, Instant.now());
    }

    public ScaledClock(double factor, Instant start) {
        if (!(factor > 0)) throw new IllegalArgumentException("scale factor must be > 0, was " + factor);
        this.factor = factor;
        this.start = start;
        this.startNanos = System.nanoTime();
        this.executor = Executors.newScheduledThreadPool(2,
                Thread.ofPlatform().daemon().name("scaled-clock-", 0).factory());
    }

    /** Plain real time. */
    public static ScaledClock real() {
        return new ScaledClock(1.0);
    }

    public double factor() {
        return factor;
    }

    @Override
    public Instant now() {
        return start.plusNanos((long) ((System.nanoTime() - startNanos) * factor));
    }

    @Override
    public Scheduled schedule(Duration delay, Runnable task) {
        long wallNanos = delay.isNegative() ? 0 : (long) (delay.toNanos() / factor);
        ScheduledFuture<?> f;
        try {
            f = executor.schedule(() -> {
                try {
                    task.run();
                } catch (RuntimeException | Error e) {
                    // a scheduled executor would swallow it silently
                    log.error("clock task failed", e);
                }
            }, wallNanos, TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException closed) {
            // closed at shutdown while a round of its users still ran (it asked for a pass): nothing runs any more
            return () -> false;
        }
        return () -> f.cancel(false);
    }

    @Override
    public void close() {
        executor.shutdownNow();
    }
}
