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
        // Every statement planned for its own arguments: the driver no longer prepares a statement on the server
        // after five runs, where PostgreSQL then kept one generic plan when it looked no dearer. The same statement
        // runs with one file id and with 10^6 (a sweep's 25,000-id slices, then a big request's intake), and the
        // plan fitted to the slices made a cold start's intake 3x as slow (bench/intake.sh: its no-usable-copy check
        // 2.9 -> 10.6 s, its failed-files update 0.3 -> 6.0 s). Not plan_cache_mode = force_custom_plan: that also
        // plans the server's own foreign-key checks again for every row (a request's 300,000 files inserted in 9.1 s
        // against 3.8-4.3 s in psql).
        cfg.addDataSourceProperty("prepareThreshold", "0");
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
