package dev.stagehand.transfer;

import dev.stagehand.platform.DatabaseRetry;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
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
                int n = DatabaseRetry.call("transfer queue recovery", () -> queue.releaseStale(owner));
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
        while (running) {
            try {
                if (System.nanoTime() - lastRenew > settings.lease().toNanos() / 3) {
                    renew();
                    lastRenew = System.nanoTime();
                }
                int room = settings.maxInFlight() - inFlight.size();
                List<TransferJob> claimed = room > 0 ? queue.claim(owner, Math.min(settings.batchSize(), room), settings.lease()) : List.of();
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
                copy = new FileCopy(String.valueOf(j.id()), URI.create(j.source()), URI.create(j.destination()),
                        j.sizeBytes(), j.adler32());
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
                                TransferQueue.Outcome o = DatabaseRetry.call("transfer " + id + " put back",
                                        () -> queue.putBackOrFail(id, owner, f, settings.outage()));
                                if (o == TransferQueue.Outcome.FAILED) observe(job, c, claimedAt, null, f);
                                else if (o == TransferQueue.Outcome.PUT_BACK) observer.putBack(c, f);
                            }
                            // a cancelled row (or one taken over) is not ours to record: the row says what became of it
                            else if (DatabaseRetry.call("transfer " + id + " failed", () -> queue.failed(id, owner, f))
                                    || f.kind() == TransferFailure.Kind.CANCELLED) observe(job, c, claimedAt, null, f);
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

    /** Meters and the event line; never disturbs the queue. */
    private void observe(TransferJob job, FileCopy copy, java.time.Instant claimedAt, CopyResult r, TransferFailure f) {
        try {
            observer.finished(job, copy, claimedAt, r, f);
        } catch (RuntimeException e) {
            log.debug("transfer job {} not observed: {}", job.id(), e.toString());
        }
    }

    /** Keeps the leases of the rows we move (only those) and drops files whose rows were cancelled (or taken over) meanwhile. */
    private void renew() {
        if (inFlight.isEmpty()) return;
        queue.renew(owner, List.copyOf(inFlight.keySet()), settings.lease());
        inFlight.forEach((id, f) -> {
            if (!queue.holds(id, owner)) {
                dropping.add(id);
                f.batch().cancel(f.copy());
            }
        });
    }
}
