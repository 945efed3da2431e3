package dev.stagehand.recall.service;

import java.time.Duration;
import java.util.List;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * A request's pins are made in a transaction that holds its row ({@code FOR KEY SHARE}) and reads its files under
 * it. Release, cancel and delete lock that row first ({@code FOR UPDATE}), so one that committed before is seen
 * and one that comes after waits, then removes the pins made here. Read first and pinned in a second statement
 * without the lock, a release or cancel committing between the two had its pins put back for the request's
 * whole disk lifetime: the copy stayed pinned though nobody wanted it.
 */
final class RequestPins {

    private RequestPins() {}

    /** A pin's lifetime when the request names none (WLCG diskLifetime absent). */
    static final Duration DEFAULT_LIFETIME = Duration.ofDays(1);

    /** Locks the row of an open request for its pins; returns its pin lifetime, or null if it is no longer open. */
    static Duration lockOpen(JdbcTemplate jdbc, String request) {
        List<Long> life = jdbc.queryForList("""
                SELECT coalesce(disk_lifetime_s, 0) FROM stage_request
                 WHERE id = ?::uuid AND state IN ('submitted', 'active') FOR KEY SHARE""", Long.class, request);
        if (life.isEmpty()) return null;
        return life.getFirst() > 0 ? Duration.ofSeconds(life.getFirst()) : DEFAULT_LIFETIME;
    }
}
