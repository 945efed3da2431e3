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

    /**
     * A row cancelled before its mover wrote anything at its destination (waiting for a connection, looking at
     * the destination): what is there is not its own and is left alone. Before, it was deleted as its partial file.
     */
    @Test
    void aCancelledFileThatHadNotWrittenLeavesItsDestinationAlone() throws Exception {
        String destination = "ftp://127.0.0.1:1/x/held-" + System.nanoTime();
        HeldMover mover = new HeldMover();
        mover.writes = false;
        cancelWhileMoving(destination, false, mover, id -> assertThat(new TransferQueue(jdbc).cancel(id)).isTrue());
        assertThat(mover.deleted).as("nothing deleted: the row never wrote there").isEmpty();
    }

    /**
     * A row failing for good before its mover wrote anything at its destination (a failure of its set-up, with a
     * class that may leave a partial file once written): the file there is not its own and is left alone.
     * Before, another's file there was deleted.
     */
    @Test
    void aFileFailingBeforeItWroteLeavesItsDestinationAlone() throws Exception {
        String destination = "ftp://127.0.0.1:1/x/failed-" + System.nanoTime();
        HeldMover mover = new HeldMover();
        mover.writes = false;
        failWhileMoving(destination, mover, id -> {});
        assertThat(mover.deleted).as("nothing deleted: the row never wrote there").isEmpty();
    }

    /** Another transfer to the same place was queued meanwhile (replication's next attempt): its file is left alone. */
    @Test
    void aCancelledFilesPartialFileStaysWhenAnotherTransferIsQueuedToTheSamePlace() throws Exception {
        String destination = "ftp://127.0.0.1:1/x/held-" + System.nanoTime();
        HeldMover mover = cancelWhileMoving(destination, true);
        assertThat(mover.deleted).isEmpty();
    }

    /**
     * A transfer queued to the same place while the cancelled one's partial file is being deleted is not claimed
     * until the delete is over. Before, it was claimed at once and its mover wrote there while the delete ran:
     * the delete removed its bytes (it failed its checksum and was sent again, or, verified by the server before
     * its 226, was reported done with no file left).
     */
    @Test
    void aTransferQueuedToTheSamePlaceWhileThePartialFileIsDeletedWaitsForTheDelete() throws Exception {
        String destination = "ftp://127.0.0.1:1/x/held-" + System.nanoTime();
        queuedMeanwhileWaitsForTheDelete(destination, mover ->
                cancelWhileMoving(destination, false, mover, id -> assertThat(new TransferQueue(jdbc).cancel(id)).isTrue()));
    }

    /**
     * A transfer to the same place queued in a transaction still open when the cancelled one's partial file is
     * looked at: the look waits for it to commit, sees it, and leaves the file alone. Before, the look did not
     * see it and the file was deleted as the new transfer started.
     */
    @Test
    void aCancelledFilesPartialFileStaysWhenATransferToTheSamePlaceIsBeingQueued() throws Exception {
        String destination = "ftp://127.0.0.1:1/x/held-" + System.nanoTime();
        var tx = new org.springframework.transaction.support.TransactionTemplate(
                new org.springframework.jdbc.datasource.DataSourceTransactionManager(jdbc.getDataSource()));
        long[] next = new long[1];
        HeldMover mover = new HeldMover();
        cancelWhileMoving(destination, false, mover, id -> {
            CountDownLatch queued = new CountDownLatch(1);
            CountDownLatch commit = new CountDownLatch(1);
            Thread enqueuer = Thread.ofVirtual().start(() -> tx.executeWithoutResult(t -> {
                // not claimable by other test contexts' drainers once committed: not_before in the future
                next[0] = new TransferQueue(jdbc).enqueue(List.of(new TransferQueue.Request("cancel-it-next",
                        java.net.URI.create("file:///nonexistent/next"), java.net.URI.create(destination), 1, null))).getFirst();
                jdbc.update("UPDATE transfer_job SET not_before = 'infinity' WHERE id = ?", next[0]);
                queued.countDown();
                try {
                    commit.await(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }));
            try {
                assertThat(queued.await(30, TimeUnit.SECONDS)).isTrue();
                assertThat(new TransferQueue(jdbc).cancel(id)).isTrue();
                // until the drainer has looked: it deleted, or it waits for the open transaction's lock
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                while (mover.deleted.isEmpty() && System.nanoTime() < deadline && jdbc.queryForObject(
                        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted", Integer.class) == 0) {
                    Thread.sleep(20);
                }
            } finally {
                commit.countDown();
                enqueuer.join();
            }
        });
        try {
            assertThat(mover.deleted).as("the partial file left for the transfer queued meanwhile").isEmpty();
        } finally {
            if (next[0] > 0) new TransferQueue(jdbc).cancel(next[0]);
        }
    }

    /**
     * A transfer failing for good (its put may have begun: a checksum mismatch) has its partial file deleted
     * while its row still holds it; a transfer queued to the same place while that delete runs is not claimed
     * until the delete is over. Before, only the cancelled path held the destination: the new transfer was
     * claimed at once and the failed one's delete removed its bytes.
     */
    @Test
    void aTransferQueuedToTheSamePlaceWhileAFailedFilesPartialFileIsDeletedWaitsForTheDelete() throws Exception {
        String destination = "ftp://127.0.0.1:1/x/failed-" + System.nanoTime();
        queuedMeanwhileWaitsForTheDelete(destination, mover -> failWhileMoving(destination, mover, id -> {}));
    }

    /**
     * Ends a transfer to {@code destination} while it moves ({@code end}, with a mover whose partial delete queues
     * another transfer to the same place): that one is still queued while the delete runs, and claimed after it.
     */
    void queuedMeanwhileWaitsForTheDelete(String destination, EndWhileMoving end) throws Exception {
        TransferQueue queue = new TransferQueue(jdbc);
        List<String> duringDelete = new java.util.concurrent.CopyOnWriteArrayList<>();
        long[] next = new long[1];
        HeldMover mover = new HeldMover();
        mover.deleting = () -> {
            next[0] = queue.enqueue(List.of(new TransferQueue.Request("cancel-it-next", java.net.URI.create("file:///nonexistent/next"),
                    java.net.URI.create(destination), 1, null))).getFirst();
            duringDelete.add(probeClaim(queue).contains(next[0]) ? "claimed" : queue.job(next[0]).state());
        };
        try {
            end.run(mover);
            assertThat(mover.deleted).containsExactly(java.net.URI.create(destination));
            assertThat(duringDelete).as("the transfer queued meanwhile, while the delete ran").containsExactly("queued");
            // the delete over, it goes (claimed here, or by another test context's drainer)
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            boolean claimed = false;
            while (!claimed && System.nanoTime() < deadline) {
                claimed = probeClaim(queue).contains(next[0]) || !queue.job(next[0]).state().equals("queued");
                if (!claimed) Thread.sleep(50);
            }
            assertThat(claimed).as("claimed once the delete is over").isTrue();
        } finally {
            if (next[0] > 0) queue.cancel(next[0]);
        }
    }

    interface EndWhileMoving {
        void run(HeldMover mover) throws Exception;
    }

    /** Another transfer to the same place is queued (an operator's second submission): its file is left alone. */
    @Test
    void aFailedFilesPartialFileStaysWhenAnotherTransferIsQueuedToTheSamePlace() throws Exception {
        String destination = "ftp://127.0.0.1:1/x/failed-" + System.nanoTime();
        long[] other = new long[1];
        HeldMover mover = new HeldMover();
        try {
            failWhileMoving(destination, mover, id -> other[0] = jdbc.queryForObject("""
                    INSERT INTO transfer_job (correlation, source, destination, size_bytes, not_before)
                    VALUES ('cancel-it', 'file:///nonexistent/other', ?, 1, 'infinity') RETURNING id""", Long.class, destination));
            assertThat(mover.deleted).as("the partial file left for the transfer queued there").isEmpty();
        } finally {
            if (other[0] > 0) new TransferQueue(jdbc).cancel(other[0]);
        }
    }

    /**
     * Runs a drainer over one row to {@code destination}, runs {@code before} once its file moves, then fails it
     * for good (a checksum mismatch) and waits until the drainer recorded the row failed.
     */
    void failWhileMoving(String destination, HeldMover mover, Cancel before) throws Exception {
        long id = jdbc.queryForObject(HELD_ROW, Long.class, destination);
        CountDownLatch recorded = new CountDownLatch(1);
        TransferDrainer drainer = drainerOf(id, mover, recorded);
        try {
            assertThat(mover.moving.await(30, TimeUnit.SECONDS)).as("the drainer took the row").isTrue();
            before.cancel(id);
            mover.fail(new TransferFailure(TransferFailure.Kind.CHECKSUM_MISMATCH, "550 INCORRECT_CHECKSUM", 3, null));
            assertThat(recorded.await(30, TimeUnit.SECONDS)).as("the drainer recorded its end").isTrue();
            assertThat(new TransferQueue(jdbc).job(id).state()).isEqualTo("failed");
        } finally {
            drainer.stop();
            jdbc.update("UPDATE transfer_job SET state = 'cancelled', finished_at = now(), lease_owner = NULL, lease_until = NULL "
                    + "WHERE id = ? AND state <> 'cancelled'", id);
        }
    }

    /**
     * Claims what is ready as the drainers do, and puts back at once what it took (other test contexts' rows
     * among them); returns the ids it took.
     */
    List<Long> probeClaim(TransferQueue queue) {
        List<Long> took = new java.util.ArrayList<>();
        for (TransferJob j : queue.claim("cancel-it-probe", 100, Duration.ofMinutes(1), 5)) {
            took.add(j.id());
            queue.putBack(j.id(), "cancel-it-probe");
        }
        return took;
    }

    /**
     * Runs a drainer over one row to {@code destination}, cancels it while its file moves and waits until the
     * drainer recorded the file's end; with {@code another}, a second row to the same place is queued first.
     */
    HeldMover cancelWhileMoving(String destination, boolean another) throws Exception {
        return cancelWhileMoving(destination, another, new HeldMover(), id -> assertThat(new TransferQueue(jdbc).cancel(id)).isTrue());
    }

    interface Cancel {
        void cancel(long id) throws Exception;
    }

    /** As above, the mover's deletes and the cancel of the row given. */
    HeldMover cancelWhileMoving(String destination, boolean another, HeldMover mover, Cancel cancel) throws Exception {
        // not claimable by the drainers of other test contexts on this database (not_before): only ours gets it
        long id = jdbc.queryForObject(HELD_ROW, Long.class, destination);
        CountDownLatch recorded = new CountDownLatch(1);
        Long other = null;
        TransferDrainer drainer = drainerOf(id, mover, recorded);
        try {
            assertThat(mover.moving.await(30, TimeUnit.SECONDS)).as("the drainer took the row").isTrue();
            if (another) other = jdbc.queryForObject(HELD_ROW, Long.class, destination);
            cancel.cancel(id);
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

    /** A row to a destination, held from other test contexts' drainers ({@code not_before} infinity); its id. */
    static final String HELD_ROW = """
            INSERT INTO transfer_job (correlation, source, destination, size_bytes, not_before)
            VALUES ('cancel-it', 'file:///nonexistent/held', ?, 1, 'infinity') RETURNING id""";

    /** A drainer of row {@code id} alone with {@code mover}, started; {@code recorded} counts down once it recorded the end. */
    TransferDrainer drainerOf(long id, HeldMover mover, CountDownLatch recorded) {
        var settings = new TransferProperties.Queue(true, Duration.ofMillis(100), 200, 2000, Duration.ofMinutes(30), "",
                properties.queue().outage(), 5);
        TransferObserver seen = new TransferObserver(registry, movers) {
            @Override
            void finished(TransferJob job, FileCopy copy, java.time.Instant claimedAt, CopyResult result, TransferFailure failure) {
                recorded.countDown();
            }
        };
        TransferDrainer drainer = new TransferDrainer(new OneRowQueue(jdbc, id), mover,
                new TransferProperties(properties.mover(), settings, properties.existingDestination()), seen);
        drainer.start();
        return drainer;
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

        /** Run in each delete, before the files count as deleted (the delete under way). */
        volatile Runnable deleting = () -> {};

        @Override
        public Map<java.net.URI, TransferFailure> delete(java.util.Collection<java.net.URI> urls) {
            deleting.run();
            deleted.addAll(urls);
            return Map.of();
        }

        private final Map<String, CompletableFuture<CopyResult>> results = new ConcurrentHashMap<>();

        /** Ends every file it moves with {@code f}. */
        void fail(TransferFailure f) {
            results.values().forEach(r -> r.completeExceptionally(f));
        }

        /** Its files begin writing at their destinations at once (the row records it); false: they never get there. */
        volatile boolean writes = true;

        @Override
        public CopyBatch submit(List<FileCopy> copies) {
            for (FileCopy c : copies) results.put(c.id(), new CompletableFuture<>());
            if (writes) copies.forEach(c -> c.writing().run());
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
