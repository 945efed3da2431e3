package dev.stagehand;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;

/** The service starts on its embedded defaults: a private PostgreSQL cluster, migrated by Flyway. */
@SpringBootTest
class ServiceStartsIT {

    @Autowired
    JdbcTemplate jdbc;

    @Test
    void migrationsApplyToTheRealDatabase() {
        assertThat(jdbc.queryForObject("SELECT version()", String.class)).startsWith("PostgreSQL");
        assertThat(jdbc.queryForObject(
                "SELECT count(*) FROM information_schema.tables WHERE table_name IN ('file','volume','segment')",
                Integer.class)).isEqualTo(3);
    }
}
