package dev.stagehand.recall.service;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.MultiGauge;
import io.micrometer.core.instrument.Tags;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
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
 * scrape: two grouped queries, whatever the number of scrapers.
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
    private final MultiGauge files, bytes, volumeFiles, volumeBytes;
    private ScheduledExecutorService timer;

    RecallQueueMetrics(JdbcTemplate jdbc, MeterRegistry registry, Duration interval) {
        this.jdbc = jdbc;
        this.interval = interval;
        files = MultiGauge.builder("stagehand.recall.queue.files").description("files in the recall queue, by experiment and state")
                .register(registry);
        bytes = MultiGauge.builder("stagehand.recall.queue").baseUnit("bytes").description("bytes in the recall queue, by experiment and state")
                .register(registry);
        volumeFiles = MultiGauge.builder("stagehand.recall.volume.queue.files").description("files waiting for or being read from each volume")
                .register(registry);
        volumeBytes = MultiGauge.builder("stagehand.recall.volume.queue").baseUnit("bytes")
                .description("bytes waiting for or being read from each volume").register(registry);
    }

    /** Reads the queue and replaces every row of the four gauges. */
    void refresh() {
        List<MultiGauge.Row<?>> f = new ArrayList<>(), b = new ArrayList<>();
        jdbc.query(WANTED + """
                SELECT coalesce(f.experiment, '') AS experiment, w.state, count(*) AS n, coalesce(sum(f.size_bytes), 0) AS bytes
                  FROM w JOIN file f ON f.id = w.file_id GROUP BY 1, 2""", rs -> {
            Tags tags = Tags.of("experiment", rs.getString("experiment"), "state", rs.getString("state"));
            f.add(MultiGauge.Row.of(tags, rs.getLong("n")));
            b.add(MultiGauge.Row.of(tags, rs.getLong("bytes")));
        });
        Map<String, long[]> perVolume = new TreeMap<>();
        jdbc.query(WANTED + """
                SELECT v.label, count(*) AS n, coalesce(sum(f.size_bytes), 0) AS bytes
                  FROM w JOIN file f ON f.id = w.file_id
                  JOIN segment s ON s.file_id = w.file_id AND s.state = 'ok'
                  JOIN volume v ON v.id = s.volume_id AND v.state = 'available'
                 WHERE w.state = 'queued' GROUP BY v.label
                UNION ALL
                SELECT w.volume, count(*), coalesce(sum(f.size_bytes), 0)
                  FROM w JOIN file f ON f.id = w.file_id
                 WHERE w.state = 'staging' GROUP BY w.volume""", rs -> {
            long[] v = perVolume.computeIfAbsent(rs.getString(1), k -> new long[2]);
            v[0] += rs.getLong(2);
            v[1] += rs.getLong(3);
        });
        List<MultiGauge.Row<?>> vf = new ArrayList<>(), vb = new ArrayList<>();
        perVolume.forEach((label, v) -> {
            vf.add(MultiGauge.Row.of(Tags.of("volume", label), v[0]));
            vb.add(MultiGauge.Row.of(Tags.of("volume", label), v[1]));
        });
        files.register(f, true);
        bytes.register(b, true);
        volumeFiles.register(vf, true);
        volumeBytes.register(vb, true);
    }

    @Override
    public synchronized void start() {
        if (interval.isZero() || interval.isNegative()) return;
        timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "recall-queue-metrics");
            t.setDaemon(true);
            return t;
        });
        timer.scheduleWithFixedDelay(() -> {
            try {
                refresh();
            } catch (RuntimeException e) {
                log.debug("recall queue metrics not refreshed: {}", e.toString()); // the database may be away
            }
        }, 0, interval.toMillis(), TimeUnit.MILLISECONDS);
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
