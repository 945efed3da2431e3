package dev.stagehand.platform;

import java.time.Duration;
import java.time.Instant;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * A figure that is costly to compute (a query over a whole queue or cache) and shared by everyone who shows
 * it: computed again only when older than {@code minAge} or than ten times what computing it last took,
 * whichever is longer, so displays and gauges keep the database busy a tenth of the time at most however
 * large the queue and however many pages are open. One computation at a time; one that fails leaves the
 * last figure and is tried again at the next read.
 */
public final class Throttled<T> {

    /** How many times its own computing time a figure is reused at least. */
    public static final int REUSE_PER_COMPUTATION = 10;

    private final Supplier<T> compute;
    private final long minAgeNanos;
    private final LongSupplier nanoTime;
    private T value;
    private Instant asOf;
    private long takenAt;
    private long reuseNanos;

    public Throttled(Duration minAge, Supplier<T> compute) {
        this(minAge, compute, System::nanoTime);
    }

    Throttled(Duration minAge, Supplier<T> compute, LongSupplier nanoTime) {
        this.compute = compute;
        this.minAgeNanos = minAge.toNanos();
        this.nanoTime = nanoTime;
    }

    /** The figure, computed now if the last one is too old. */
    public synchronized T get() {
        long start = nanoTime.getAsLong();
        if (asOf == null || start - takenAt > reuseNanos) {
            T v = compute.get();
            long took = nanoTime.getAsLong() - start;
            value = v;
            asOf = Instant.now();
            takenAt = start;
            reuseNanos = Math.max(minAgeNanos, took * REUSE_PER_COMPUTATION);
        }
        return value;
    }

    /** Has the next {@link #get} compute the figure again: it is known to have changed (an operator's action). */
    public synchronized void forget() {
        asOf = null;
    }

    /** When the figure {@link #get} returns was computed (null before the first). */
    public synchronized Instant asOf() {
        return asOf;
    }
}
