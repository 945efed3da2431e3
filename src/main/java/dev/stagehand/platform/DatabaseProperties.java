package dev.stagehand.platform;

import java.nio.file.Path;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * Where the service keeps its state ({@code stagehand.db.*}, or STAGEHAND_DB_URL / _USER / _PASSWORD).
 *
 * @param url          JDBC URL of an existing PostgreSQL database; empty selects the embedded default
 * @param user         database user for {@code url}
 * @param password     database password for {@code url}
 * @param localDir     where the embedded default keeps its private cluster
 * @param localDatabase database name created in the private cluster
 * @param poolSize     maximum connections in the pool
 * @param healthTimeout readiness reports the database DOWN when no connection is valid within this time
 *                     (rather than after the pool's 30 s connection timeout)
 */
@ConfigurationProperties("stagehand.db")
public record DatabaseProperties(
        String url,
        String user,
        String password,
        @DefaultValue("var/pg") Path localDir,
        @DefaultValue("stagehand") String localDatabase,
        @DefaultValue("20") int poolSize,
        @DefaultValue("2s") java.time.Duration healthTimeout) {

    public boolean embedded() {
        return url == null || url.isBlank();
    }
}
