package dev.stagehand.recall.service;

import dev.stagehand.recall.RecallQueues;
import dev.stagehand.recall.scheduler.Backlog;
import dev.stagehand.recall.scheduler.RecallEngine;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * {@link RecallQueues} from this instance's scheduler when it runs one, else from the rows. The scheduler's model
 * holds every open request, so only the files being read (a few per drive, along the staging rows' partial index)
 * are read from the database: at 10^6 queued files the whole-queue query took 2-13 s and the model's walk takes
 * tens of milliseconds.
 */
public final class RecallQueueView implements RecallQueues {

    private final JdbcTemplate jdbc;
    private final Supplier<RecallService> service;

    /** @param service this instance's recall scheduler, or null when it runs none */
    public RecallQueueView(JdbcTemplate jdbc, Supplier<RecallService> service) {
        this.jdbc = jdbc;
        this.service = service;
    }

    /** Per volume (null: no usable copy) while being summed. */
    private static final class Load {
        long queued, staging, bytes;
        Instant oldest, eta;

        void add(long queuedFiles, long stagingFiles, long b, Instant o, Instant e) {
            queued += queuedFiles;
            staging += stagingFiles;
            bytes += b;
            if (o != null && (oldest == null || o.isBefore(oldest))) oldest = o;
            if (e != null && (eta == null || e.isAfter(eta))) eta = e;
        }
    }

    @Override
    public Snapshot snapshot() {
        RecallService s = service.get();
        RecallEngine engine = s == null ? null : s.engine();
        return engine == null ? fromRows() : fromScheduler(engine);
    }

    private Snapshot fromScheduler(RecallEngine engine) {
        Map<String, Load> volumes = new HashMap<>();
        Map<List<String>, long[]> experiments = new HashMap<>();
        Set<Long> reading = new HashSet<>();
        // the files being read, by this instance or another, where they are read
        jdbc.query("""
                SELECT rf.file_id, rf.volume, f.size_bytes, coalesce(f.experiment, '') AS experiment, w.oldest, w.eta
                  FROM recall_file rf JOIN file f ON f.id = rf.file_id
                  JOIN LATERAL (SELECT min(r.created_at) AS oldest, max(r.eta_at) AS eta
                                  FROM stage_request_file x JOIN stage_request r ON r.id = x.request_id
                                 WHERE x.file_id = rf.file_id AND x.state IN ('queued', 'staging')
                                   AND r.state IN ('submitted', 'active')) w ON w.oldest IS NOT NULL
                 WHERE rf.state = 'staging'""", rs -> {
            reading.add(rs.getLong("file_id"));
            long size = rs.getLong("size_bytes");
            volumes.computeIfAbsent(rs.getString("volume"), k -> new Load())
                    .add(0, 1, size, instant(rs, "oldest"), instant(rs, "eta"));
            count(experiments, rs.getString("experiment"), "staging", 1, size);
        });
        // the queued ones as the scheduler plans them (a file claimed since that query is in neither: a moment)
        Backlog backlog = engine.backlog(reading);
        // the oldest as an age on the engine's clock (a scaled one in demos) from the host's now, like the rows';
        // the ETA as the engine gives it everywhere (its eta_at)
        double engineNow = engine.now();
        Instant now = Instant.now();
        backlog.perVolume().forEach((volume, t) -> volumes.computeIfAbsent(volume, k -> new Load())
                .add(t.files(), 0, t.bytes(), now.minusNanos((long) ((engineNow - t.oldestArrival()) * 1e9)),
                        Double.isNaN(t.latestEta()) ? null : engine.toInstant(t.latestEta())));
        backlog.perExperiment().forEach((experiment, t) -> count(experiments, experiment, "queued", t.files(), t.bytes()));
        return snapshot(volumes, experiments, true);
    }

    /**
     * Every open file read from the rows in one statement (one snapshot): a queued file on its first available
     * copy by label, a staging one on the volume being read, a file with no usable copy under null.
     */
    private Snapshot fromRows() {
        Map<String, Load> volumes = new HashMap<>();
        Map<List<String>, long[]> experiments = new HashMap<>();
        jdbc.query("""
                WITH open_files AS (
                    SELECT DISTINCT ON (rf.file_id) rf.file_id, rf.state,
                           CASE WHEN rf.state = 'staging' THEN rf.volume ELSE v.label END AS volume
                      FROM recall_file rf
                      LEFT JOIN segment s ON rf.state = 'queued' AND s.file_id = rf.file_id AND s.state = 'ok'
                      LEFT JOIN volume v ON v.id = s.volume_id AND v.state = 'available'
                     WHERE rf.state IN ('queued', 'staging')
                     ORDER BY rf.file_id, v.label NULLS LAST),
                waits AS (
                    SELECT x.file_id, min(r.created_at) AS oldest, max(r.eta_at) AS eta
                      FROM stage_request_file x JOIN stage_request r ON r.id = x.request_id
                     WHERE x.state IN ('queued', 'staging') AND r.state IN ('submitted', 'active')
                     GROUP BY x.file_id)
                SELECT o.volume, coalesce(f.experiment, '') AS experiment, o.state, count(*) AS files,
                       sum(f.size_bytes) AS bytes, min(w.oldest) AS oldest, max(w.eta) AS eta
                  FROM open_files o JOIN waits w ON w.file_id = o.file_id JOIN file f ON f.id = o.file_id
                 GROUP BY o.volume, f.experiment, o.state""", rs -> {
            boolean staging = rs.getString("state").equals("staging");
            long files = rs.getLong("files"), bytes = rs.getLong("bytes");
            volumes.computeIfAbsent(rs.getString("volume"), k -> new Load())
                    .add(staging ? 0 : files, staging ? files : 0, bytes, instant(rs, "oldest"), instant(rs, "eta"));
            count(experiments, rs.getString("experiment"), rs.getString("state"), files, bytes);
        });
        return snapshot(volumes, experiments, false);
    }

    private static void count(Map<List<String>, long[]> experiments, String experiment, String state, long files, long bytes) {
        long[] n = experiments.computeIfAbsent(List.of(experiment, state), k -> new long[2]);
        n[0] += files;
        n[1] += bytes;
    }

    private static Instant instant(ResultSet rs, String column) throws SQLException {
        Timestamp t = rs.getTimestamp(column);
        return t == null ? null : t.toInstant();
    }

    /** Largest volumes first (by bytes, then label), experiments by name and state. */
    private static Snapshot snapshot(Map<String, Load> volumes, Map<List<String>, long[]> experiments, boolean fromScheduler) {
        List<VolumeLoad> v = new ArrayList<>(volumes.size());
        volumes.forEach((label, l) -> v.add(new VolumeLoad(label, l.queued, l.staging, l.bytes, l.oldest, l.eta)));
        v.sort(Comparator.comparingLong(VolumeLoad::bytes).reversed()
                .thenComparing(VolumeLoad::volume, Comparator.nullsLast(Comparator.naturalOrder())));
        List<ExperimentLoad> e = new ArrayList<>(experiments.size());
        experiments.forEach((k, n) -> e.add(new ExperimentLoad(k.get(0), k.get(1), n[0], n[1])));
        e.sort(Comparator.comparing(ExperimentLoad::experiment).thenComparing(ExperimentLoad::state));
        return new Snapshot(List.copyOf(v), List.copyOf(e), fromScheduler, Instant.now());
    }
}
