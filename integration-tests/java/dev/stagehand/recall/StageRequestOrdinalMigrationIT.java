package dev.stagehand.recall;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.stagehand.platform.LocalPostgres;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.MigrationVersion;
import org.junit.jupiter.api.Test;
import org.springframework.dao.DataIntegrityViolationException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DriverManagerDataSource;

/**
 * V27 on a database that holds request files without a place (written before V6): they are numbered after
 * their request's others by file id, and a file without a place can no longer be written. V30 counts the files
 * already there.
 */
class StageRequestOrdinalMigrationIT {

    @Test
    void filesWithoutAPlaceAreNumberedAfterTheOthersByFileId() {
        LocalPostgres pg = LocalPostgres.at(Path.of(System.getProperty("stagehand.db.local-dir", "target/pg")));
        LocalPostgres.Connection db = pg.start("stagehand_v27_" + System.currentTimeMillis());
        try {
            var flyway = Flyway.configure().dataSource(db.url(), db.user(), db.password()).locations("classpath:db/migration");
            flyway.target(MigrationVersion.fromVersion("26")).load().migrate();
            JdbcTemplate jdbc = new JdbcTemplate(new DriverManagerDataSource(db.url(), db.user(), db.password()));
            List<Long> files = jdbc.queryForList("""
                    INSERT INTO file (name, size_bytes, adler32, experiment)
                    SELECT '/v26/f' || i, 1, '00000001', 'atlas' FROM generate_series(1, 5) i RETURNING id""", Long.class);
            UUID legacy = request(jdbc, 3), mixed = request(jdbc, 3);
            // legacy: none has a place, inserted out of id order; mixed: two placed, one not
            for (long f : List.of(files.get(2), files.get(0), files.get(1))) {
                jdbc.update("INSERT INTO stage_request_file (request_id, file_id) VALUES (?, ?)", legacy, f);
            }
            jdbc.update("INSERT INTO stage_request_file (request_id, file_id, ordinal) VALUES (?, ?, 1), (?, ?, 2)",
                    mixed, files.get(4), mixed, files.get(3));
            jdbc.update("INSERT INTO stage_request_file (request_id, file_id) VALUES (?, ?)", mixed, files.get(0));
            jdbc.update("UPDATE stage_request_file SET state = 'on_disk', released = true WHERE request_id = ? AND file_id = ?",
                    mixed, files.get(4));

            flyway.target(MigrationVersion.LATEST).load().migrate();

            assertThat(places(jdbc, legacy)).containsExactly(files.get(0), files.get(1), files.get(2));
            assertThat(places(jdbc, mixed)).containsExactly(files.get(4), files.get(3), files.get(0));
            assertThatThrownBy(() -> jdbc.update("INSERT INTO stage_request_file (request_id, file_id) VALUES (?, ?)",
                    legacy, files.get(3))).isInstanceOf(DataIntegrityViolationException.class);
            // V30 counted the files already there per request and state (its triggers count the changes from then on)
            List<Map<String, Object>> counted = jdbc.queryForList("SELECT request_id, state, files, released FROM stage_request_count ORDER BY 1, 2");
            assertThat(counted).hasSize(3).isEqualTo(jdbc.queryForList("""
                    SELECT request_id, state, count(*) AS files, count(*) FILTER (WHERE released) AS released
                      FROM stage_request_file GROUP BY 1, 2 ORDER BY 1, 2"""));
        } finally {
            pg.stop();
        }
    }

    static UUID request(JdbcTemplate jdbc, int files) {
        UUID id = UUID.randomUUID();
        jdbc.update("INSERT INTO stage_request (id, owner, file_count) VALUES (?, 'v26', ?)", id, files);
        return id;
    }

    /** The request's files by place; the places must be 1..n. */
    static List<Long> places(JdbcTemplate jdbc, UUID request) {
        List<Integer> ordinals = jdbc.queryForList("SELECT ordinal FROM stage_request_file WHERE request_id = ? ORDER BY ordinal",
                Integer.class, request);
        assertThat(ordinals).containsExactly(1, 2, 3);
        return jdbc.queryForList("SELECT file_id FROM stage_request_file WHERE request_id = ? ORDER BY ordinal", Long.class, request);
    }
}
