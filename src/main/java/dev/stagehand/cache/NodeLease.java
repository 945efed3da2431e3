package dev.stagehand.cache;

import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A cache node name held for an instance's life: a PostgreSQL session advisory lock on the name, on a session of
 * its own (outside the pool, so the pool never recycles it). PostgreSQL ends the lock with the session, so a
 * crashed or killed instance frees its name at once and its restart takes it again and discards its own
 * half-written reservations; a running instance's name cannot be taken by another one, whose start would have
 * discarded the running one's reservations. The session is named {@code stagehand cache node <name>}
 * (pg_stat_activity.application_name) and asks PostgreSQL to probe its client every few seconds, so the name of
 * an instance whose host died (no FIN ever comes) is freed within about a minute, not TCP's two hours.
 */
final class NodeLease implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(NodeLease.class);
    /** The lock's key: this text and the node name, hashed by PostgreSQL. */
    private static final String KEY = "hashtextextended('stagehand.cache.node/' || ?, 0)";

    final String node;
    private final Connection session;

    private NodeLease(String node, Connection session) {
        this.node = node;
        this.session = session;
    }

    /**
     * Takes {@code node}, waiting up to {@code wait} for a session that holds it to end (a killed instance's session
     * ends within milliseconds, a dead host's within about a minute).
     *
     * @return the lease, or null if another running instance still holds the name after {@code wait}
     */
    static NodeLease take(DataSource ds, String node, Duration wait) {
        long deadline = System.nanoTime() + wait.toNanos();
        boolean told = false;
        while (true) {
            NodeLease lease = tryTake(ds, node);
            if (lease != null) return lease;
            if (System.nanoTime() >= deadline) return null;
            if (!told) {
                log.info("cache node {} is held by {}; waiting up to {} s for it to end", node, holder(ds, node), wait.toSeconds());
                told = true;
            }
            try {
                Thread.sleep(Math.min(1000, Math.max(1, (deadline - System.nanoTime()) / 1_000_000)));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return null;
            }
        }
    }

    /** The lease, or null at once if another session holds the name. */
    static NodeLease tryTake(DataSource ds, String node) {
        Connection c = open(ds);
        try {
            try (Statement s = c.createStatement()) {
                s.execute("SET application_name = " + quote(("stagehand cache node " + node)));
                // the server probes an idle client: a dead host's session (and its lock) ends in about a minute
                s.execute("SET tcp_keepalives_idle = 30");
                s.execute("SET tcp_keepalives_interval = 10");
                s.execute("SET tcp_keepalives_count = 3");
                s.execute("SET idle_session_timeout = 0");
            }
            try (PreparedStatement p = c.prepareStatement("SELECT pg_try_advisory_lock(" + KEY + ")")) {
                p.setString(1, node);
                try (ResultSet rs = p.executeQuery()) {
                    rs.next();
                    if (rs.getBoolean(1)) return new NodeLease(node, c);
                }
            }
            c.close();
            return null;
        } catch (SQLException e) {
            closeQuietly(c);
            throw new IllegalStateException("cannot take cache node " + node + ": " + e.getMessage(), e);
        }
    }

    /** Who holds the node's name: PostgreSQL backend, client address and since when, for the log and the error. */
    static String holder(DataSource ds, String node) {
        try (Connection c = ds.getConnection();
             PreparedStatement p = c.prepareStatement("""
                     SELECT a.pid, coalesce(host(a.client_addr), 'local socket'), a.backend_start, a.application_name
                       FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
                      WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
                        AND l.classid::bigint = ((%1$s) >> 32) & 4294967295 AND l.objid::bigint = (%1$s) & 4294967295
                     """.formatted(KEY))) {
            p.setString(1, node);
            p.setString(2, node);
            try (ResultSet rs = p.executeQuery()) {
                if (!rs.next()) return "another instance (it has just ended)";
                return "a running instance (PostgreSQL session pid " + rs.getInt(1) + " from " + rs.getString(2) + " since "
                        + rs.getObject(3, java.time.OffsetDateTime.class) + ", application_name '" + rs.getString(4) + "')";
            }
        } catch (SQLException e) {
            return "a running instance (" + e.getMessage() + ")";
        }
    }

    /** Whether the session holding the name is still there (a database restart ends it, and the lock with it). */
    boolean alive() {
        try {
            return session.isValid(5);
        } catch (SQLException e) {
            return false;
        }
    }

    /**
     * Frees the name first, then ends the session: a closed connection's backend exits after the client has moved
     * on, so a restart in the same moment (a test, a quick redeploy) could find the name still held for a while.
     */
    @Override
    public void close() {
        try (PreparedStatement p = session.prepareStatement("SELECT pg_advisory_unlock(" + KEY + ")")) {
            p.setQueryTimeout(5);
            p.setString(1, node);
            p.execute();
        } catch (SQLException e) {
            // the session is gone already (its lock with it), or ends below
        }
        closeQuietly(session);
    }

    /**
     * A session of its own: with Hikari a direct connection to the pool's database (a pooled one held for the
     * instance's life would shrink the pool); with another DataSource one of its connections.
     */
    private static Connection open(DataSource ds) {
        try {
            if (ds.isWrapperFor(HikariDataSource.class)) {
                HikariDataSource h = ds.unwrap(HikariDataSource.class);
                return DriverManager.getConnection(h.getJdbcUrl(), h.getUsername(), h.getPassword());
            }
            return ds.getConnection();
        } catch (SQLException e) {
            throw new IllegalStateException("cannot open a database session for the cache node's lease: " + e.getMessage(), e);
        }
    }

    private static String quote(String s) {
        return "'" + s.replace("'", "''") + "'";
    }

    private static void closeQuietly(Connection c) {
        try {
            c.close();
        } catch (SQLException e) {
            // the session ends either way
        }
    }
}
