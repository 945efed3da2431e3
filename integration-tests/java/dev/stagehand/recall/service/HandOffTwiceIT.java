package dev.stagehand.recall.service;

import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.ItDb;
import dev.stagehand.cache.CacheProperties;
import dev.stagehand.cache.DiskCache;
import dev.stagehand.recall.request.RecallMetrics;
import dev.stagehand.transfer.TransferQueue;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.transaction.support.TransactionTemplate;
import org.springframework.util.unit.DataSize;

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
    @Autowired JdbcClient db;
    @Autowired TransactionTemplate tx;

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

    /**
     * Two instances collect one transfer that failed on a bad cached copy: the one that reads the file again keeps
     * its pin for that read; the other, finding the file no longer waiting for the transfer, leaves the pin alone.
     * It released the pin, and the file read again landed unpinned (evictable before its own transfer).
     */
    @Test
    void theInstanceThatLosesAFailedTransferToAReadAgainLeavesThePinAlone() {
        ItDb.cancelOpenRequests(jdbc);
        String tag = UUID.randomUUID().toString().substring(0, 8);
        UUID request = UUID.randomUUID();
        long file = ItDb.simulatedFile(jdbc, "/it/handoff-bad/" + tag, 1_000);
        int dir = jdbc.queryForObject("INSERT INTO cache_directory (path, capacity_bytes, used_bytes) VALUES (?, 1000000, 1000) RETURNING id",
                Integer.class, "/it/handoff-bad/" + tag);
        String correlation = TransferHandOff.correlation(request.toString(), file);
        try {
            jdbc.update("INSERT INTO stage_request (id, owner, experiment, file_count, state, destination) "
                    + "VALUES (?, 'it', 'atlas', 1, 'active', 'gsiftp://remote.example/in')", request);
            jdbc.update("INSERT INTO stage_request_file (request_id, file_id, state, ordinal) VALUES (?, ?, 'transferring', 1)",
                    request, file);
            // its copy is gone from disk (no file at that path), and the mover said so
            jdbc.update("""
                    INSERT INTO cache_file (file_id, directory_id, path, size_bytes, adler32, state, created_at, last_access, verified_at)
                    SELECT id, ?, ? || '/copy', size_bytes, adler32, 'verified', now(), now(), now() FROM file WHERE id = ?""",
                    dir, "/it/handoff-bad/" + tag, file);
            cache.pin(List.of(file), request.toString(), Duration.ofDays(1));
            jdbc.update("INSERT INTO transfer_job (correlation, source, destination, size_bytes, state, finished_at, last_error_class, "
                    + "last_error) VALUES (?, 'file:///gone', 'gsiftp://remote.example/in/x', 1000, 'failed', now(), 'BAD_REQUEST', "
                    + "'BAD_REQUEST: cannot read local file')", correlation);

            TransferHandOff a = new TransferHandOff(jdbc, new TransferQueue(jdbc), cache, RecallMetrics.NONE, r -> {});
            // B has read the failed transfer; A's whole round runs as B looks at the copy
            DiskCache slow = new DiskCache(db, tx, new CacheProperties(List.of(new CacheProperties.Directory(
                    Path.of("/it/handoff-bad/" + tag), DataSize.ofMegabytes(1))), "b-" + tag), Clock.systemUTC(), null) {
                boolean first = true;

                @Override
                public String brokenCopy(long fileId, boolean readBytes) {
                    if (first) {
                        first = false;
                        a.collectAll();
                    }
                    return super.brokenCopy(fileId, readBytes);
                }
            };
            TransferHandOff b = new TransferHandOff(jdbc, new TransferQueue(jdbc), slow, RecallMetrics.NONE, r -> {});
            b.collectAll();

            assertThat(jdbc.queryForObject("SELECT state FROM stage_request_file WHERE request_id = ?", String.class, request))
                    .as("read again (by A)").isEqualTo("queued");
            assertThat(cache.pins(file)).as("the pin kept for the read again").containsKey(request.toString());
        } finally {
            jdbc.update("UPDATE stage_request SET state = 'cancelled', completed_at = now() WHERE id = ?", request);
            cache.releaseAll(request.toString());
            jdbc.update("DELETE FROM cache_file WHERE directory_id = ?", dir);
            jdbc.update("DELETE FROM cache_directory WHERE id = ?", dir);
        }
    }
}
