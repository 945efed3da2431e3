package dev.stagehand.console;

import java.time.Instant;
import java.util.List;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Component;

/** The audit log: every operator action taken through the console, with who, what, when, on what, outcome. */
@Component
class AuditLog {

    record Entry(long id, Instant at, String actor, String action, String target, String detail, String outcome) {}

    private final JdbcClient db;

    AuditLog(JdbcClient db) {
        this.db = db;
    }

    void record(String actor, String action, String target, String detail, String outcome) {
        db.sql("INSERT INTO audit_log (actor, action, target, detail, outcome) VALUES (?, ?, ?, ?, ?)")
                .params(actor, action, target, detail, outcome).update();
    }

    List<Entry> recent(int limit) {
        return db.sql("SELECT * FROM audit_log ORDER BY id DESC LIMIT ?").param(limit)
                .query((rs, n) -> new Entry(rs.getLong("id"), rs.getTimestamp("at").toInstant(), rs.getString("actor"),
                        rs.getString("action"), rs.getString("target"), rs.getString("detail"), rs.getString("outcome")))
                .list();
    }
}
