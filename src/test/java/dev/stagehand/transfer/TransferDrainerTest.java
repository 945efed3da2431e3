package dev.stagehand.transfer;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.support.StaticListableBeanFactory;

/** The drainer between a fake queue and a fake mover: what each outcome does to the rows, without a database. */
class TransferDrainerTest {

    /** The queue's rows in memory; records what the drainer asked of it. */
    static final class FakeQueue extends TransferQueue {
        final List<TransferJob> toClaim = new CopyOnWriteArrayList<>();
        final Map<Long, String> ended = new ConcurrentHashMap<>(); // id -> done, failed:KIND, put back
        final List<List<Long>> renewed = new CopyOnWriteArrayList<>();
        final Map<Long, String> errors = new ConcurrentHashMap<>();
        volatile boolean held = true;

        FakeQueue() {
            super(null);
        }

        @Override
        public List<TransferJob> claim(String owner, int limit, Duration lease, int maxLapses) {
            // taken one by one: a copy then clear() lost a row the test added in between (seen once in CI)
            List<TransferJob> out = new ArrayList<>();
            for (TransferJob j : toClaim) if (toClaim.remove(j)) out.add(j);
            return out;
        }

        @Override
        public boolean awaitQueued(Duration max) throws InterruptedException {
            Thread.sleep(10);
            return false;
        }

        @Override
        public boolean holds(long id, String owner) {
            return held;
        }

        @Override
        List<Long> notHeld(String owner, java.util.Collection<Long> ids) {
            return held ? List.of() : List.copyOf(ids);
        }

        @Override
        boolean done(long id, String owner, CopyResult r) {
            ended.put(id, "done");
            return true;
        }

        @Override
        boolean failed(long id, String owner, TransferFailure f) {
            if (f.getMessage().contains("unrecordable")) throw new IllegalStateException("constraint violated");
            if (!held) return false; // a cancelled row is not ours any more
            errors.put(id, f.getMessage());
            ended.put(id, "failed:" + f.kind());
            return true;
        }

        @Override
        Outcome putBackOrFail(long id, String owner, TransferFailure f, TransferProperties.Outage outage) {
            ended.put(id, "outage");
            return Outcome.PUT_BACK;
        }

        /** A failing row's partial file: still ours, no other transfer to the same place (the database's look). */
        @Override
        boolean holdPartialDelete(long id, String owner, Duration hold) {
            return held;
        }

        /** Cancelled rows' partial files: no other transfer to the same place (the database's look). */
        @Override
        boolean claimPartialDelete(long id, Duration hold) {
            return true;
        }

        @Override
        void partialDeleted(long id, boolean gone) {}

        final List<Long> writing = new CopyOnWriteArrayList<>();

        @Override
        boolean writing(long id, String owner) {
            if (held) writing.add(id);
            return held;
        }

        @Override
        boolean putBack(long id, String owner) {
            ended.put(id, "put back");
            return true;
        }

        @Override
        public int renew(String owner, java.util.Collection<Long> ids, Duration lease) {
            renewed.add(List.copyOf(new java.util.TreeSet<>(ids)));
            return ids.size();
        }
    }

    /** A mover that moves nothing by itself: the test ends each file; close() cancels the rest like Link.close. */
    static final class FakeMover implements Mover {
        final Map<String, CompletableFuture<CopyResult>> futures = new ConcurrentHashMap<>();
        final Map<String, FileCopy> handed = new ConcurrentHashMap<>();
        volatile boolean refuse;

        @Override
        public CopyBatch submit(List<FileCopy> copies) {
            if (refuse) throw new IllegalStateException("mover broken");
            for (FileCopy c : copies) {
                futures.put(c.id(), new CompletableFuture<>());
                handed.put(c.id(), c);
            }
            return new CopyBatch() {
                @Override
                public CompletableFuture<CopyResult> result(FileCopy copy) {
                    return futures.get(copy.id());
                }

                @Override
                public void cancel(FileCopy copy) {
                    futures.get(copy.id()).completeExceptionally(
                            new TransferFailure(TransferFailure.Kind.CANCELLED, "cancelled: " + copy.destination()));
                }

                @Override
                public void cancelAll() {
                    copies.forEach(this::cancel);
                }

                @Override
                public CompletableFuture<Void> done() {
                    return CompletableFuture.allOf(futures.values().toArray(CompletableFuture[]::new));
                }
            };
        }

        /** Each deletion, and which rows had ended then. */
        final List<String> deleted = new CopyOnWriteArrayList<>();
        volatile Map<Long, String> endedRows = Map.of();

        /** The files of each call (each a session with the server). */
        final List<List<java.net.URI>> deleteCalls = new CopyOnWriteArrayList<>();
        /** How long a call takes (a session's set-up and its DELEs). */
        volatile long deleteMillis;

        @Override
        public Map<java.net.URI, TransferFailure> delete(java.util.Collection<java.net.URI> urls) {
            deleteCalls.add(List.copyOf(urls));
            for (java.net.URI u : urls) deleted.add(u + " with rows ended: " + new java.util.TreeSet<>(endedRows.keySet()));
            try {
                Thread.sleep(deleteMillis);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return Map.of();
        }

        void fail(long id, TransferFailure f) {
            futures.get(String.valueOf(id)).completeExceptionally(f);
        }

        @Override
        public List<LinkStatus> links() {
            return List.of();
        }

        @Override
        public void close() {
            futures.values().forEach(f -> f.completeExceptionally(
                    new TransferFailure(TransferFailure.Kind.CANCELLED, "mover closed", 0, null)));
        }
    }

    final FakeQueue queue = new FakeQueue();
    final FakeMover mover = new FakeMover();
    TransferDrainer drainer;

    TransferDrainer drainer(Duration lease) {
        return drainer(lease, new TransferProperties.ExistingDestination(false, List.of()));
    }

    TransferDrainer drainer(Duration lease, TransferProperties.ExistingDestination existing) {
        StaticListableBeanFactory beans = new StaticListableBeanFactory();
        beans.addBean("registry", new SimpleMeterRegistry());
        TransferObserver observer = new TransferObserver(beans.getBeanProvider(MeterRegistry.class), beans.getBeanProvider(Mover.class));
        TransferProperties properties = new TransferProperties(MoverSettings.defaults(), new TransferProperties.Queue(true,
                Duration.ofMillis(20), 200, 2000, lease, "", new TransferProperties.Outage(Duration.ofSeconds(30),
                Duration.ofMinutes(10), Duration.ofHours(24)), 5), existing);
        drainer = new TransferDrainer(queue, mover, properties, observer);
        return drainer;
    }

    static TransferJob row(long id) {
        return row(id, "file:/cache/f" + id);
    }

    static TransferJob row(long id, String source) {
        return new TransferJob(id, "c" + id, source, "ftp://dtn:2811/d/f" + id, 1000, 1L, "active", 1,
                null, null, 0, null, Instant.now(), Instant.now(), null, Instant.now(), 0);
    }

    /**
     * A row that has not written at its destination asks the mover to look there first (KEEP, or REPLACE where
     * overwriting is enabled); one that has written there (an earlier claim) writes over it (its own). The mover's
     * writing hook records it in the row, and refuses once the row is not held here.
     */
    @Test
    void aRowThatHasNotWrittenAtItsDestinationAsksTheMoverToLookFirst() throws Exception {
        drainer(Duration.ofMinutes(2), new TransferProperties.ExistingDestination(false, List.of("ftp://dtn:2811/d/f3"))).start();
        TransferJob wrote = row(2);
        wrote = new TransferJob(wrote.id(), wrote.correlation(), wrote.source(), wrote.destination(), wrote.sizeBytes(),
                wrote.adler32(), wrote.state(), wrote.attempts(), null, null, 0, null, wrote.createdAt(), wrote.startedAt(),
                null, wrote.notBefore(), 0, true);
        // a row whose caller asked to overwrite (a replica's transfer) writes over what is there, wherever it goes
        TransferJob own = row(4);
        own = new TransferJob(own.id(), own.correlation(), own.source(), own.destination(), own.sizeBytes(),
                own.adler32(), own.state(), own.attempts(), null, null, 0, null, own.createdAt(), own.startedAt(),
                null, own.notBefore(), 0, false, true);
        queue.toClaim.addAll(List.of(row(1), wrote, row(3), own));
        await(() -> mover.handed.size() == 4);
        assertThat(mover.handed.get("1").existing()).isEqualTo(FileCopy.Existing.KEEP);
        assertThat(mover.handed.get("2").existing()).isEqualTo(FileCopy.Existing.WRITE);
        assertThat(mover.handed.get("3").existing()).isEqualTo(FileCopy.Existing.REPLACE);
        assertThat(mover.handed.get("4").existing()).isEqualTo(FileCopy.Existing.REPLACE);
        mover.handed.get("1").writing().run();
        assertThat(queue.writing).containsExactly(1L);
        queue.held = false;
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> mover.handed.get("3").writing().run())
                .isInstanceOfSatisfying(TransferFailure.class, f -> assertThat(f.kind()).isEqualTo(TransferFailure.Kind.CANCELLED));
    }

    @Test
    void overwriteIsEnabledByPrefixOrEverywhere() {
        var under = new TransferProperties.ExistingDestination(false, List.of("gsiftp://dtn.a:2811/data/replicas/"));
        assertThat(under.overwrites(java.net.URI.create("gsiftp://dtn.a:2811/data/replicas/ds/f1"))).isTrue();
        assertThat(under.overwrites(java.net.URI.create("gsiftp://dtn.a:2811/data/users/f1"))).isFalse();
        assertThat(new TransferProperties.ExistingDestination(true, List.of()).overwrites(java.net.URI.create("ftp://x:1/f"))).isTrue();
        assertThat(new TransferProperties(MoverSettings.defaults(), drainerQueue(), null).existingDestination().overwrite()).isFalse();
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> new TransferProperties.ExistingDestination(false, List.of("/data/")))
                .hasMessageContaining("overwrite-under");
    }

    private static TransferProperties.Queue drainerQueue() {
        return new TransferProperties.Queue(true, Duration.ofMillis(20), 200, 2000, Duration.ofMinutes(2), "",
                new TransferProperties.Outage(Duration.ofSeconds(30), Duration.ofMinutes(10), Duration.ofHours(24)), 5);
    }

    /** Claims rows 1..n and waits until the mover has them. */
    void claimed(int n) throws Exception {
        for (long id = 1; id <= n; id++) queue.toClaim.add(row(id));
        await(() -> mover.futures.size() == n);
    }

    static void await(BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) throw new AssertionError("condition not met in 10 s");
            Thread.sleep(10);
        }
    }

    @AfterEach
    void stop() {
        if (drainer != null) drainer.stop();
    }

    @Test
    void filesTheMoverDropsWhenItClosesGoBackToTheQueue() throws Exception {
        drainer(Duration.ofMinutes(2)).start();
        claimed(3);
        mover.close(); // the service shuts down: the mover cancels what it has not finished
        await(() -> queue.ended.size() == 3);
        assertThat(queue.ended).containsOnlyKeys(1L, 2L, 3L).allSatisfy((id, what) -> assertThat(what).isEqualTo("put back"));
    }

    @Test
    void stoppingPutsBackWhatIsStillMovingAndRecordsWhatFinished() throws Exception {
        drainer(Duration.ofMinutes(2)).start();
        claimed(3);
        mover.futures.get("1").complete(new CopyResult(null, 1000, Duration.ofSeconds(1), 1, "dtn:2811", 1));
        await(() -> queue.ended.containsKey(1L));
        drainer.stop();
        // before stop() returns: the database is still there
        assertThat(queue.ended).containsEntry(1L, "done").containsEntry(2L, "put back").containsEntry(3L, "put back");
    }

    @Test
    void realFailuresAndCancelsTheDrainerAskedForAreRecordedAsBefore() throws Exception {
        drainer(Duration.ofMillis(90)).start(); // the rows looked at every poll
        claimed(2);
        mover.fail(1, new TransferFailure(TransferFailure.Kind.PERMISSION_DENIED, "550 denied", 1, null));
        await(() -> queue.ended.containsKey(1L));
        assertThat(queue.ended).containsEntry(1L, "failed:PERMISSION_DENIED");
        queue.held = false; // row 2 was cancelled by an operator: the drainer drops its file
        await(() -> mover.futures.get("2").isDone());
        Thread.sleep(100);
        assertThat(queue.ended).doesNotContainKey(2L);
    }

    @Test
    void aFileFailingForGoodIsDeletedAtItsDestinationBeforeItsRowEnds() throws Exception {
        mover.endedRows = queue.ended;
        drainer(Duration.ofMinutes(2)).start();
        claimed(2);
        mover.fail(1, new TransferFailure(TransferFailure.Kind.CHECKSUM_MISMATCH, "550 INCORRECT_CHECKSUM", 3, null));
        await(() -> queue.ended.containsKey(1L));
        mover.fail(2, new TransferFailure(TransferFailure.Kind.PERMISSION_DENIED, "550 denied", 1, null));
        await(() -> queue.ended.containsKey(2L));
        // only the file whose put may have begun; a refused one wrote nothing (and a file there may be someone's)
        assertThat(mover.deleted).containsExactly("ftp://dtn:2811/d/f1 with rows ended: []");
        assertThat(queue.errors.get(1L)).endsWith("550 INCORRECT_CHECKSUM; no partial file is left at the destination");
        assertThat(queue.errors.get(2L)).isEqualTo("PERMISSION_DENIED: 550 denied");
    }

    /** A destination without ADLER32 got the whole file but could not verify it: no reader there may take it for the file. */
    @Test
    void aFileItsDestinationCannotVerifyIsDeletedThere() throws Exception {
        mover.endedRows = queue.ended;
        drainer(Duration.ofMinutes(2)).start();
        claimed(1);
        mover.fail(1, new TransferFailure(TransferFailure.Kind.UNSUPPORTED,
                "destination dtn:2811 does not support ADLER32 checksums (CKSM): Unknown checksum algorithm requested.", 1, null));
        await(() -> queue.ended.containsKey(1L));
        assertThat(queue.ended).containsEntry(1L, "failed:UNSUPPORTED");
        assertThat(mover.deleted).containsExactly("ftp://dtn:2811/d/f1 with rows ended: []");
        assertThat(queue.errors.get(1L)).endsWith("requested.; no partial file is left at the destination");
    }

    /**
     * Many transfers to one site cancelled at once: their partial files are deleted together, in a few calls of
     * the mover (each one session with the server), not one call (and session) per file.
     */
    @Test
    void partialFilesOfManyCancelledTransfersToOneServerAreDeletedTogether() throws Exception {
        mover.deleteMillis = 100;
        drainer(Duration.ofMillis(90)).start(); // the rows looked at every poll
        claimed(20);
        queue.held = false; // all cancelled by an operator: the drainer drops their files at its next look
        await(() -> mover.deleted.size() == 20);
        assertThat(mover.deleteCalls.stream().flatMap(List::stream).map(java.net.URI::toString).sorted().toList())
                .as("each partial file deleted once").hasSize(20).doesNotHaveDuplicates();
        assertThat(mover.deleteCalls).as("calls of the mover, each a session").hasSizeLessThanOrEqualTo(3);
    }

    @Test
    void onlyTheRowsInFlightAreRenewed() throws Exception {
        drainer(Duration.ofMillis(90)).start();
        claimed(2);
        await(() -> queue.renewed.contains(List.of(1L, 2L)));
        // row 1 ends, but its outcome cannot be written: its lease must lapse (it is claimed again), not be renewed
        mover.fail(1, new TransferFailure(TransferFailure.Kind.PERMISSION_DENIED, "unrecordable", 1, null));
        int seen = queue.renewed.size();
        await(() -> queue.renewed.size() > seen + 2);
        assertThat(queue.renewed.getLast()).containsExactly(2L);
    }

    @Test
    void aBatchTheMoverRefusesGoesBackToTheQueue() throws Exception {
        mover.refuse = true;
        drainer(Duration.ofMinutes(2)).start();
        queue.toClaim.add(row(1));
        queue.toClaim.add(row(2));
        await(() -> queue.ended.size() == 2);
        assertThat(queue.ended).containsEntry(1L, "put back").containsEntry(2L, "put back");
    }

    @Test
    void aRowWithAMalformedUrlFailsAloneAndTheOthersMove() throws Exception {
        drainer(Duration.ofMinutes(2)).start();
        queue.toClaim.add(row(1, "file:/cache/a file with spaces"));
        queue.toClaim.add(row(2));
        await(() -> queue.ended.containsKey(1L) && mover.futures.containsKey("2"));
        assertThat(queue.ended).containsEntry(1L, "failed:BAD_REQUEST");
        assertThat(mover.futures).containsOnlyKeys("2");
    }
}
