package dev.stagehand.console;

import dev.stagehand.platform.Throttled;
import dev.stagehand.recall.RecallQueues;
import dev.stagehand.tape.DriveState;
import dev.stagehand.tape.DriveStatus;
import dev.stagehand.tape.SimulatedLibrary;
import dev.stagehand.tape.TapeLibrary;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Component;

/**
 * What the console pages show, read in one place: drives and accessors from the tape library, queues per
 * volume, request progress and throughput from the rows the recall and transfer modules keep. Read-only:
 * every change goes through the owning module's public API.
 */
@Component
class ConsoleViews {

    /** @param goingDown an operator disabled it while it held a volume: it is unloaded once its list ends, then disabled */
    record DriveRow(String name, String state, String volume, String currentFile, double mbPerSecond, boolean enabled,
                    boolean goingDown) {

        /** Whether the Disable action applies: an empty drive, or one holding a volume not already going down. */
        public boolean canDisable() {
            DriveState s = DriveState.valueOf(state.toUpperCase(java.util.Locale.ROOT));
            return !goingDown && (s == DriveState.EMPTY || s.holdsVolume());
        }
    }

    /**
     * @param total      accessors in the library
     * @param busy       moving a cartridge now (null when the driver does not tell)
     * @param exchanges  drives mounting or unloading (each needs an accessor move; those beyond the busy ones wait)
     */
    record Accessors(int total, Integer busy, int exchanges) {
        public int waiting() {
            return busy == null ? 0 : Math.max(0, exchanges - busy);
        }
    }

    record VolumeQueue(String volume, long queued, long staging, long bytes, Duration oldest, Instant eta) {}

    record RequestProgress(String id, String owner, String experiment, int priority, String state, int files,
                           long queued, long staging, long onDisk, long done, long failed, long cancelled, Instant eta,
                           Instant createdAt, String etaUnknown) {}

    /** Bytes per minute over the last hour: tape reads (files staged) and WAN out (transfers done). */
    record Throughput(Instant from, List<Long> tapeRead, List<Long> wanOut) {}

    /** The overview's figures that read whole tables, computed together ({@link #overview}). */
    record Overview(List<VolumeQueue> queues, List<RequestProgress> open, Map<String, Long> requestCounts,
                    Throughput throughput, Instant asOf) {}

    private final JdbcClient db;
    private final RecallQueues queues;
    private final TapeLibrary library;
    private final MountLog mounts;
    /**
     * Shared by every open overview (each asks every 2 s) and recomputed at most a tenth of the time: with
     * 10^6 queued files the per-volume figures alone took 22 s, so one open overview kept a database core busy
     * (now tens of milliseconds where this instance recalls; the rows' query remains where it does not).
     */
    private final Throttled<Overview> overview = new Throttled<>(Duration.ofSeconds(2),
            () -> new Overview(volumeQueues(20), openRequests(15), requestCounts(), throughput(), Instant.now()));

    ConsoleViews(JdbcClient db, RecallQueues queues, TapeLibrary library, MountLog mounts) {
        this.db = db;
        this.queues = queues;
        this.library = library;
        this.mounts = mounts;
    }

    /** The queue, request and throughput figures of the overview (drives and accessors are read live). */
    Overview overview() {
        return overview.get();
    }

    List<DriveRow> drives() {
        List<DriveRow> rows = new ArrayList<>();
        for (DriveStatus d : library.drives()) {
            MountLog.LastRead last = mounts.lastRead(d.drive());
            boolean reading = d.state() == DriveState.READING || d.state() == DriveState.LOCATING || d.state() == DriveState.MOUNTED_IDLE;
            rows.add(new DriveRow(d.drive(), d.state().name().toLowerCase(java.util.Locale.ROOT), d.volume(),
                    reading && last != null ? last.file() : null, reading && last != null ? last.mbPerSecond() : 0,
                    d.state() != DriveState.DISABLED, d.downRequested()));
        }
        return rows;
    }

    Accessors accessors() {
        int exchanges = 0;
        for (DriveStatus d : library.drives()) if (d.state() == DriveState.MOUNTING || d.state() == DriveState.UNLOADING) exchanges++;
        Integer busy = library instanceof SimulatedLibrary sim ? library.layout().accessors() - sim.freeAccessors() : null;
        return new Accessors(library.layout().accessors(), busy, exchanges);
    }

    /**
     * Open recall work per volume, largest first ({@link RecallQueues}: this instance's scheduler's plan and the
     * reads under way; without a scheduler here, a queued file on its first available copy by label). Oldest =
     * age of the oldest request waiting for one of its files; ETA = the latest estimate of those requests.
     */
    List<VolumeQueue> volumeQueues(int limit) {
        Instant now = Instant.now();
        return queues.snapshot().volumes().stream().limit(limit)
                .map(v -> new VolumeQueue(v.volume() == null ? "(no usable copy)" : v.volume(), v.queued(), v.staging(), v.bytes(),
                        v.oldest() == null ? null : Duration.between(v.oldest(), now), v.eta()))
                .toList();
    }

    /**
     * Open requests (newest first) with per-state file counts (their running counts, V30: not every file), the files
     * absent from the catalog counted too, each in the state it ended in: those absent at submission failed, those
     * deleted from the catalog since (V59) as they ended. Only the failed ones were counted, so the states of a request
     * whose file was deleted on disk, done or cancelled did not add up to its files.
     */
    List<RequestProgress> openRequests(int limit) {
        return db.sql("""
                SELECT r.id, r.owner, r.experiment, r.priority, r.state, r.eta_at, r.eta_unknown, r.created_at,
                       r.file_count AS files,
                       sum(c.files) FILTER (WHERE c.state = 'queued') AS queued,
                       sum(c.files) FILTER (WHERE c.state = 'staging') AS staging,
                       sum(c.files) FILTER (WHERE c.state IN ('on_disk', 'transferring')) AS on_disk,
                       sum(c.files) FILTER (WHERE c.state = 'done') AS done,
                       sum(c.files) FILTER (WHERE c.state = 'failed') AS failed,
                       sum(c.files) FILTER (WHERE c.state = 'cancelled') AS cancelled
                  FROM (SELECT * FROM stage_request
                         WHERE state IN ('submitted', 'active') OR completed_at > now() - interval '10 minutes'
                         ORDER BY created_at DESC LIMIT ?) r -- the shown ones first
                  LEFT JOIN LATERAL (SELECT state, files FROM stage_request_count WHERE request_id = r.id
                                     UNION ALL
                                     SELECT coalesce(state, 'failed'), count(*) FROM stage_request_absent
                                      WHERE request_id = r.id GROUP BY 1) c ON true
                 GROUP BY r.id, r.owner, r.experiment, r.priority, r.state, r.eta_at, r.eta_unknown, r.created_at, r.file_count
                 ORDER BY r.created_at DESC""")
                .param(limit)
                .query((rs, n) -> new RequestProgress(rs.getString("id"), rs.getString("owner"), rs.getString("experiment"),
                        rs.getInt("priority"), rs.getString("state"), rs.getInt("files"), rs.getLong("queued"),
                        rs.getLong("staging"), rs.getLong("on_disk"), rs.getLong("done"), rs.getLong("failed"),
                        rs.getLong("cancelled"), rs.getTimestamp("eta_at") == null ? null : rs.getTimestamp("eta_at").toInstant(),
                        rs.getTimestamp("created_at").toInstant(), rs.getString("eta_unknown")))
                .list();
    }

    /** Requests per state (all time). */
    Map<String, Long> requestCounts() {
        Map<String, Long> counts = new LinkedHashMap<>();
        for (String s : List.of("submitted", "active", "done", "failed", "cancelled")) counts.put(s, 0L);
        db.sql("SELECT state, count(*) FROM stage_request GROUP BY state")
                .query(rs -> { counts.put(rs.getString(1), rs.getLong(2)); });
        return counts;
    }

    /** Tape reads along the files landed on disk by time (V32, a partial index), transfers along theirs (V25). */
    Throughput throughput() {
        Instant now = Instant.now();
        Instant from = now.minus(Duration.ofMinutes(60)).truncatedTo(java.time.temporal.ChronoUnit.MINUTES).plusSeconds(60);
        long[] tape = new long[60];
        long[] wan = new long[60];
        bin(tape, from, """
                SELECT rf.updated_at AS at, f.size_bytes FROM recall_file rf JOIN file f ON f.id = rf.file_id
                 WHERE rf.state = 'on_disk' AND rf.updated_at >= ?""");
        bin(wan, from, "SELECT finished_at AS at, bytes_moved AS size_bytes FROM transfer_job WHERE state = 'done' AND finished_at >= ?");
        List<Long> t = new ArrayList<>(60);
        List<Long> w = new ArrayList<>(60);
        for (int i = 0; i < 60; i++) {
            t.add(tape[i]);
            w.add(wan[i]);
        }
        return new Throughput(from, t, w);
    }

    /** The scheduler's estimate for a request ({@code at}), or null; without one, why it is not known, if the scheduler said. */
    record Eta(Instant at, String unknown) {}

    /** The scheduler's estimate for one request. */
    Eta eta(UUID request) {
        return db.sql("SELECT eta_at, eta_unknown FROM stage_request WHERE id = ?").param(request)
                .query((rs, n) -> new Eta(rs.getTimestamp(1) == null ? null : rs.getTimestamp(1).toInstant(), rs.getString(2)))
                .optional().orElse(new Eta(null, null));
    }

    private void bin(long[] bins, Instant from, String sql) {
        db.sql(sql).param(Timestamp.from(from)).query(rs -> {
            long minute = Duration.between(from, rs.getTimestamp("at").toInstant()).toMinutes();
            if (minute >= 0 && minute < bins.length) bins[(int) minute] += rs.getLong("size_bytes");
        });
    }
}
