package dev.stagehand.observability;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Health and readiness follow the database: with its database refusing connections the service is not
 * ready (503, component db DOWN) but still alive; once the database is back it is ready again by itself.
 * A database of its own, so no other test loses its connections.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
        "stagehand.db.local-database=stagehand_health", "stagehand.db.pool-size=3", // one cluster for all IT contexts
        "stagehand.recall.enabled=false", "stagehand.transfer.queue.enabled=false", "stagehand.recall.metrics.queue-interval=0",
        "stagehand.cache.directories[0].path=target/health-it/cache", "stagehand.cache.directories[0].create-missing=true", "stagehand.cache.health.min-free=1MB",
        "management.endpoint.health.show-details=always", "management.endpoint.health.show-components=always"})
class HealthIT {

    static final JsonMapper JSON = JsonMapper.builder().build();

    @LocalServerPort int port;
    @Autowired DataSource dataSource;

    record Answer(int status, JsonNode json) {}

    Answer get(String path) throws Exception {
        HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://localhost:" + port + path))
                .timeout(Duration.ofSeconds(90)).GET().build(), HttpResponse.BodyHandlers.ofString());
        return new Answer(r.statusCode(), JSON.readTree(r.body()));
    }

    /** Runs {@code sql} on the cluster's maintenance database (not the one being blocked). */
    void admin(String sql) throws Exception {
        HikariDataSource pool = (HikariDataSource) dataSource;
        String url = pool.getJdbcUrl().replaceAll("/stagehand_health(\\?.*)?$", "/postgres$1");
        try (Connection c = DriverManager.getConnection(url, pool.getUsername(), pool.getPassword()); Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }

    @Test
    void readinessIsDownWhileTheDatabaseRefusesConnectionsAndComesBackByItself() throws Exception {
        Answer ready = get("/actuator/health/readiness");
        assertThat(ready.status()).isEqualTo(200);
        assertThat(ready.json().get("components").get("db").get("status").stringValue()).isEqualTo("UP");
        assertThat(ready.json().get("components").get("cacheDirectories").get("status").stringValue()).isEqualTo("UP");

        HikariDataSource pool = (HikariDataSource) dataSource;
        try {
            admin("ALTER DATABASE stagehand_health ALLOW_CONNECTIONS false");
            admin("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'stagehand_health'");
            pool.getHikariPoolMXBean().softEvictConnections();

            // the db check gives up after stagehand.db.health-timeout (2 s), not the pool's connection timeout
            // (Hikari's 30 s, which Spring Boot's own check waited for)
            long asked = System.nanoTime();
            Answer notReady = get("/actuator/health/readiness");
            long tookMillis = (System.nanoTime() - asked) / 1_000_000;
            assertThat(notReady.status()).isEqualTo(503);
            assertThat(tookMillis).as("readiness answered DOWN in %d ms", tookMillis).isLessThan(15_000);
            assertThat(notReady.json().get("components").get("db").get("details").toString()).containsAnyOf(
                    "no valid connection within 2000 ms", "error"); // timed out, or the pool already said why
            assertThat(notReady.json().get("status").stringValue()).isEqualTo("DOWN");
            assertThat(notReady.json().get("components").get("db").get("status").stringValue()).isEqualTo("DOWN");
            assertThat(notReady.json().get("components").get("tapeLibrary").get("status").stringValue()).isEqualTo("UP");
            assertThat(notReady.json().get("components").get("cacheDirectories").get("status").stringValue()).isEqualTo("UP");
            Answer alive = get("/actuator/health/liveness");
            assertThat(alive.status()).isEqualTo(200);
            assertThat(alive.json().get("status").stringValue()).isEqualTo("UP");
        } finally {
            admin("ALTER DATABASE stagehand_health ALLOW_CONNECTIONS true");
        }
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        Answer again;
        do {
            again = get("/actuator/health/readiness");
            if (again.status() == 200) break;
            Thread.sleep(200);
        } while (System.nanoTime() < deadline);
        assertThat(again.status()).isEqualTo(200);
        assertThat(again.json().get("components").get("db").get("status").stringValue()).isEqualTo("UP");
    }
}
