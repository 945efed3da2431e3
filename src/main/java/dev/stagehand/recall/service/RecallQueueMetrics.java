package dev.stagehand.recall.service;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.MultiGauge;
import io.micrometer.core.instrument.Tags;
import java.time.Duration;
import java.util.HashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Recall queue depth as gauges: the files open requests still wait for (queued or staging; each file once,
 * whatever number of requests want it), computed from the database every {@code stagehand.recall.metrics.queue-interval}, not at each
 * scrape: one grouped query, whatever the number of scrapers; at most a tenth of the time (see {@link #pauseAfter}).
 * <ul>
 * <li>{@code stagehand.recall.queue.files} / {@code .bytes}, tags {@code experiment}, {@code state} (queued,
 *     staging): exact totals.</li>
 * <li>{@code stagehand.recall.volume.queue.files} / {@code .bytes}, tag {@code volume}: only volumes with work
 *     (series of volumes whose queue emptied are removed, which bounds cardinality by the queue). A staging
 *     file counts on the volume being read; a queued file with several tape copies counts on each volume that
 *     holds a usable one (any of them may serve it).</li>
 * </ul>
 * The numbers are the shared database's, the same on every instance: aggregate them with {@code max}, not
 * {@code sum}.
 */
final class RecallQueueMetrics implements SmartLifecycle {

    private static final Logger log = LoggerFactory.getLogger(RecallQueueMetrics.class);

    /**
     * Files open requests still wait for (each file once, whatever number of requests want it): staging
     * when an instance holds a claim on it (with the volume being read), else queued.
     */
    private static final String WANTED = """
            WITH w AS (
              SELECT q.file_id, CASE WHEN rf.state = 'staging' THEN 'staging' ELSE 'queued' END AS state,
                     CASE WHEN rf.state = 'staging' THEN rf.volume END AS volume
                FROM (SELECT DISTINCT x.file_id FROM stage_request_file x JOIN stage_request r ON r.id = x.request_id
                       WHERE x.state IN ('queued', 'staging') AND r.state IN ('submitted', 'active')) q
                LEFT JOIN recall_file rf ON rf.file_id = q.file_id)
            """;

    private final JdbcTemplate jdbc;
    private final Duration interval;
    private final Rows files, bytes, volumeFiles, volumeBytes;
    private ScheduledExecutorService timer;

    RecallQueueMetrics(JdbcTemplate jdbc, MeterRegistry registry, Duration interval) {
        this.jdbc = jdbc;
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

    /**
     * Reads the queue and sets every row of the four gauges. One statement, so the per-experiment and per-volume
     * figures come from one snapshot: read in two, a request committed in between showed on one and not the other.
     */
    void refresh() {
        Map<Tags, Long> f = new HashMap<>(), b = new HashMap<>();
        Map<String, long[]> perVolume = new TreeMap<>();
        jdbc.query(WANTED + """
                SELECT 'experiment' AS kind, coalesce(f.experiment, '') AS k, w.state, count(*) AS n, coalesce(sum(f.size_bytes), 0) AS bytes
                  FROM w JOIN file f ON f.id = w.file_id GROUP BY 2, 3
                UNION ALL
                SELECT 'volume', v.label, NULL, count(*), coalesce(sum(f.size_bytes), 0)
                  FROM w JOIN file f ON f.id = w.file_id
                  JOIN segment s ON s.file_id = w.file_id AND s.state = 'ok'
                  JOIN volume v ON v.id = s.volume_id AND v.state = 'available'
                 WHERE w.state = 'queued' GROUP BY v.label
                UNION ALL
                SELECT 'volume', w.volume, NULL, count(*), coalesce(sum(f.size_bytes), 0)
                  FROM w JOIN file f ON f.id = w.file_id
                 WHERE w.state = 'staging' GROUP BY w.volume""", rs -> {
            if (rs.getString(1).equals("experiment")) {
                Tags tags = Tags.of("experiment", rs.getString(2), "state", rs.getString(3));
                f.put(tags, rs.getLong(4));
                b.put(tags, rs.getLong(5));
            } else {
                long[] v = perVolume.computeIfAbsent(rs.getString(2), k -> new long[2]);
                v[0] += rs.getLong(4);
                v[1] += rs.getLong(5);
            }
        });
        Map<Tags, Long> vf = new HashMap<>(), vb = new HashMap<>();
        perVolume.forEach((label, v) -> {
            vf.put(Tags.of("volume", label), v[0]);
            vb.put(Tags.of("volume", label), v[1]);
        });
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
