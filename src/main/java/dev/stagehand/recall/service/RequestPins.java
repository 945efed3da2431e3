package dev.stagehand.recall.service;

import java.time.Duration;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Requests' pins are made in a transaction that first holds their rows ({@code FOR KEY SHARE}, in id order as the
 * settlement locks them) and only then reads their files. Release, cancel and delete lock that row first
 * ({@code FOR UPDATE}), so one that committed before is seen and one that comes after waits, then removes the
 * pins made here. Read first and pinned in a second statement without the lock, a release or cancel committing
 * between the two had its pins put back for the request's whole disk lifetime: the copy stayed pinned though
 * nobody wanted it. One transaction for all the requests at once: one per request was one per file for clients
 * that ask a file per request, 10^5 transactions a sweep.
 */
final class RequestPins {

    private RequestPins() {}

    /** A pin's lifetime when the request names none (WLCG diskLifetime absent). */
    static Duration lifetime(long diskLifetimeSeconds) {
        return Duration.ofSeconds(diskLifetimeSeconds > 0 ? diskLifetimeSeconds : 86_400);
    }

    /**
     * Locks the rows of the open requests among {@code requestIds}, an SQL subquery over {@code args} (in this
     * transaction; they stay locked until it ends).
     */
    static void lockOpen(JdbcTemplate jdbc, String requestIds, Object... args) {
        jdbc.queryForList("SELECT id FROM stage_request WHERE state IN ('submitted', 'active') AND id IN (" + requestIds
                + ") ORDER BY id FOR KEY SHARE", args);
    }
}
