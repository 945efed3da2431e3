package dev.stagehand.recall.request;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import java.time.Duration;

/**
 * Meters of the recall flow ({@code stagehand.recall.*}): bytes and files staged from tape into the cache,
 * staging failures by reason, and request latency from submission to the end, per experiment and result.
 * Recorded by the instance that did the work (so several instances on one database do not double count).
 */
public final class RecallMetrics {

    /** Records nothing (simulations, tests that build services by hand). */
    public static final RecallMetrics NONE = new RecallMetrics(new CompositeMeterRegistry());

    private static final Duration[] LATENCY_BUCKETS = {Duration.ofSeconds(10), Duration.ofMinutes(1), Duration.ofMinutes(5),
            Duration.ofMinutes(15), Duration.ofMinutes(30), Duration.ofHours(1), Duration.ofHours(2), Duration.ofHours(4),
            Duration.ofHours(8), Duration.ofHours(24), Duration.ofDays(3)};

    private final MeterRegistry registry;
    private final Counter stagedBytes, stagedFiles;

    public RecallMetrics(MeterRegistry registry) {
        this.registry = registry;
        stagedBytes = Counter.builder("stagehand.recall.staged").baseUnit("bytes")
                .description("bytes read from tape and verified in the cache").register(registry);
        stagedFiles = Counter.builder("stagehand.recall.staged.files")
                .description("files read from tape and verified in the cache").register(registry);
    }

    /** A file read from tape landed verified in the cache. */
    public void staged(long bytes) {
        stagedBytes.increment(bytes);
        stagedFiles.increment();
    }

    /** A copy read from tape was refused ({@code checksum}) or lost before it was verified ({@code lost}). */
    public void stageFailed(String reason) {
        Counter.builder("stagehand.recall.stage.failures").description("copies refused after a tape read, by reason")
                .tag("reason", reason).register(registry).increment();
    }

    /** A request ended: {@code result} done, failed or cancelled; {@code latency} from submission to the end. */
    public void requestEnded(String experiment, String result, Duration latency) {
        Timer.builder("stagehand.recall.request.duration").description("stage requests from submission to their end")
                .tags("experiment", experiment == null ? "" : experiment, "result", result)
                .serviceLevelObjectives(LATENCY_BUCKETS).register(registry)
                .record(latency.isNegative() ? Duration.ZERO : latency);
    }
}
