package dev.stagehand.platform;

import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Stopping a module's background rounds (its scheduled executor) at shutdown. */
public final class Rounds {

    private static final Logger log = LoggerFactory.getLogger(Rounds.class);

    /** How long a stop waits for a round in progress: a round is a few queries, so this is only an upper bound. */
    public static final Duration STOP_WAIT = Duration.ofSeconds(10);

    private Rounds() {
    }

    /**
     * Starts no further round and waits (up to {@code wait}) for the one in progress to end, without interrupting
     * it. Stopped with {@code shutdownNow} alone, a round went on while Spring closed the connection pool under it:
     * every shutdown logged its query's "Socket closed" failure and rollback at ERROR. One still running after the
     * wait is interrupted and left to end by itself (its transaction rolls back; its rows are claimed again).
     *
     * @return whether the rounds ended within the wait
     */
    public static boolean stop(ExecutorService rounds, Duration wait, String what) {
        rounds.shutdown(); // a periodic task's next run is cancelled; the one running ends normally
        try {
            if (rounds.awaitTermination(wait.toMillis(), TimeUnit.MILLISECONDS)) return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        rounds.shutdownNow();
        log.info("{}: a round still running after {} s is left to end by itself", what, wait.toSeconds());
        return false;
    }
}
