package dev.stagehand.recall.service;

import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.ItDb;
import dev.stagehand.cache.DiskCache;
import dev.stagehand.recall.request.RecallMetrics;
import dev.stagehand.transfer.TransferQueue;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Every instance runs the hand-off at each poll and after its own files land, over the same rows: a file on
 * disk must be handed to the movers once, however the rounds of two instances overlap. Two transfers of one
 * file to one destination path ran at once, and the later one rewrote a copy the earlier had verified and
 * counted as done.
 */
@SpringBootTest(properties = {"stagehand.recall.enabled=false", "stagehand.transfer.queue.enabled=false"})
class HandOffTwiceIT {

    @Autowired JdbcTemplate jdbc;
    @Autowired DiskCache cache;

    @Test
    void twoInstancesWhoseRoundsOverlapHandAFileOverOnce() throws Exception {
        ItDb.cancelOpenRequests(jdbc); // the hand-off looks at every open request
        String tag = UUID.randomUUID().toString().substring(0, 8);
        UUID request = UUID.randomUUID();
        long file = ItDb.simulatedFile(jdbc, "/it/handoff-twice/" + tag, 1_000);
        int dir = jdbc.queryForObject("INSERT INTO cache_directory (path, capacity_bytes) VALUES (?, 1000000) RETURNING id",
                Integer.class, "/it/handoff-twice/" + tag);
        try {
            jdbc.update("INSERT INTO stage_request (id, owner, experiment, file_count, state, destination) "
                    + "VALUES (?, 'it', 'atlas', 1, 'active', 'gsiftp://remote.example/in')", request);
            jdbc.update("INSERT INTO stage_request_file (request_id, file_id, state, ordinal, finished_at) VALUES (?, ?, 'on_disk', 1, now())",
                    request, file);
            jdbc.update("""
                    INSERT INTO cache_file (file_id, directory_id, path, size_bytes, adler32, state, created_at, last_access)
                    SELECT id, ?, ? || '/copy', size_bytes, adler32, 'verified', now(), now() FROM file WHERE id = ?""",
                    dir, "/it/handoff-twice/" + tag, file);

            // instance A's round has read the file as ready and is queueing its transfer when B's round runs
            CountDownLatch aQueueing = new CountDownLatch(1), bDone = new CountDownLatch(1);
            TransferQueue slow = new TransferQueue(jdbc) {
                @Override
                public List<Long> enqueue(List<Request> requests) {
                    aQueueing.countDown();
                    try {
                        bDone.await(3, TimeUnit.SECONDS); // B may be waiting for A: then A goes on after a while
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    return super.enqueue(requests);
                }
            };
            TransferHandOff a = new TransferHandOff(jdbc, slow, cache, RecallMetrics.NONE, r -> {});
            TransferHandOff b = new TransferHandOff(jdbc, new TransferQueue(jdbc), cache, RecallMetrics.NONE, r -> {});
            Thread ta = Thread.ofPlatform().start(a::run);
            assertThat(aQueueing.await(30, TimeUnit.SECONDS)).isTrue();
            Thread tb = Thread.ofPlatform().start(() -> {
                b.run();
                bDone.countDown();
            });
            ta.join(30_000);
            tb.join(30_000);
            assertThat(ta.isAlive() || tb.isAlive()).as("a round still running").isFalse();

            assertThat(jdbc.queryForObject("SELECT count(*) FROM transfer_job WHERE correlation = ?", Integer.class,
                    TransferHandOff.correlation(request.toString(), file))).as("transfers queued for the file").isEqualTo(1);
            assertThat(jdbc.queryForObject("SELECT state FROM stage_request_file WHERE request_id = ?", String.class, request))
                    .isEqualTo("transferring");
        } finally {
            jdbc.update("UPDATE stage_request SET state = 'cancelled', completed_at = now() WHERE id = ?", request);
            jdbc.update("UPDATE transfer_job SET state = 'cancelled', finished_at = now() WHERE correlation = ? AND state = 'queued'",
                    TransferHandOff.correlation(request.toString(), file));
            jdbc.update("DELETE FROM cache_file WHERE directory_id = ?", dir);
            jdbc.update("DELETE FROM cache_directory WHERE id = ?", dir);
        }
    }
}
