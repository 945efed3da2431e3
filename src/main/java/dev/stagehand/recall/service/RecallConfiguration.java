package dev.stagehand.recall.service;

import dev.stagehand.cache.DiskCache;
import dev.stagehand.platform.EventClock;
import dev.stagehand.recall.RecallProperties;
import dev.stagehand.recall.RecallQueues;
import dev.stagehand.recall.request.RecallMetrics;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import dev.stagehand.tape.DriveRoles;
import dev.stagehand.tape.TapeLibrary;
import dev.stagehand.tape.TapeModel;
import dev.stagehand.tape.TapeProperties;
import dev.stagehand.transfer.TransferQueue;
import dev.stagehand.recall.request.RequestSubmitted;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.SmartLifecycle;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.transaction.event.TransactionalEventListener;
import org.springframework.jdbc.core.JdbcTemplate;

/** Runs the recall scheduler in the service when a tape library is configured and {@code stagehand.recall.enabled}. */
@Configuration(proxyBeanMethods = false)
@EnableConfigurationProperties(RecallProperties.class)
class RecallConfiguration {

    @Bean
    RecallMetrics recallMetrics(ObjectProvider<MeterRegistry> registry) {
        MeterRegistry r = registry.getIfAvailable();
        return r == null ? RecallMetrics.NONE : new RecallMetrics(r);
    }

    @Bean
    RecallQueues recallQueues(JdbcTemplate jdbc, RecallLifecycle lifecycle) {
        return new RecallQueueView(jdbc, lifecycle::service);
    }

    @Bean
    RecallQueueMetrics recallQueueMetrics(RecallQueues queues, ObjectProvider<MeterRegistry> registry, RecallMetricsProperties props) {
        MeterRegistry r = registry.getIfAvailable();
        return new RecallQueueMetrics(queues, r == null ? new io.micrometer.core.instrument.composite.CompositeMeterRegistry() : r,
                r == null ? Duration.ZERO : props.queueInterval());
    }

    @Bean
    RecallLifecycle recallLifecycle(JdbcTemplate jdbc, ObjectProvider<TapeLibrary> library, ObjectProvider<EventClock> clock,
                                    ObjectProvider<TapeProperties> tape, RecallProperties props, DiskCache cache,
                                    ObjectProvider<TransferQueue> transfers, RecallMetrics metrics, ObjectProvider<DriveRoles> roles) {
        TapeLibrary lib = library.getIfAvailable();
        if (lib == null || !props.enabled()) return new RecallLifecycle(null);
        // the drives reserved for archive writes are not the recall scheduler's to mount
        DriveRoles r = roles.getIfAvailable();
        if (r != null) lib = r.forReading(lib);
        EventClock c = clock.getIfAvailable(dev.stagehand.platform.ScaledClock::real);
        TapeProperties tp = tape.getIfAvailable();
        TapeModel model = tp != null && tp.sim() != null && tp.sim().model() != null ? tp.sim().model() : TapeModel.lto9();
        TransferQueue queue = transfers.getIfAvailable();
        RecallService service = new RecallService(jdbc, lib, c, model, props, cache, queue, metrics);
        // a staged file's transfer ended: end its file and release its pin now, not at the next poll
        if (queue != null) queue.onEnded(correlation -> {
            if (correlation != null && correlation.startsWith(TransferHandOff.CORRELATION_PREFIX)) service.pipelineChanged();
        });
        return new RecallLifecycle(service);
    }

    /** A request submitted here is taken by this instance's scheduler at once, not at its next poll. */
    @Bean
    IntakeHint recallIntakeHint(RecallLifecycle lifecycle) {
        return new IntakeHint(lifecycle);
    }

    static final class IntakeHint {
        private final RecallLifecycle lifecycle;

        IntakeHint(RecallLifecycle lifecycle) {
            this.lifecycle = lifecycle;
        }

        // after the commit of a caller's transaction (the replication engine submits within its own): before it
        // the scheduler would not see the request; without a transaction, at once
        @TransactionalEventListener(fallbackExecution = true)
        public void submitted(RequestSubmitted submitted) {
            if (lifecycle.service() != null) lifecycle.service().requestSubmitted();
        }
    }

    /** Starts the scheduler once the context is up (after Flyway), stops it first on shutdown. */
    static final class RecallLifecycle implements SmartLifecycle {
        private final RecallService service;
        private volatile boolean running;

        RecallLifecycle(RecallService service) {
            this.service = service;
        }

        RecallService service() {
            return service;
        }

        @Override
        public void start() {
            if (service != null) service.start();
            running = true;
        }

        @Override
        public void stop() {
            if (service != null) service.stop();
            running = false;
        }

        @Override
        public boolean isRunning() {
            return running;
        }
    }
}
