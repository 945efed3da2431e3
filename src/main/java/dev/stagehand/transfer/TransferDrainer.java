package dev.stagehand.transfer;

import dev.stagehand.platform.DatabaseRetry;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;
import org.springframework.stereotype.Component;

/**
 * Drains transfer_job: claims queued rows under a lease, hands them to the mover, records each outcome,
 * renews its leases while files are under way, and drops files whose rows were cancelled. A crash loses
 * nothing: the rows stay active until their lease runs out and are then claimed again. A shutdown loses
 * nothing either: what is still moving is put back in the queue, not failed.
 */
@Component
class TransferDrainer implements SmartLifecycle {

    private static final Logger log = LoggerFactory.getLogger(TransferDrainer.class);

    private record InFlight(CopyBatch batch, FileCopy copy) {}

    private final TransferObserver observer;

    private final TransferQueue queue;
    private final Mover mover;
    private final TransferProperties.Queue settings;
    private final TransferProperties.ExistingDestination existing;
    private final String owner;
    private final Map<Long, InFlight> inFlight = new ConcurrentHashMap<>();
    /** Rows whose file the drainer itself cancelled (the row was cancelled or taken over). */
    private final java.util.Set<Long> dropping = ConcurrentHashMap.newKeySet();
    private volatile boolean running;
    private volatile boolean stopping;
    private Thread thread;

    TransferDrainer(TransferQueue queue, Mover mover, TransferProperties properties, TransferObserver observer) {
        this.queue = queue;
        this.observer = observer;
        this.mover = mover;
        this.settings = properties.queue();
        this.existing = properties.existingDestination();
        String id = settings.instanceId();
        this.owner = "drainer-" + (id == null || id.isBlank()
                ? ProcessHandle.current().pid() + "-" + Long.toHexString(System.nanoTime()) : id);
    }

    @Override
    public void start() {
        if (!settings.enabled()) return;
        stopping = false;
        running = true;
        thread = Thread.ofVirtual().name("transfer-drainer").start(() -> {
            if (settings.instanceId() != null && !settings.instanceId().isBlank()) {
                int n = DatabaseRetry.call("transfer queue recovery", () -> queue.releaseStale(owner, settings.maxLapses()));
                if (n > 0) log.info("transfer queue: {} rows held before a restart queued again", n);
            }
            loop();
        });
    }

    @Override
    public void stop() {
        running = false;
        stopping = true;
        if (thread == null) return;
        // the loop sees the flag within a poll interval; an interrupt during a JDBC call would close the
        // connection under a commit, so it is only the last resort
        try {
            if (!thread.join(java.time.Duration.ofSeconds(10))) thread.interrupt();
            // hand back what is still moving while the database is still there (the mover is closed after
            // this, and a restart claims the rows again); their records put them back (stopping)
            inFlight.values().forEach(f -> f.batch().cancel(f.copy()));
            long deadline = System.nanoTime() + java.time.Duration.ofSeconds(10).toNanos();
            while (!inFlight.isEmpty() && System.nanoTime() < deadline) Thread.sleep(20);
        } catch (InterruptedException e) {
            thread.interrupt();
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public boolean isRunning() {
        return running;
    }

    private long backoff;

    private void loop() {
        long lastRenew = System.nanoTime();
        long lastLook = lastRenew;
        while (running) {
            try {
                if (System.nanoTime() - lastRenew > settings.lease().toNanos() / 3) {
                    renew();
                    lastRenew = System.nanoTime();
                }
                if (System.nanoTime() - lastLook >= settings.pollInterval().toNanos()) {
                    dropEnded();
                    lastLook = System.nanoTime();
                }
                int room = settings.maxInFlight() - inFlight.size();
                List<TransferJob> claimed = room > 0 ? queue.claim(owner, Math.min(settings.batchSize(), room), settings.lease(), settings.maxLapses()) : List.of();
                if (claimed.isEmpty()) {
                    // woken as soon as rows are queued here; the poll interval bounds the wait for rows queued
                    // by other instances (or whose lease lapsed)
                    queue.awaitQueued(settings.pollInterval());
                    continue;
                }
                DatabaseRetry.recovered();
                submit(claimed);
            } catch (InterruptedException e) {
                return;
            } catch (RuntimeException e) {
                // a database outage is logged once (DatabaseRetry) and waited out with a growing pause
                boolean outage = DatabaseRetry.noteFailure("transfer queue poll", e);
                if (!outage) log.warn("transfer queue: {}", e.toString());
                try {
                    Thread.sleep(outage ? backoff = Math.min(Math.max(backoff * 2, settings.pollInterval().toMillis()), 5_000)
                            : settings.pollInterval().toMillis());
                } catch (InterruptedException ie) {
                    return;
                }
                continue;
            }
            backoff = 0;
        }
    }

    private void submit(List<TransferJob> jobs) {
        List<FileCopy> copies = new ArrayList<>();
        List<TransferJob> moving = new ArrayList<>();
        for (TransferJob j : jobs) {
            // our own row whose lease lapsed (renewal failed while the database was away) and is still moving
            // here: moving it a second time would write the destination twice at once
            if (inFlight.containsKey(j.id())) continue;
            FileCopy copy;
            try {
                URI destination = URI.create(j.destination());
                // a file the row began writing itself is resumed or written over; any other is looked at first
                FileCopy.Existing there = j.wroteDestination() ? FileCopy.Existing.WRITE
                        : j.overwrite() || existing.overwrites(destination) ? FileCopy.Existing.REPLACE : FileCopy.Existing.KEEP;
                copy = new FileCopy(String.valueOf(j.id()), URI.create(j.source()), destination, j.sizeBytes(), j.adler32(),
                        there, () -> writing(j.id()));
            } catch (IllegalArgumentException e) {
                // a malformed URL never moves: fail its row now rather than hold it
                TransferFailure f = new TransferFailure(TransferFailure.Kind.BAD_REQUEST, "bad URL: " + e.getMessage());
                DatabaseRetry.call("transfer " + j.id() + " failed", () -> queue.failed(j.id(), owner, f));
                log.warn("transfer job {} failed: {}", j.id(), f.getMessage());
                continue;
            }
            moving.add(j);
            copies.add(copy);
        }
        if (copies.isEmpty()) return;
        CopyBatch batch;
        try {
            batch = mover.submit(copies);
        } catch (RuntimeException e) {
            // nothing of this batch moves: its rows go back to the queue (held, they would only wait for their leases)
            for (TransferJob j : moving) DatabaseRetry.call("transfer " + j.id() + " put back", () -> queue.putBack(j.id(), owner));
            throw e;
        }
        java.time.Instant claimedAt = java.time.Instant.now();
        for (int i = 0; i < copies.size(); i++) {
            FileCopy c = copies.get(i);
            TransferJob job = moving.get(i);
            long id = Long.parseLong(c.id());
            inFlight.put(id, new InFlight(batch, c));
            batch.result(c).whenComplete((r, e) -> {
                Runnable record = () -> {
                    try {
                        if (e == null) {
                            if (DatabaseRetry.call("transfer " + id + " done", () -> queue.done(id, owner, r))) observe(job, c, claimedAt, r, null);
                        } else {
                            Throwable cause = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
                            TransferFailure f = cause instanceof TransferFailure tf ? tf
                                    : new TransferFailure(TransferFailure.Kind.PROTOCOL, String.valueOf(cause), 0, cause);
                            if (stopping || f.kind() == TransferFailure.Kind.CANCELLED && !dropping.contains(id)) {
                                // shutting down, or the mover dropped the file (it was closed): not the file's
                                // fault, so the row goes back to the queue, its claim not counted
                                DatabaseRetry.call("transfer " + id + " put back", () -> queue.putBack(id, owner));
                            } else if (f.kind().unreachable()) {
                                // an outage is waited out in the queue, not counted against the file
                                TransferFailure last = LEAVES_PARTIAL.contains(f.kind()) && DatabaseRetry.call("transfer "
                                        + id + " outage", () -> queue.outageOver(id, owner, settings.outage())
                                        && queue.holdPartialDelete(id, owner, settings.lease())) ? removeHeldPartial(id, c, f) : f;
                                TransferQueue.Outcome o = DatabaseRetry.call("transfer " + id + " put back",
                                        () -> queue.putBackOrFail(id, owner, last, settings.outage()));
                                if (o == TransferQueue.Outcome.FAILED) observe(job, c, claimedAt, null, last);
                                else if (o == TransferQueue.Outcome.PUT_BACK) observer.putBack(c, f);
                            } else {
                                // still ours, and no other transfer to the same place: it is held from
                                // being claimed until the delete is over
                                TransferFailure last = LEAVES_PARTIAL.contains(f.kind()) && DatabaseRetry.call("transfer "
                                        + id + " held", () -> queue.holdPartialDelete(id, owner, settings.lease())) ? removeHeldPartial(id, c, f)
                                        // cancelled while moving (not taken over by another instance, which
                                        // still writes there): the row has ended, so only with no other
                                        // transfer to the same place queued meanwhile, none claimed till it is done
                                        : f.kind() == TransferFailure.Kind.CANCELLED && DatabaseRetry.call("transfer "
                                        + id + " cancelled", () -> queue.claimPartialDelete(id, settings.lease())) ? removeHeldPartial(id, c, f) : f;
                                // a cancelled row (or one taken over) is not ours to record: the row says what became of it
                                if (DatabaseRetry.call("transfer " + id + " failed", () -> queue.failed(id, owner, last))
                                        || f.kind() == TransferFailure.Kind.CANCELLED) observe(job, c, claimedAt, null, last);
                            }
                        }
                    } catch (RuntimeException dbTrouble) {
                        // the lease runs out and the row is moved again: nothing is lost
                        log.warn("cannot record transfer job {}: {}", id, dbTrouble.toString());
                    } finally {
                        // only now: until the outcome is written the row must not be claimed and moved again here
                        dropping.remove(id);
                        inFlight.remove(id);
                    }
                };
                // on its own thread: waiting out a database outage must not hold up the mover's thread
                Thread.ofVirtual().name("transfer-record-" + id).start(record);
            });
        }
    }

    /**
     * Run by the mover before its first write at row {@code id}'s destination: the row records (committed) that
     * what is there is its own from now on. A row no longer ours must not write there.
     */
    private void writing(long id) {
        if (!queue.writing(id, owner)) {
            throw new TransferFailure(TransferFailure.Kind.CANCELLED, "transfer " + id + " is no longer held here: not written");
        }
    }

    /**
     * Failures after which the destination may hold part of the file (the STOR may have begun); only a row that
     * recorded writing there ({@link TransferQueue#writing}) has it deleted.
     */
    private static final java.util.Set<TransferFailure.Kind> LEAVES_PARTIAL = java.util.EnumSet.of(
            TransferFailure.Kind.CHECKSUM_MISMATCH, TransferFailure.Kind.SOURCE_CHECKSUM_MISMATCH, TransferFailure.Kind.PROTOCOL, TransferFailure.Kind.STALL,
            TransferFailure.Kind.TIMEOUT, TransferFailure.Kind.QUOTA_EXCEEDED,
            // the whole file was written but cannot be verified there: a reader must not take it for the file
            TransferFailure.Kind.UNSUPPORTED);

    /**
     * A transfer that ends failed leaves no partial file at its destination, as FTS3 cleans up after a failed
     * transfer: a reader there would take it for the file. It is removed while the row is still ours, before it
     * ends, so a transfer queued to the same place once it has ended (replication's next attempt) is not hit.
     * A failing row's partial copy (and a cancelled row's, which ended at its cancel) goes only when no other
     * transfer to the same place is queued or moving, and one queued after that look is not claimed until the
     * delete is over ({@link TransferQueue#holdPartialDelete}, {@link TransferQueue#claimPartialDelete}); and only
     * when the row wrote there ({@link TransferQueue#writing}): a file it never wrote is not its to delete.
     * The row holds its destination meanwhile; the hold ends with the delete.
     */
    private TransferFailure removeHeldPartial(long id, FileCopy c, TransferFailure f) {
        boolean gone = false;
        try {
            if (!FileUrls.isGridFtp(c.destination())) return f;
            TransferFailure left = deleteWithOthers(c.destination());
            gone = left == null;
            if (gone) return f.withNote("no partial file is left at the destination");
            log.warn("transfer {}: the partial file at {} could not be deleted: {}", c.id(), c.destination(), left.getMessage());
            return f.withNote("the partial file at the destination could not be deleted (" + left.getMessage() + ")");
        } finally {
            // deleted: nothing there is the row's any more. Not ended (database away): the hold lapses on its own
            boolean deleted = gone;
            DatabaseRetry.call("transfer " + id + " partial file deleted", () -> {
                queue.partialDeleted(id, deleted);
                return true;
            });
        }
    }

    /** Partial files waiting to be deleted at one server, and the lock of the one delete at a time sent there. */
    private record ServerDeletes(java.util.concurrent.locks.ReentrantLock lock,
                                 java.util.concurrent.ConcurrentLinkedQueue<PendingDelete> waiting) {}

    private record PendingDelete(URI url, CompletableFuture<TransferFailure> left) {}

    private final Map<String, ServerDeletes> deletes = new ConcurrentHashMap<>();

    /**
     * Deletes {@code url} with the other partial files waiting for the same server, in one call of the mover
     * (one session with that server): many transfers to one site cancelled at once each opened a session of
     * their own. While a delete is under way the next ones gather; whoever gets the server's turn first sends
     * all that wait. Returns what is left of it (null: deleted).
     */
    private TransferFailure deleteWithOthers(URI url) {
        ServerDeletes server = deletes.computeIfAbsent(url.getScheme() + "://" + url.getRawAuthority(),
                k -> new ServerDeletes(new java.util.concurrent.locks.ReentrantLock(), new java.util.concurrent.ConcurrentLinkedQueue<>()));
        PendingDelete mine = new PendingDelete(url, new CompletableFuture<>());
        server.waiting().add(mine);
        server.lock().lock();
        try {
            if (!mine.left().isDone()) { // not sent with an earlier turn's files
                List<PendingDelete> batch = new ArrayList<>();
                for (PendingDelete p; (p = server.waiting().poll()) != null; ) batch.add(p);
                Map<URI, TransferFailure> failed;
                try {
                    failed = mover.delete(batch.stream().map(PendingDelete::url).distinct().toList());
                } catch (RuntimeException e) {
                    TransferFailure all = new TransferFailure(TransferFailure.Kind.PROTOCOL, e.toString());
                    failed = new java.util.HashMap<>();
                    for (PendingDelete p : batch) failed.put(p.url(), all);
                }
                for (PendingDelete p : batch) p.left().complete(failed.get(p.url()));
            }
        } finally {
            server.lock().unlock();
        }
        return mine.left().join();
    }

    /** Meters and the event line; never disturbs the queue. */
    private void observe(TransferJob job, FileCopy copy, java.time.Instant claimedAt, CopyResult r, TransferFailure f) {
        try {
            observer.finished(job, copy, claimedAt, r, f);
        } catch (RuntimeException e) {
            log.debug("transfer job {} not observed: {}", job.id(), e.toString());
        }
    }

    /** Keeps the leases of the rows we move (only those). */
    private void renew() {
        if (inFlight.isEmpty()) return;
        queue.renew(owner, List.copyOf(inFlight.keySet()), settings.lease());
    }

    /**
     * Drops files whose rows were cancelled (or taken over) meanwhile, at every poll rather than at lease
     * renewal (a third of the lease, 40 s by default), with one query for all of them.
     */
    private void dropEnded() {
        if (inFlight.isEmpty()) return;
        for (long id : queue.notHeld(owner, List.copyOf(inFlight.keySet()))) {
            InFlight f = inFlight.get(id);
            if (f != null && dropping.add(id)) f.batch().cancel(f.copy());
        }
    }
}
