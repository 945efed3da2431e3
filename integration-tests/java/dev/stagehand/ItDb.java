package dev.stagehand;

import dev.stagehand.tape.SimulatedContent;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.zip.Adler32;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Rows the integration tests write straight into the shared test database. IT classes run one at a time on
 * one database that outlives them, so what an earlier class left open is closed here before a test counts.
 */
public final class ItDb {

    private ItDb() {}

    /** Cancels every open stage request (and its queued or staging files) that earlier classes left behind. */
    public static void cancelOpenRequests(JdbcTemplate jdbc) {
        jdbc.update("""
                UPDATE stage_request_file SET state = 'cancelled', finished_at = now() WHERE state IN ('queued', 'staging')
                   AND request_id IN (SELECT id FROM stage_request WHERE state IN ('submitted', 'active'))""");
        jdbc.update("UPDATE stage_request SET state = 'cancelled', completed_at = now() WHERE state IN ('submitted', 'active')");
    }

    /** Takes every buffered archive file out of the buffer and drops unwritten tape copies: none is flushed or counted. */
    public static void retireArchiveBuffer(JdbcTemplate jdbc) {
        jdbc.update("DELETE FROM archive_copy WHERE state <> 'done'");
        jdbc.update("UPDATE archive_file SET state = 'evicted' WHERE state <> 'evicted'");
    }

    /** A catalog file of experiment atlas whose content is {@link SimulatedContent}'s for its name; returns its id. */
    public static long simulatedFile(JdbcTemplate jdbc, String name, long size) {
        return jdbc.queryForObject("INSERT INTO file (name, size_bytes, adler32, experiment) VALUES (?, ?, ?, 'atlas') RETURNING id",
                Long.class, name, size, SimulatedContent.adler32Hex(name, size));
    }

    /** Writes {@code data} as file {@code name} under {@code dir} and catalogs it (its Adler32, the dataset, experiment phenix). */
    public static void writtenFile(JdbcTemplate jdbc, Path dir, String name, byte[] data, long datasetId) throws IOException {
        Path p = dir.resolve(name.substring(1));
        Files.createDirectories(p.getParent());
        Files.write(p, data);
        Adler32 a = new Adler32();
        a.update(data);
        jdbc.update("INSERT INTO file (name, size_bytes, adler32, dataset_id, experiment) VALUES (?, ?, ?, ?, 'phenix')",
                name, data.length, String.format("%08x", a.getValue()), datasetId);
    }
}
