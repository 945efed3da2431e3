package dev.stagehand.cache;

import dev.stagehand.platform.EventClock;
import dev.stagehand.platform.Rounds;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import org.springframework.beans.factory.ObjectProvider;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The {@link DiskCache} bean. Pins expire and copies age on the application's {@link EventClock} when there
 * is one (so simulations on a virtual clock expire pins in simulated time), else on the system clock.
 * The cache registers its directories and recovers half-written copies when the application has started.
 */
@Configuration(proxyBeanMethods = false)
class CacheConfiguration {

    private static final Logger log = LoggerFactory.getLogger(CacheConfiguration.class);

    @Bean
    DiskCache diskCache(JdbcClient jdbc, TransactionTemplate tx, CacheProperties props,
                        ObjectProvider<EventClock> eventClock, ApplicationEventPublisher events) {
        EventClock ec = eventClock.getIfAvailable();
        Clock clock = ec == null ? Clock.systemUTC() : new EventClockAdapter(ec);
        return new DiskCache(jdbc, tx, props, clock, events);
    }

    @Bean
    CacheMetrics diskCacheMetrics(DiskCache cache, CacheProperties props) {
        return new CacheMetrics(cache, props);
    }

    /** Health contributor {@code cacheDirectories}: directories writable, file systems not full, in service. */
    @Bean
    CacheHealth cacheDirectoriesHealthIndicator(CacheProperties props, CacheHealthProperties health, DiskCache cache) {
        return new CacheHealth(props, health.minFree(), cache::outOfServiceAsLastRead);
    }

    @Bean
    CacheLifecycle diskCacheLifecycle(DiskCache cache, CacheProperties props, CacheHealthProperties health) {
        return new CacheLifecycle(cache, props.housekeepingInterval(), health.refreshInterval());
    }

    /**
     * Starts the cache before the recall scheduler (an earlier phase: its reservations must not be taken by
     * the recovery of a late start), then purges expired pins periodically and reads the directories'
     * out-of-service marks again for the health check (another instance sharing a directory may have taken it
     * out or put it back; without this round the check showed it only after this instance's next reservation
     * or usage read, with neither never).
     */
    static final class CacheLifecycle implements SmartLifecycle {
        private final DiskCache cache;
        private final Duration interval;
        private final Duration healthRefresh;
        private ScheduledExecutorService housekeeping;

        CacheLifecycle(DiskCache cache, Duration interval, Duration healthRefresh) {
            this.cache = cache;
            this.interval = interval;
            this.healthRefresh = healthRefresh;
        }

        @Override
        public synchronized void start() {
            cache.start();
            housekeeping = Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "cache-housekeeping");
                t.setDaemon(true);
                return t;
            });
            long ms = interval.toMillis();
            housekeeping.scheduleWithFixedDelay(() -> round("cache housekeeping", () -> {
                cache.keepNode();
                int n = cache.purgeExpiredPins();
                if (n > 0) log.debug("purged {} expired pins", n);
            }), ms, ms, TimeUnit.MILLISECONDS);
            long refreshMs = healthRefresh.toMillis();
            // a failed read leaves the marks as last read (outOfService sets them only from a completed query)
            housekeeping.scheduleWithFixedDelay(() -> round("cache health refresh", cache::outOfService),
                    refreshMs, refreshMs, TimeUnit.MILLISECONDS);
        }

        private static void round(String what, Runnable work) {
            try {
                work.run();
            } catch (RuntimeException e) {
                // a database outage is logged once (DatabaseRetry); the next round tries again
                if (!dev.stagehand.platform.DatabaseRetry.noteFailure(what, e)) {
                    log.warn("{} failed; retrying", what, e);
                }
            }
        }

        @Override
        public synchronized void stop() {
            if (housekeeping != null) Rounds.stop(housekeeping, Rounds.STOP_WAIT, "cache housekeeping");
            housekeeping = null;
            cache.stop();
        }

        @Override
        public synchronized boolean isRunning() {
            return housekeeping != null;
        }

        @Override
        public int getPhase() {
            return SmartLifecycle.DEFAULT_PHASE - 1000;
        }
    }

    /** java.time.Clock view of an EventClock. */
    private static final class EventClockAdapter extends Clock {
        private final EventClock clock;
        private final ZoneId zone;

        EventClockAdapter(EventClock clock) {
            this(clock, ZoneOffset.UTC);
        }

        private EventClockAdapter(EventClock clock, ZoneId zone) {
            this.clock = clock;
            this.zone = zone;
        }

        @Override
        public ZoneId getZone() {
            return zone;
        }

        @Override
        public Clock withZone(ZoneId zone) {
            return new EventClockAdapter(clock, zone);
        }

        @Override
        public Instant instant() {
            return clock.now();
        }
    }
}
