package dev.stagehand.archive.internal;

import dev.stagehand.archive.ArchiveProperties;
import dev.stagehand.archive.EvictionHold;
import dev.stagehand.platform.InstanceId;
import dev.stagehand.platform.Rounds;
import dev.stagehand.tape.DriveRoles;
import dev.stagehand.tape.TapeLibrary;
import dev.stagehand.tape.TapeModel;
import dev.stagehand.tape.TapeProperties;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.context.SmartLifecycle;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The archive path in the service: the buffer (always: registration works without drives) and, when
 * {@code stagehand.archive.enabled} and drives are reserved for writing, the flusher, the eviction round
 * and the landing watcher on their own threads.
 */
@Configuration(proxyBeanMethods = false)
@EnableConfigurationProperties(ArchiveProperties.class)
class ArchiveConfiguration {

    private static final Logger log = LoggerFactory.getLogger(ArchiveConfiguration.class);

    static long volumeCapacity(ArchiveProperties props, TapeProperties tape) {
        if (props.volumeCapacity().toBytes() > 0) return props.volumeCapacity().toBytes();
        TapeModel m = tape != null && tape.sim() != null && tape.sim().model() != null ? tape.sim().model() : TapeModel.lto9();
        return m.capacityBytes();
    }

    @Bean
    JdbcArchiveBuffer archiveBuffer(JdbcTemplate jdbc, TransactionTemplate tx, ArchiveProperties props,
                                    ObjectProvider<TapeProperties> tape, ObjectProvider<EvictionHold> holds) {
        // holds are looked up lazily: replication's beans may depend on this buffer
        EvictionHold all = ids -> {
            java.util.Set<Long> free = new java.util.HashSet<>(ids);
            holds.orderedStream().forEach(h -> {
                java.util.Collection<Long> ok = free.isEmpty() ? List.of() : h.mayEvict(List.copyOf(free));
                free.retainAll(ok == null ? java.util.Set.of() : new java.util.HashSet<>(ok));
            });
            return free;
        };
        return new JdbcArchiveBuffer(jdbc, tx, props, volumeCapacity(props, tape.getIfAvailable()), List.of(all));
    }

    @Bean
    ArchiveLifecycle archiveLifecycle(JdbcTemplate jdbc, TransactionTemplate tx, ArchiveProperties props, JdbcArchiveBuffer buffer,
                                      ObjectProvider<TapeLibrary> library, ObjectProvider<DriveRoles> roles,
                                      ObjectProvider<TapeProperties> tape, ApplicationEventPublisher publisher) {
        TapeLibrary lib = library.getIfAvailable();
        DriveRoles r = roles.getIfAvailable(() -> new DriveRoles(1));
        ArchiveFlusher flusher = null;
        if (props.enabled() && lib != null) {
            List<String> drives = r.writeDrives(lib.layout());
            if (drives.isEmpty()) log.warn("archive: no drive reserved for writing (stagehand.tape.roles.write-drives); "
                    + "registered files wait in the buffer");
            else flusher = new ArchiveFlusher(jdbc, tx, lib, drives, props, volumeCapacity(props, tape.getIfAvailable()),
                    publisher::publishEvent, InstanceId.orHostAndPid(props.instanceId()));
        }
        return new ArchiveLifecycle(props, buffer, flusher);
    }

    /** Starts the archive's rounds once the context is up (after Flyway); stops them first on shutdown. */
    static final class ArchiveLifecycle implements SmartLifecycle {
        private final ArchiveProperties props;
        private final JdbcArchiveBuffer buffer;
        private final ArchiveFlusher flusher;
        private volatile ScheduledExecutorService rounds;

        ArchiveLifecycle(ArchiveProperties props, JdbcArchiveBuffer buffer, ArchiveFlusher flusher) {
            this.props = props;
            this.buffer = buffer;
            this.flusher = flusher;
        }

        ArchiveFlusher flusher() {
            return flusher;
        }

        @Override
        public void start() {
            if (!props.enabled()) return;
            ScheduledExecutorService ex = Executors.newScheduledThreadPool(1, run -> {
                Thread t = new Thread(run, "archive");
                t.setDaemon(true);
                return t;
            });
            rounds = ex;
            if (flusher != null) {
                flusher.start();
                every(ex, props.flush().pollInterval(), flusher::poll, "flush");
            }
            every(ex, props.evictInterval(), buffer::evict, "eviction");
            if (props.watch().enabled()) {
                LandingWatcher watcher = new LandingWatcher(buffer);
                every(ex, props.watch().interval(), watcher::scan, "landing scan");
            }
        }

        private static void every(ScheduledExecutorService ex, Duration d, Runnable r, String what) {
            if (d.isZero() || d.isNegative()) return;
            ex.scheduleWithFixedDelay(() -> {
                try {
                    r.run();
                } catch (RuntimeException e) {
                    log.warn("archive {} round failed; retrying", what, e);
                }
            }, 0, d.toMillis(), TimeUnit.MILLISECONDS);
        }

        @Override
        public void stop() {
            ScheduledExecutorService ex = rounds;
            rounds = null;
            if (ex != null) Rounds.stop(ex, Rounds.STOP_WAIT, "archive");
        }

        @Override
        public boolean isRunning() {
            return rounds != null;
        }
    }
}
