package dev.stagehand.recall.service;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.MultiGauge;
import io.micrometer.core.instrument.Tags;
import java.time.Duration;
import java.util.HashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;
import dev.stagehand.recall.RecallQueues;

/**
 * Recall queue depth as gauges: the files open requests still wait for (queued or staging; each file once,
 * whatever number of requests want it), taken from {@link RecallQueues} every {@code stagehand.recall.metrics.queue-interval},
 * not at each scrape; at most a tenth of the time (see {@link #pauseAfter}: without a scheduler on this instance the
 * figures come from a query of the whole open queue).
 * <ul>
 * <li>{@code stagehand.recall.queue.files} / {@code .bytes}, tags {@code experiment}, {@code state} (queued,
 *     staging): totals.</li>
 * <li>{@code stagehand.recall.volume.queue.files} / {@code .bytes}, tag {@code volume}: only volumes with work
 *     (series of volumes whose queue emptied are removed, which bounds cardinality by the queue). A staging
 *     file counts on the volume being read; a queued file once, on the volume the scheduler plans to read it
 *     from (on an instance without one: its first available copy by label).</li>
 * </ul>
 * The files being read come from the shared database on every instance; the queued ones from each instance's
 * scheduler, whose models differ only by requests one has not taken in yet and by the copy each plans to read:
 * aggregate with {@code max}, not {@code sum}.
 */
final class RecallQueueMetrics implements SmartLifecycle {

    private static final Logger log = LoggerFactory.getLogger(RecallQueueMetrics.class);

    private final RecallQueues queues;
    private final Duration interval;
    private final Rows files, bytes, volumeFiles, volumeBytes;
    private ScheduledExecutorService timer;

    RecallQueueMetrics(RecallQueues queues, MeterRegistry registry, Duration interval) {
        this.queues = queues;
        this.interval = interval;
        files = new Rows(MultiGauge.builder("stagehand.recall.queue.files").description("files in the recall queue, by experiment and state")
                .register(registry));
        bytes = new Rows(MultiGauge.builder("stagehand.recall.queue").baseUnit("bytes").description("bytes in the recall queue, by experiment and state")
                .register(registry));
        volumeFiles = new Rows(MultiGauge.builder("stagehand.recall.volume.queue.files").description("files waiting for or being read from each volume")
                .register(registry));
        volumeBytes = new Rows(MultiGauge.builder("stagehand.recall.volume.queue").baseUnit("bytes")
                .description("bytes waiting for or being read from each volume").register(registry));
    }

    /**
     * A MultiGauge whose rows keep their gauge and change their value in place. Re-registering rows
     * ({@code overwrite = true}) while Prometheus scrapes yields the same series twice and a failed scrape
     * (micrometer#6851); rows only come and go here.
     */
    static final class Rows {
        private final MultiGauge gauge;
        private Map<Tags, AtomicLong> values = Map.of();

        Rows(MultiGauge gauge) {
            this.gauge = gauge;
        }

        synchronized void set(Map<Tags, Long> now) {
            Map<Tags, AtomicLong> next = new HashMap<>();
            now.forEach((tags, v) -> {
                AtomicLong holder = values.containsKey(tags) ? values.get(tags) : new AtomicLong();
                holder.set(v);
                next.put(tags, holder);
            });
            values = next;
            gauge.register(next.entrySet().stream()
                    .<MultiGauge.Row<?>>map(e -> MultiGauge.Row.of(e.getKey(), e.getValue(), AtomicLong::doubleValue)).toList(), false);
        }
    }

    /** Sets every row of the four gauges from one snapshot of the queue. */
    void refresh() {
        RecallQueues.Snapshot now = queues.snapshot();
        Map<Tags, Long> f = new HashMap<>(), b = new HashMap<>(), vf = new HashMap<>(), vb = new HashMap<>();
        for (RecallQueues.ExperimentLoad e : now.experiments()) {
            Tags tags = Tags.of("experiment", e.experiment(), "state", e.state());
            f.put(tags, e.files());
            b.put(tags, e.bytes());
        }
        for (RecallQueues.VolumeLoad v : now.volumes()) {
            if (v.volume() == null) continue; // no usable copy: on no volume's queue
            vf.put(Tags.of("volume", v.volume()), v.queued() + v.staging());
            vb.put(Tags.of("volume", v.volume()), v.bytes());
        }
        files.set(f);
        bytes.set(b);
        volumeFiles.set(vf);
        volumeBytes.set(vb);
    }

    @Override
    public synchronized void start() {
        if (interval.isZero() || interval.isNegative()) return;
        timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "recall-queue-metrics");
            t.setDaemon(true);
            return t;
        });
        ScheduledExecutorService on = timer;
        on.execute(() -> refreshAndReschedule(on));
    }

    /** How much longer than a refresh the pause after it is at least: the gauges take at most 1/(1+10) of the time. */
    static final int PAUSE_PER_REFRESH = 10;

    /**
     * The pause before the next refresh: the interval, or ten times what this one took when that is longer, but
     * never more than ten intervals (a query slowed by a busy database would otherwise leave the gauges stale for
     * hours). At 10^6 queued files a refresh reads them all (9 s on the 2-core machine): every 30 s on every
     * instance that was a third of a database core for gauges.
     */
    static Duration pauseAfter(Duration interval, Duration took) {
        Duration bounded = took.multipliedBy(PAUSE_PER_REFRESH);
        Duration most = interval.multipliedBy(PAUSE_PER_REFRESH);
        return bounded.compareTo(interval) <= 0 ? interval : bounded.compareTo(most) > 0 ? most : bounded;
    }

    private void refreshAndReschedule(ScheduledExecutorService on) {
        long t0 = System.nanoTime();
        Duration pause = interval; // after a failure (the database away, perhaps after a long wait): the plain interval
        try {
            refresh();
            pause = pauseAfter(interval, Duration.ofNanos(System.nanoTime() - t0));
        } catch (RuntimeException e) {
            log.debug("recall queue metrics not refreshed: {}", e.toString());
        }
        if (pause.compareTo(interval) > 0) log.debug("recall queue metrics: next refresh in {} (the last took a tenth of that)", pause);
        synchronized (this) {
            // stopped (or stopped and started again: that timer has its own chain) ends this chain
            if (timer == on) on.schedule(() -> refreshAndReschedule(on), pause.toMillis(), TimeUnit.MILLISECONDS);
        }
    }

    @Override
    public synchronized void stop() {
        if (timer != null) timer.shutdownNow();
        timer = null;
    }

    @Override
    public synchronized boolean isRunning() {
        return timer != null;
    }
}
