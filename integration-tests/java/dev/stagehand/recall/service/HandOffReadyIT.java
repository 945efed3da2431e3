package dev.stagehand.recall.service;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The hand-off looks for files on disk at every round (every poll, and after files land): it must read the
 * files on disk of the open requests, not every file of them (a big request nearly all sent). Written in a
 * transaction rolled back at the end: the shared database keeps nothing.
 */
@SpringBootTest(properties = {"stagehand.recall.enabled=false", "stagehand.transfer.queue.enabled=false"})
class HandOffReadyIT {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    @Autowired JdbcTemplate jdbc;
    @Autowired TransactionTemplate tx;

    @Test
    void aRoundReadsTheFilesOnDiskNotEveryFileOfTheOpenRequests() {
        String tag = UUID.randomUUID().toString().substring(0, 8);
        UUID request = UUID.randomUUID();
        tx.executeWithoutResult(s -> {
            jdbc.update("INSERT INTO stage_request (id, owner, experiment, file_count, state, destination) "
                    + "VALUES (?, 'it', 'atlas', 50000, 'active', 'gsiftp://remote.example/in')", request);
            jdbc.update("""
                    INSERT INTO file (name, size_bytes, adler32, experiment)
                    SELECT '/it/ready/' || ? || '/' || g, 1000, '00000001', 'atlas' FROM generate_series(1, 50000) g""", tag);
            // 5 on disk, the rest sent or under way
            jdbc.update("""
                    INSERT INTO stage_request_file (request_id, file_id, state, ordinal, finished_at)
                    SELECT ?, f.id, CASE WHEN n % 10000 = 0 THEN 'on_disk' WHEN n % 2 = 0 THEN 'done' ELSE 'transferring' END, n, now()
                      FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM file WHERE name LIKE ?) f""",
                    request, "/it/ready/" + tag + "/%");
            // their cache copies: the files on disk, and those sent whose copy is still cached
            long dir = jdbc.queryForObject("INSERT INTO cache_directory (path, capacity_bytes) VALUES (?, 1000000000000) RETURNING id",
                    Long.class, "/it/ready/" + tag);
            jdbc.update("""
                    INSERT INTO cache_file (file_id, directory_id, path, size_bytes, adler32, state, created_at, last_access)
                    SELECT x.file_id, ?, '/c/' || x.file_id, 1000, '00000001', 'verified', now(), now()
                      FROM stage_request_file x WHERE x.request_id = ? AND x.state IN ('on_disk', 'done')""", dir, request);
            jdbc.execute("ANALYZE stage_request_file");
            jdbc.execute("ANALYZE cache_file");
            jdbc.execute("ANALYZE file");
            JsonNode plan = JSON.readTree(jdbc.queryForObject("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "
                    // this request only (other tests leave open requests in the shared database)
                    + TransferHandOff.READY.replace("LIMIT ?", "LIMIT 1000").replace("WHERE x.state", "WHERE r.id = '" + request + "' AND x.state"),
                    String.class)).get(0).get("Plan");
            // the blocks of the request's files only: how the planner joins the cache's copies depends on their number
            // (25,000 here, a seq scan and hash join of 360 blocks in one run, index probes in another; at production
            // sizes probes); 50,000 rows of the request are some 400 blocks of the table alone
            long blocks = blocksOf(plan, "stage_request_file");
            assertThat(blocks).as("blocks of stage_request_file read by a round: %s", plan).isLessThan(50);
            s.setRollbackOnly();
        });
    }

    /** Blocks the plan's nodes on {@code table} read (hit or read from disk), summed over the tree. */
    static long blocksOf(JsonNode node, String table) {
        long own = table.equals(node.path("Relation Name").asString(""))
                ? node.get("Shared Hit Blocks").asLong() + node.get("Shared Read Blocks").asLong() : 0;
        for (JsonNode child : node.path("Plans")) own += blocksOf(child, table);
        return own;
    }
}
