package dev.stagehand.recall.service;

import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.ItDb;
import dev.stagehand.recall.StageRequests;
import dev.stagehand.recall.StageRequests.NewStageRequest;
import dev.stagehand.recall.scheduler.Copy;
import dev.stagehand.recall.scheduler.FileWork;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * A request's last two files end in two transactions at once (two drives, or two instances): the request
 * must end. Each transaction settles before the other commits; without a lock each saw the other's file
 * still open and the request stayed active for ever.
 */
@SpringBootTest(properties = {"stagehand.recall.enabled=false"})
class SettlementIT {

    @Autowired JdbcTemplate jdbc;
    @Autowired StageRequests requests;

    @Test
    void aRequestWhoseLastTwoFilesLandInConcurrentTransactionsEnds() throws Exception {
        String tag = UUID.randomUUID().toString().substring(0, 8), instance = "settle-" + tag;
        FileWork a = file("/it/" + tag + "/a"), b = file("/it/" + tag + "/b");
        UUID id = requests.submit("it", new NewStageRequest(null, List.of(a.name(), b.name()), null, 86_400L, null, "atlas"))
                .request().id();
        for (FileWork f : List.of(a, b)) { // both claimed and being read by this instance
            jdbc.update("INSERT INTO recall_file (file_id, state, volume, claimed_by, lease_until) VALUES (?, 'staging', 'L1', ?, now() + interval '1 hour')",
                    f.id(), instance);
        }
        jdbc.update("UPDATE stage_request_file SET state = 'staging' WHERE request_id = ?", id);
        jdbc.update("UPDATE stage_request SET state = 'active' WHERE id = ?", id);

        // inside each transaction, after its file's rows changed and before it settles: wait for the other one
        // (at most 2 s: a transaction blocked on the other's lock never comes here)
        CyclicBarrier together = new CyclicBarrier(2);
        JdbcQueueStore store = new JdbcQueueStore(jdbc, instance, Duration.ofMinutes(10), t -> Instant.now(), landed -> {
            try {
                together.await(2, TimeUnit.SECONDS);
            } catch (Exception alone) {
                // the other transaction waits for this one's commit
            }
        });
        Thread ta = Thread.ofVirtual().start(() -> store.staged(a, "L1", 1, null));
        Thread tb = Thread.ofVirtual().start(() -> store.staged(b, "L1", 1, null));
        ta.join(30_000);
        tb.join(30_000);

        assertThat(jdbc.queryForList("SELECT state FROM stage_request_file WHERE request_id = ?", String.class, id))
                .containsOnly("on_disk");
        assertThat(jdbc.queryForObject("SELECT state FROM stage_request WHERE id = ?", String.class, id)).isEqualTo("done");
    }

    /**
     * This instance's read of a file failed after its claim had lapsed, and another instance has since read the
     * file and put it on disk: that failure must not fail the file, nor the requests that asked for it meanwhile
     * (a request answered from the cache at the next round was failed with the stale reason).
     */
    @Test
    void aReadThatFailedAfterItsClaimLapsedDoesNotFailAFileStagedElsewhere() {
        String tag = UUID.randomUUID().toString().substring(0, 8), instance = "settle-" + tag;
        FileWork f = file("/it/" + tag + "/f");
        // staged by another instance once our lease lapsed, and asked for by a request not yet taken in
        jdbc.update("INSERT INTO recall_file (file_id, state, volume, path, adler32) VALUES (?, 'on_disk', 'L1', '/cache/f', '00000001')",
                f.id());
        UUID id = requests.submit("it", new NewStageRequest(null, List.of(f.name()), null, 86_400L, null, "atlas")).request().id();
        new JdbcQueueStore(jdbc, instance, Duration.ofMinutes(10), t -> Instant.now(), landed -> {}).failed(f);

        assertThat(jdbc.queryForObject("SELECT state FROM recall_file WHERE file_id = ?", String.class, f.id())).isEqualTo("on_disk");
        assertThat(jdbc.queryForObject("SELECT state FROM stage_request_file WHERE request_id = ?", String.class, id)).isEqualTo("queued");
        assertThat(jdbc.queryForObject("SELECT state FROM stage_request WHERE id = ?", String.class, id)).isEqualTo("submitted");
    }

    private FileWork file(String name) {
        long id = ItDb.simulatedFile(jdbc, name, 1000);
        return new FileWork(id, name, 1000, List.of(new Copy("L1", 0)), "atlas", null, null);
    }
}
