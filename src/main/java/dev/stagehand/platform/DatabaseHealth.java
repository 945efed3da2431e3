package dev.stagehand.platform;

import java.sql.Connection;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.stereotype.Component;

/**
 * Health of the database (contributor {@code db}, part of readiness; replaces Spring Boot's, which waits for
 * a pooled connection as long as the pool's connection timeout, 30 s, so a load balancer kept sending work
 * for half a minute of an outage). Asks the pool for a connection and checks it on a virtual thread, and
 * answers DOWN when that takes longer than {@code stagehand.db.health-timeout}. A check still waiting is
 * shared by the next probes rather than started again, so probes never pile up on the pool.
 */
@Component("dbHealthIndicator")
class DatabaseHealth implements HealthIndicator {

    private final DataSource dataSource;
    private final long timeoutMillis;
    private final AtomicReference<CompletableFuture<Boolean>> pending = new AtomicReference<>();

    DatabaseHealth(DataSource dataSource, DatabaseProperties props) {
        this.dataSource = dataSource;
        this.timeoutMillis = props.healthTimeout().toMillis();
    }

    @Override
    public Health health() {
        CompletableFuture<Boolean> check = pending.updateAndGet(p -> p != null && !p.isDone() ? p : start());
        try {
            boolean valid = check.get(timeoutMillis, TimeUnit.MILLISECONDS);
            Health.Builder h = valid ? Health.up() : Health.down().withDetail("reason", "the connection is not valid");
            return h.withDetail("database", "PostgreSQL").build();
        } catch (TimeoutException e) {
            return Health.down().withDetail("reason", "no valid connection within " + timeoutMillis + " ms").build();
        } catch (ExecutionException e) {
            return Health.down(e.getCause() instanceof Exception x ? x : e).build();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Health.unknown().build();
        }
    }

    private CompletableFuture<Boolean> start() {
        CompletableFuture<Boolean> f = new CompletableFuture<>();
        Thread.ofVirtual().name("db-health").start(() -> {
            try (Connection c = dataSource.getConnection()) {
                f.complete(c.isValid((int) Math.max(1, (timeoutMillis + 999) / 1000)));
            } catch (Throwable t) {
                f.completeExceptionally(t);
            }
        });
        return f;
    }
}
