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
 * renewal (a third of the lease), and the partial file its mover left at the destination is deleted unless
 * another transfer to the same place was queued meanwhile. The drainer here runs on the real database with a mover whose files never
 * finish on their own, so only the cancel can end them.
 */
@SpringBootTest(properties = "stagehand.transfer.queue.enabled=false")
class TransferCancelIT {

    @Autowired
    JdbcTemplate jdbc;

    @Autowired
    TransferProperties properties;

    @Autowired
    org.springframework.beans.factory.ObjectProvider<io.micrometer.core.instrument.MeterRegistry> registry;

    @Autowired
    org.springframework.beans.factory.ObjectProvider<Mover> movers;

    @Test
    void aCancelledFileIsDroppedAtTheNextPollWhileItsLeaseRunsAndItsPartialFileDeleted() throws Exception {
        String destination = "ftp://127.0.0.1:1/x/held-" + System.nanoTime();
        HeldMover mover = cancelWhileMoving(destination, false);
        assertThat(mover.deleted).as("the partial file at its destination deleted").containsExactly(java.net.URI.create(destination));
    }

    /** Another transfer to the same place was queued meanwhile (replication's next attempt): its file is left alone. */
    @Test
    void aCancelledFilesPartialFileStaysWhenAnotherTransferIsQueuedToTheSamePlace() throws Exception {
        String destination = "ftp://127.0.0.1:1/x/held-" + System.nanoTime();
        HeldMover mover = cancelWhileMoving(destination, true);
        assertThat(mover.deleted).isEmpty();
    }

    /**
     * Runs a drainer over one row to {@code destination}, cancels it while its file moves and waits until the
     * drainer recorded the file's end; with {@code another}, a second row to the same place is queued first.
     */
    HeldMover cancelWhileMoving(String destination, boolean another) throws Exception {
        // not claimable by the drainers of other test contexts on this database (not_before): only ours gets it
        String insert = """
                INSERT INTO transfer_job (correlation, source, destination, size_bytes, not_before)
                VALUES ('cancel-it', 'file:///nonexistent/held', ?, 1, 'infinity') RETURNING id""";
        long id = jdbc.queryForObject(insert, Long.class, destination);
        HeldMover mover = new HeldMover();
        var settings = new TransferProperties.Queue(true, Duration.ofMillis(100), 200, 2000, Duration.ofMinutes(30), "",
                properties.queue().outage(), 5);
        CountDownLatch recorded = new CountDownLatch(1);
        TransferObserver seen = new TransferObserver(registry, movers) {
            @Override
            void finished(TransferJob job, FileCopy copy, java.time.Instant claimedAt, CopyResult result, TransferFailure failure) {
                recorded.countDown();
            }
        };
        TransferDrainer drainer = new TransferDrainer(new OneRowQueue(jdbc, id), mover,
                new TransferProperties(properties.mover(), settings), seen);
        Long other = null;
        drainer.start();
        try {
            assertThat(mover.moving.await(30, TimeUnit.SECONDS)).as("the drainer took the row").isTrue();
            if (another) other = jdbc.queryForObject(insert, Long.class, destination);
            assertThat(new TransferQueue(jdbc).cancel(id)).isTrue();
            // the lease is 30 minutes: its renewal, every 10, is not what notices the cancel
            assertThat(mover.dropped.await(30, TimeUnit.SECONDS)).as("the file dropped while its lease runs").isTrue();
            assertThat(recorded.await(30, TimeUnit.SECONDS)).as("the drainer recorded its end").isTrue();
            assertThat(new TransferQueue(jdbc).job(id).state()).isEqualTo("cancelled");
        } finally {
            drainer.stop();
            jdbc.update("UPDATE transfer_job SET state = 'cancelled', finished_at = now(), lease_owner = NULL, lease_until = NULL "
                    + "WHERE id IN (?, ?) AND state <> 'cancelled'", id, other == null ? id : other);
        }
        return mover;
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
        final List<java.net.URI> deleted = new java.util.concurrent.CopyOnWriteArrayList<>();

        @Override
        public Map<java.net.URI, TransferFailure> delete(java.util.Collection<java.net.URI> urls) {
            deleted.addAll(urls);
            return Map.of();
        }

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
