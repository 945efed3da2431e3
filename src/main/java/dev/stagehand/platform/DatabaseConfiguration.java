package dev.stagehand.platform;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import javax.sql.DataSource;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The one DataSource: the configured PostgreSQL database, or (embedded default) a private cluster that
 * is started here and stopped when the application context closes.
 */
@Configuration(proxyBeanMethods = false)
@EnableConfigurationProperties(DatabaseProperties.class)
class DatabaseConfiguration {

    @Bean(destroyMethod = "")
    LocalPostgresHandle localPostgres(DatabaseProperties props) {
        if (!props.embedded()) return new LocalPostgresHandle(null, null);
        LocalPostgres pg = LocalPostgres.at(props.localDir());
        return new LocalPostgresHandle(pg, pg.start(props.localDatabase()));
    }

    @Bean
    DataSource dataSource(DatabaseProperties props, LocalPostgresHandle local) {
        HikariConfig cfg = new HikariConfig();
        if (local.connection() != null) {
            cfg.setJdbcUrl(local.connection().url());
            cfg.setUsername(local.connection().user());
            cfg.setPassword(local.connection().password());
        } else {
            cfg.setJdbcUrl(props.url());
            cfg.setUsername(props.user());
            cfg.setPassword(props.password());
        }
        cfg.setMaximumPoolSize(props.poolSize());
        cfg.setPoolName("stagehand");
        // Fail fast on start-up rather than serving with no database; reconnection later is Hikari's job.
        cfg.setInitializationFailTimeout(30_000);
        return new HikariDataSource(cfg) {
            @Override
            public void close() {
                super.close();
                local.close(); // stop the private cluster only after the pool has let go of it
            }
        };
    }

    /** The private cluster (null when an external database is configured). */
    record LocalPostgresHandle(LocalPostgres cluster, LocalPostgres.Connection connection) implements AutoCloseable {
        @Override
        public void close() {
            if (cluster != null && !Boolean.getBoolean("stagehand.db.keep-local-running")) cluster.stop();
        }
    }
}
