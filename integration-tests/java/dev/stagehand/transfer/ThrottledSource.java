package dev.stagehand.transfer;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A mover listener that slows the sender to about {@code bytesPerSecond}, so a test can stop the server
 * after part of a file was acknowledged by a restart marker; it counts what was sent and keeps the retries.
 * The slowing ends with the first retry: only the attempt that hangs needs it, and the resumed one need not
 * take seconds more to send the rest (what it sends is counted all the same).
 */
final class ThrottledSource implements TransferListener {

    final AtomicLong sent = new AtomicLong();
    final AtomicLong firstByte = new AtomicLong();
    final List<TransferFailure> retries = new CopyOnWriteArrayList<>();
    private final long bytesPerSecond;
    private volatile boolean retried;

    ThrottledSource(long bytesPerSecond) {
        this.bytesPerSecond = bytesPerSecond;
    }

    /** Nanoseconds since the first byte was sent (0 before it). */
    long sinceFirstByte() {
        long first = firstByte.get();
        return first == 0 ? 0 : System.nanoTime() - first;
    }

    @Override
    public void bytes(FileCopy copy, long delta) {
        firstByte.compareAndSet(0, System.nanoTime());
        sent.addAndGet(delta);
        if (retried) return;
        try {
            Thread.sleep(delta * 1000 / bytesPerSecond);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void retrying(FileCopy copy, TransferFailure failure) {
        retries.add(failure);
        retried = true;
    }
}
