package dev.stagehand.cache;

import dev.stagehand.platform.EventClock;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.ApplicationRunner;
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

    @Bean
    ApplicationRunner diskCacheStart(DiskCache cache) {
        return args -> cache.start();
    }

    /** java.time.Clock view of an EventClock. */
    private static final class EventClockAdapter extends Clock {
        private final EventClock clock;

        EventClockAdapter(EventClock clock) {
            this.clock = clock;
        }

        @Override
        public ZoneId getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(ZoneId zone) {
            throw new UnsupportedOperationException("the event clock is UTC");
        }

        @Override
        public Instant instant() {
            return clock.now();
        }
    }
}
