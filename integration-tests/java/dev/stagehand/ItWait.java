package dev.stagehand;

import java.time.Duration;
import java.util.function.BooleanSupplier;

/** Polling for the integration tests that watch the running service reach a state. */
public final class ItWait {

    private ItWait() {}

    /** Returns once {@code done} holds; fails naming {@code what} when it still does not after {@code timeout}. */
    public static void await(String what, Duration timeout, BooleanSupplier done) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!done.getAsBoolean()) {
            if (System.nanoTime() > deadline) throw new AssertionError("timed out waiting for " + what);
            Thread.sleep(100);
        }
    }
}
