package dev.stagehand.platform;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;

/**
 * The service's connections plan each run of a statement for its own arguments. The driver prepares a statement
 * on the server after a few runs, and PostgreSQL then kept one generic plan: the intake's statements, run with a
 * sweep's 25,000-id slices and then with a 10^6-file request's ids, took 3-20x as long with the slices' plan.
 * The server's own plans stay cached: forcing a custom plan on the session planned every row's foreign-key check.
 */
@SpringBootTest(properties = "stagehand.recall.enabled=false")
class StatementPlansIT {

    @Autowired
    DataSource dataSource;

    @Test
    void aStatementRunManyTimesIsPlannedForItsArgumentsEveryTime() throws Exception {
        String sql = "SELECT count(*) FROM file WHERE id = ? /* StatementPlansIT */";
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < 20; i++) {
                ps.setLong(1, i);
                try (ResultSet rs = ps.executeQuery()) {
                    assertThat(rs.next()).isTrue();
                }
            }
            try (PreparedStatement q = c.prepareStatement("""
                    SELECT count(*) AS prepared, coalesce(sum(generic_plans), 0) AS generic FROM pg_prepared_statements
                     WHERE statement LIKE '%StatementPlansIT%' AND statement NOT LIKE '%pg_prepared_statements%'""");
                 ResultSet rs = q.executeQuery()) {
                assertThat(rs.next()).isTrue();
                assertThat(rs.getLong("generic")).as("runs with one generic plan kept by the server").isZero();
            }
            try (PreparedStatement q = c.prepareStatement("SHOW plan_cache_mode"); ResultSet rs = q.executeQuery()) {
                assertThat(rs.next()).isTrue();
                assertThat(rs.getString(1)).as("the server's own foreign-key checks keep their cached plans").isEqualTo("auto");
            }
        }
    }
}
