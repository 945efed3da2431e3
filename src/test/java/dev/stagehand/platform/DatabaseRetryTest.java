package dev.stagehand.platform;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.sql.SQLException;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.dao.DataIntegrityViolationException;
import org.springframework.jdbc.CannotGetJdbcConnectionException;
import org.springframework.jdbc.UncategorizedSQLException;

class DatabaseRetryTest {

    @Test
    void retriesWhileTheDatabaseIsAwayThenReturnsTheResult() {
        AtomicInteger calls = new AtomicInteger();
        String result = DatabaseRetry.call("test", () -> {
            if (calls.incrementAndGet() < 3) throw new CannotGetJdbcConnectionException("Connection refused");
            return "done";
        });
        assertThat(result).isEqualTo("done");
        assertThat(calls).hasValue(3);
    }

    @Test
    void aBadStatementIsThrownAtOnce() {
        AtomicInteger calls = new AtomicInteger();
        assertThatThrownBy(() -> DatabaseRetry.call("test", () -> {
            calls.incrementAndGet();
            throw new DataIntegrityViolationException("duplicate key");
        })).isInstanceOf(DataIntegrityViolationException.class);
        assertThat(calls).hasValue(1);
    }

    @Test
    void connectionLossIsRecognisedBySqlState() {
        // what PostgreSQL sends when it is shut down under a session, wrapped as Spring leaves it uncategorised
        SQLException shutdown = new SQLException("terminating connection due to administrator command", "57P01");
        assertThat(DatabaseRetry.isConnectionLoss(new UncategorizedSQLException("x", "SELECT 1", shutdown))).isTrue();
        assertThat(DatabaseRetry.isConnectionLoss(new UncategorizedSQLException("x", "SELECT 1",
                new SQLException("connection attempt failed", "08001")))).isTrue();
        assertThat(DatabaseRetry.isConnectionLoss(new UncategorizedSQLException("x", "SELECT 1",
                new SQLException("syntax error", "42601")))).isFalse();
        assertThat(DatabaseRetry.noteFailure("poll", new IllegalStateException("not a database problem"))).isFalse();
    }
}
