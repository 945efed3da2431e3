package dev.stagehand.platform;

import java.time.Duration;
import java.time.Instant;

/**
 * The time the tape side runs on. Production uses real time; the demo real time scaled by a factor (an
 * hour of tape work in a minute); simulations and tests a fully virtual clock on which a day of tape work
 * passes in seconds. The scheduler and the simulated library both take their time from here, so the same
 * scheduler code runs in production and in simulation.
 */
public interface EventClock {

    /** The current time on this clock. */
    Instant now();

    /**
     * Runs {@code task} once {@code delay} has passed on this clock. On a virtual clock tasks run on the
     * simulation thread in time order (ties in submission order); on a real clock on a background thread.
     */
    Scheduled schedule(Duration delay, Runnable task);

    /** A scheduled task that may be cancelled before it runs. */
    interface Scheduled {
        /** @return true if the task had not run yet and now never will */
        boolean cancel();
    }
}
