package dev.stagehand.catalog;

import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Service;

/**
 * Tape volumes as operators see them: their state (available, disabled, broken) and how much of the
 * catalog they hold. A volume that is not available is not used for new reads (the recall scheduler only
 * takes copies on available volumes).
 */
@Service
public class Volumes {

    public enum State {
        AVAILABLE, DISABLED, BROKEN;

        public String dbName() {
            return name().toLowerCase(Locale.ROOT);
        }

        /** Parses a state name (any case); a clear error names the allowed ones. */
        public static State parse(String s) {
            try {
                return valueOf(s.trim().toUpperCase(Locale.ROOT));
            } catch (RuntimeException e) {
                throw new IllegalArgumentException("unknown volume state '" + s + "' (allowed: available, disabled, broken)");
            }
        }
    }

    /** One volume, its state and the segments (and their bytes) it holds. */
    public record Volume(String label, String library, String mediaType, State state, String stateReason,
                         Instant updatedAt, long segments, long bytes) {}

    private final JdbcClient db;

    public Volumes(JdbcClient db) {
        this.db = db;
    }

    /** Volumes whose label contains {@code labelPart} (any, when empty), by label, at most {@code limit}. */
    public List<Volume> list(String labelPart, int limit) {
        return db.sql("""
                SELECT v.label, v.library, v.media_type, v.state, v.state_reason, v.updated_at,
                       count(s.file_id) AS segments, coalesce(sum(f.size_bytes), 0) AS bytes
                  FROM volume v LEFT JOIN segment s ON s.volume_id = v.id LEFT JOIN file f ON f.id = s.file_id
                 WHERE v.label ILIKE :pattern
                 GROUP BY v.id ORDER BY v.label LIMIT :limit""")
                .param("pattern", "%" + escapeLike(labelPart == null ? "" : labelPart) + "%")
                .param("limit", limit)
                .query((rs, n) -> new Volume(rs.getString("label"), rs.getString("library"), rs.getString("media_type"),
                        State.parse(rs.getString("state")), rs.getString("state_reason"),
                        rs.getTimestamp("updated_at").toInstant(), rs.getLong("segments"), rs.getLong("bytes")))
                .list();
    }

    public Optional<Volume> get(String label) {
        return list(label, 1_000).stream().filter(v -> v.label().equals(label)).findFirst();
    }

    /**
     * Sets a volume's state with the reason given (kept for operators). Returns false when there is no such
     * volume.
     */
    public boolean setState(String label, State state, String reason) {
        return db.sql("UPDATE volume SET state = :state, state_reason = :reason, updated_at = now() WHERE label = :label")
                .param("state", state.dbName())
                .param("reason", reason == null || reason.isBlank() ? null : reason.strip())
                .param("label", label)
                .update() == 1;
    }

    private static String escapeLike(String s) {
        return s.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_");
    }
}
