package dev.stagehand.console;

import dev.stagehand.platform.DatabaseRetry;
import dev.stagehand.tape.LibraryEvents;
import dev.stagehand.tape.ReadResult;
import dev.stagehand.tape.TapeFailure;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Component;

/**
 * Hears the tape library and keeps the mount history ({@code tape_mount_log}) for the drive timeline, plus
 * each drive's last read (file, rate) for the overview. Rows carry wall-clock times; rates are on the
 * library's own clock (the drive's speed, whatever the simulation's scale). A failed write here is logged
 * and never disturbs the library.
 */
@Component
class MountLog implements LibraryEvents {

    private static final Logger log = LoggerFactory.getLogger(MountLog.class);

    /** The last segment a drive read. */
    record LastRead(String file, long bytes, double mbPerSecond, Instant at) {}

    record Mount(long id, String drive, String volume, Instant requestedAt, Instant mountedAt, Instant dismountedAt,
                 String failure, long segmentsRead, long bytesRead) {}

    private final JdbcClient db;
    private final String library;
    private final Map<String, LastRead> lastRead = new ConcurrentHashMap<>();
    private final Map<String, Unwritten> unwritten = new ConcurrentHashMap<>();

    /**
     * How often a drive's reads are added to its open mount's row while it reads. Each was an UPDATE on the
     * library's event thread before the read was handed on (1.4–11 ms a file with small files on the 2-core
     * machine, bench/staging-rows.sh); they are written at most this often, at the mount's end and before the
     * timeline is read. A crash loses at most this much of the count: it is the timeline's figure, not a queue.
     */
    static final Duration WRITE_READS_EVERY = Duration.ofSeconds(1);

    /** A drive's reads not yet added to its open mount's row. */
    private static final class Unwritten {
        long segments, bytes;
        long since = System.nanoTime();
    }

    MountLog(JdbcClient db, org.springframework.core.env.Environment env) {
        this.db = db;
        this.library = env.getProperty("stagehand.tape.library", "sim");
    }

    @Override
    public void mountStarted(String drive, String volume, Instant at) {
        writeReads(drive); // of the tape leaving, if any
        safely(() -> {
            // a mount into a drive that still holds a tape is an exchange: the old one leaves now (its own
            // dismount event, if it comes later, refines the time); so a drive has one open mount
            db.sql("UPDATE tape_mount_log SET dismounted_at = greatest(now(), requested_at) "
                    + "WHERE library = ? AND drive = ? AND dismounted_at IS NULL AND failure IS NULL").params(library, drive).update();
            db.sql("INSERT INTO tape_mount_log (library, drive, volume_label, requested_at) VALUES (?, ?, ?, now())")
                    .params(library, drive, volume).update();
        });
        lastRead.remove(drive);
    }

    @Override
    public void mountFinished(String drive, String volume, Instant at, TapeFailure failure) {
        safely(() -> {
            if (failure == null) {
                db.sql("UPDATE tape_mount_log SET mounted_at = now() WHERE library = ? AND drive = ? AND volume_label = ? "
                        + "AND dismounted_at IS NULL AND failure IS NULL").params(library, drive, volume).update();
            } else {
                db.sql("UPDATE tape_mount_log SET failure = ?, dismounted_at = now() WHERE library = ? AND drive = ? "
                        + "AND volume_label = ? AND dismounted_at IS NULL AND failure IS NULL")
                        .params(failure.kind() + ": " + failure.getMessage(), library, drive, volume).update();
            }
        });
    }

    @Override
    public void segmentRead(String drive, ReadResult r) {
        double seconds = Duration.between(r.startedAt(), r.finishedAt()).toNanos() / 1e9 - r.locateSeconds();
        double rate = seconds > 0 ? r.segment().sizeBytes() / 1e6 / seconds : 0;
        lastRead.put(drive, new LastRead(r.segment().fileName(), r.segment().sizeBytes(), rate, Instant.now()));
        Unwritten u = unwritten.computeIfAbsent(drive, d -> new Unwritten());
        boolean due;
        synchronized (u) {
            u.segments++;
            u.bytes += r.segment().sizeBytes();
            due = System.nanoTime() - u.since >= WRITE_READS_EVERY.toNanos();
        }
        if (due) writeReads(drive);
    }

    /**
     * Adds the drive's reads not yet written to its open mount's row. Taken and written in one step: taken by the
     * timeline's read just as the tape left, they were written after the next mount's row was made, onto it; the
     * mount's end and start write first, so they wait for this.
     */
    private void writeReads(String drive) {
        Unwritten u = unwritten.get(drive);
        if (u == null) return;
        synchronized (u) {
            long segments = u.segments, bytes = u.bytes;
            u.segments = 0;
            u.bytes = 0;
            u.since = System.nanoTime();
            if (segments == 0) return;
            safely(() -> db.sql("UPDATE tape_mount_log SET segments_read = segments_read + ?, bytes_read = bytes_read + ? "
                            + "WHERE library = ? AND drive = ? AND dismounted_at IS NULL AND failure IS NULL")
                    .params(segments, bytes, library, drive).update());
        }
    }

    @Override
    public void dismounted(String drive, String volume, Instant at) {
        lastRead.remove(drive);
        writeReads(drive);
        safely(() -> db.sql("""
                UPDATE tape_mount_log SET dismounted_at = greatest(now(), requested_at)
                 WHERE id = (SELECT max(id) FROM tape_mount_log WHERE library = ? AND drive = ? AND volume_label = ?
                               AND failure IS NULL)""").params(library, drive, volume).update());
    }

    LastRead lastRead(String drive) {
        return lastRead.get(drive);
    }

    /** Mounts that overlap [since, now], oldest first, with every read this instance heard. */
    List<Mount> since(Instant since) {
        unwritten.keySet().forEach(this::writeReads);
        return db.sql("""
                SELECT * FROM tape_mount_log
                 WHERE library = ? AND (dismounted_at IS NULL OR dismounted_at >= ?) ORDER BY requested_at, id LIMIT 5000""")
                .params(library, java.sql.Timestamp.from(since))
                .query((rs, n) -> new Mount(rs.getLong("id"), rs.getString("drive"), rs.getString("volume_label"),
                        ts(rs.getTimestamp("requested_at")), ts(rs.getTimestamp("mounted_at")),
                        ts(rs.getTimestamp("dismounted_at")), rs.getString("failure"), rs.getLong("segments_read"),
                        rs.getLong("bytes_read")))
                .list();
    }

    private static Instant ts(java.sql.Timestamp t) {
        return t == null ? null : t.toInstant();
    }

    private static void safely(Runnable r) {
        try {
            r.run();
        } catch (RuntimeException e) {
            // a database outage is logged once, by DatabaseRetry, not once per mount-log line lost to it
            if (!DatabaseRetry.noteFailure("mount log", e)) log.warn("mount log not updated: {}", e.toString());
        }
    }
}
