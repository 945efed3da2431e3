package dev.stagehand.tape;

import dev.stagehand.platform.DatabaseRetry;
import java.time.Instant;
import java.util.List;
import java.util.Locale;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.core.simple.JdbcClient;

/**
 * Keeps drive state in PostgreSQL ({@code tape_drive}, V3): the library tells it every transition, and on
 * start-up the library is built from what it last wrote, so a tape left mounted is known to be mounted.
 * A database error is logged and does not stop the library (the next transition writes the row again).
 */
public final class DriveStateStore implements LibraryEvents {

    private static final Logger log = LoggerFactory.getLogger(DriveStateStore.class);

    private final JdbcClient jdbc;

    public DriveStateStore(JdbcClient jdbc) {
        this.jdbc = jdbc;
    }

    /** The drives of {@code library} as last persisted. */
    public List<DriveStatus> load(String library) {
        return jdbc.sql("SELECT name, state, volume_label, bytes_moved, down_requested FROM tape_drive WHERE library = ? ORDER BY name")
                .param(library)
                .query((rs, i) -> new DriveStatus(rs.getString(1), DriveState.valueOf(rs.getString(2).toUpperCase(Locale.ROOT)),
                        rs.getString(3), rs.getLong(4), rs.getBoolean(5)))
                .list();
    }

    /**
     * Writes one drive's state (insert or update). A cartridge is in one drive only: when this drive now holds
     * a volume another row still names (a drive that failed with it, e.g. on a mount that timed out, from which
     * the HSM has since mounted it elsewhere), that row gives it up. Else this row broke the one-drive index and
     * was not written: after a restart the drive holding the tape was taken for empty.
     */
    public void save(String library, DriveStatus s) {
        if (s.volume() != null) {
            jdbc.sql("""
                    UPDATE tape_drive SET volume_label = NULL, updated_at = now(),
                        state = CASE WHEN state IN ('failed', 'disabled') THEN state ELSE 'empty' END
                     WHERE library = ? AND volume_label = ? AND name <> ?""")
                    .params(library, s.volume(), s.drive())
                    .update();
        }
        jdbc.sql("""
                INSERT INTO tape_drive (library, name, state, volume_label, bytes_moved, down_requested, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, now())
                ON CONFLICT (library, name) DO UPDATE SET state = excluded.state, volume_label = excluded.volume_label,
                    bytes_moved = excluded.bytes_moved, down_requested = excluded.down_requested, updated_at = excluded.updated_at""")
                .params(library, s.drive(), s.state().name().toLowerCase(Locale.ROOT), s.volume(), s.bytesMoved(), s.downRequested())
                .update();
    }

    @Override
    public void driveChanged(String library, DriveStatus status, Instant at) {
        try {
            save(library, status);
        } catch (DataAccessException e) {
            // a database outage is logged once, by DatabaseRetry; the next change writes the drive's state again
            if (!DatabaseRetry.noteFailure("drive state", e)) {
                log.error("library {}: could not persist drive {} as {}", library, status.drive(), status.state(), e);
            }
        }
    }
}
