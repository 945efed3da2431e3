package dev.stagehand.transfer;

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
 * nothing: the rows stay active until their lease runs out and are then claimed again.
 */
@Component
class TransferDrainer implements SmartLifecycle {

    private static final Logger log = LoggerFactory.getLogger(TransferDrainer.class);

    private record InFlight(CopyBatch batch, FileCopy copy) {}

    private final TransferQueue queue;
    private final Mover mover;
    private final TransferProperties.Queue settings;
    private final String owner = "drainer-" + ProcessHandle.current().pid() + "-" + Long.toHexString(System.nanoTime());
    private final Map<Long, InFlight> inFlight = new ConcurrentHashMap<>();
    private volatile boolean running;
    private Thread thread;

    TransferDrainer(TransferQueue queue, Mover mover, TransferProperties properties) {
        this.queue = queue;
        this.mover = mover;
        this.settings = properties.queue();
    }

    @Override
    public void start() {
        if (!settings.enabled()) return;
        running = true;
        thread = Thread.ofVirtual().name("transfer-drainer").start(this::loop);
    }

    @Override
    public void stop() {
        running = false;
        if (thread != null) thread.interrupt();
    }

    @Override
    public boolean isRunning() {
        return running;
    }

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
                    Thread.sleep(settings.pollInterval().toMillis());
                    continue;
                }
                submit(claimed);
            } catch (InterruptedException e) {
                return;
            } catch (RuntimeException e) {
                log.warn("transfer queue: {}", e.toString());
                try {
                    Thread.sleep(settings.pollInterval().toMillis());
                } catch (InterruptedException ie) {
                    return;
                }
            }
        }
    }

    private void submit(List<TransferJob> jobs) {
        List<FileCopy> copies = new ArrayList<>();
        for (TransferJob j : jobs) {
            copies.add(new FileCopy(String.valueOf(j.id()), URI.create(j.source()), URI.create(j.destination()),
                    j.sizeBytes(), j.adler32()));
        }
        CopyBatch batch = mover.submit(copies);
        for (FileCopy c : copies) {
            long id = Long.parseLong(c.id());
            inFlight.put(id, new InFlight(batch, c));
            batch.result(c).whenComplete((r, e) -> {
                inFlight.remove(id);
                try {
                    if (e == null) {
                        queue.done(id, owner, r);
                    } else {
                        Throwable cause = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
                        TransferFailure f = cause instanceof TransferFailure tf ? tf
                                : new TransferFailure(TransferFailure.Kind.PROTOCOL, String.valueOf(cause), 0, cause);
                        queue.failed(id, owner, f);
                    }
                } catch (RuntimeException dbTrouble) {
                    // the lease runs out and the row is moved again: nothing is lost
                    log.warn("cannot record transfer job {}: {}", id, dbTrouble.toString());
                }
            });
        }
    }

    /** Keeps our leases and drops files whose rows were cancelled (or taken over) meanwhile. */
    private void renew() {
        if (inFlight.isEmpty()) return;
        queue.renew(owner, settings.lease());
        inFlight.forEach((id, f) -> {
            if (!queue.holds(id, owner)) f.batch().cancel(f.copy());
        });
    }
}
