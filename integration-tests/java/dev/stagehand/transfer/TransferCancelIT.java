package dev.stagehand.transfer;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * A row cancelled while its file is moving is dropped by the drainer at its next poll, not at its next lease
 * renewal (a third of the lease). The drainer here runs on the real database with a mover whose files never
 * finish on their own, so only the cancel can end them.
 */
@SpringBootTest(properties = "stagehand.transfer.queue.enabled=false")
class TransferCancelIT {

    @Autowired
    JdbcTemplate jdbc;

    @Autowired
    TransferProperties properties;

    @Autowired
    TransferObserver observer;

    @Test
    void aCancelledFileIsDroppedAtTheNextPollWhileItsLeaseRuns() throws Exception {
        // not claimable by the drainers of other test contexts on this database (not_before): only ours gets it
        long id = jdbc.queryForObject("""
                INSERT INTO transfer_job (correlation, source, destination, size_bytes, not_before)
                VALUES ('cancel-it', 'file:///nonexistent/held', 'ftp://127.0.0.1:1/x/held', 1, 'infinity') RETURNING id""",
                Long.class);
        HeldMover mover = new HeldMover();
        var settings = new TransferProperties.Queue(true, Duration.ofMillis(100), 200, 2000, Duration.ofMinutes(30), "",
                properties.queue().outage(), 5);
        TransferDrainer drainer = new TransferDrainer(new OneRowQueue(jdbc, id), mover,
                new TransferProperties(properties.mover(), settings), observer);
        drainer.start();
        try {
            assertThat(mover.moving.await(30, TimeUnit.SECONDS)).as("the drainer took the row").isTrue();
            assertThat(new TransferQueue(jdbc).cancel(id)).isTrue();
            // the lease is 30 minutes: its renewal, every 10, is not what notices the cancel
            assertThat(mover.dropped.await(30, TimeUnit.SECONDS)).as("the file dropped while its lease runs").isTrue();
            assertThat(new TransferQueue(jdbc).job(id).state()).isEqualTo("cancelled");
        } finally {
            drainer.stop();
            jdbc.update("UPDATE transfer_job SET state = 'cancelled', finished_at = now(), lease_owner = NULL, lease_until = NULL "
                    + "WHERE id = ? AND state <> 'cancelled'", id);
        }
    }

    /** The queue handing its drainer one row, this test's (other test contexts' drainers share the database). */
    static final class OneRowQueue extends TransferQueue {
        private final JdbcTemplate jdbc;
        private final long id;

        OneRowQueue(JdbcTemplate jdbc, long id) {
            super(jdbc);
            this.jdbc = jdbc;
            this.id = id;
        }

        @Override
        public List<TransferJob> claim(String owner, int limit, Duration lease, int maxLapses) {
            int n = jdbc.update("""
                    UPDATE transfer_job SET state = 'active', lease_owner = ?, lease_until = now() + make_interval(secs => ?),
                           attempts = attempts + 1, started_at = now()
                     WHERE id = ? AND state = 'queued'""", owner, lease.toSeconds(), id);
            return n == 1 ? List.of(job(id)) : List.of();
        }
    }

    /** A mover whose files finish only when cancelled. */
    static final class HeldMover implements Mover {
        final CountDownLatch moving = new CountDownLatch(1);
        final CountDownLatch dropped = new CountDownLatch(1);
        private final Map<String, CompletableFuture<CopyResult>> results = new ConcurrentHashMap<>();

        @Override
        public CopyBatch submit(List<FileCopy> copies) {
            for (FileCopy c : copies) results.put(c.id(), new CompletableFuture<>());
            moving.countDown();
            return new CopyBatch() {
                @Override
                public CompletableFuture<CopyResult> result(FileCopy copy) {
                    return results.get(copy.id());
                }

                @Override
                public void cancel(FileCopy copy) {
                    if (results.get(copy.id()).completeExceptionally(
                            new TransferFailure(TransferFailure.Kind.CANCELLED, "cancelled: " + copy.destination()))) {
                        dropped.countDown();
                    }
                }

                @Override
                public void cancelAll() {
                    copies.forEach(this::cancel);
                }

                @Override
                public CompletableFuture<Void> done() {
                    return CompletableFuture.allOf(copies.stream().map(this::result).toArray(CompletableFuture[]::new));
                }
            };
        }

        @Override
        public List<LinkStatus> links() {
            return List.of();
        }

        @Override
        public void close() {}
    }
}
