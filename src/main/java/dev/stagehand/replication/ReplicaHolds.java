package dev.stagehand.replication;

import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;

/**
 * Whether replication still needs a file's local copy (the archive buffer asks before evicting it): a file
 * may leave when every active rule on its dataset has the copies it asks for done or verified. A rule that
 * has not yet reached the file (a cron rule before its next run, a rule whose sites are not chosen yet, a
 * rule fewer sites match than it wants copies) holds it: nothing leaves before its replication is done.
 */
@Component
public class ReplicaHolds {

    private final JdbcTemplate jdbc;

    public ReplicaHolds(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    public boolean mayEvict(long fileId) {
        return evictable(List.of(fileId)).contains(fileId);
    }

    /** The files of {@code fileIds} no rule holds any more (unknown ids are not returned). */
    public Set<Long> evictable(Collection<Long> fileIds) {
        if (fileIds.isEmpty()) return Set.of();
        return new HashSet<>(jdbc.queryForList("""
                SELECT f.id FROM file f WHERE f.id = ANY (?) AND NOT EXISTS (
                    SELECT 1 FROM replication_rule ru
                     WHERE ru.dataset_id = f.dataset_id AND ru.state = 'active' AND (ru.expires_at IS NULL OR ru.expires_at > now())
                       AND ru.copies > (SELECT count(*) FROM replication_rule_replica x
                                          JOIN replica r ON r.file_id = x.file_id AND r.site_id = x.site_id
                                         WHERE x.rule_id = ru.id AND x.file_id = f.id AND r.state IN ('done', 'verified')))""",
                Long.class, (Object) fileIds.toArray(Long[]::new)));
    }
}
