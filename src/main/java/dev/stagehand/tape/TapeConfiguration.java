package dev.stagehand.tape;

import dev.stagehand.platform.EventClock;
import dev.stagehand.platform.InstanceId;
import dev.stagehand.platform.ScaledClock;
import dev.stagehand.platform.VirtualClock;
import java.util.ArrayList;
import java.util.List;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The tape library bean from {@code stagehand.tape.*}: the simulated library on a scaled, virtual or real
 * clock (the embedded default), or the script driver. Every {@link LibraryEvents} bean hears the library;
 * drive state is persisted in PostgreSQL and read back on start-up, so a tape left mounted is known.
 */
@Configuration(proxyBeanMethods = false)
@EnableConfigurationProperties({TapeProperties.class, DriveRoles.class, SharedDrivesProperties.class})
class TapeConfiguration {

    /**
     * The clock the tape side (library and scheduler) runs on. A virtual clock only moves when a
     * simulation drives it ({@link VirtualClock#runUntilIdle()}).
     */
    @Bean
    EventClock tapeClock(TapeProperties props) {
        return switch (props.clock()) {
            case VIRTUAL -> new VirtualClock();
            case REAL -> ScaledClock.real();
            case SCALED -> new ScaledClock(props.scale());
        };
    }

    @Bean
    DriveStateStore driveStateStore(JdbcClient jdbc) {
        return new DriveStateStore(jdbc);
    }

    @Bean
    TapeLibrary tapeLibrary(TapeProperties props, SharedDrivesProperties shared, EventClock tapeClock, DriveStateStore store,
            JdbcClient jdbc, TransactionTemplate tx, ObjectProvider<LibraryEvents> listeners) {
        if (shared.enabled() && (props.driver() != TapeProperties.Driver.SCRIPT || !props.persistDrives()))
            throw new IllegalArgumentException("stagehand.tape.shared-drives.enabled needs driver: script and persist-drives:"
                    + " true (instances share a physical library's drives; simulated drives are each instance's own,"
                    + " kept apart by drive-prefix)");
        List<LibraryEvents> all = new ArrayList<>();
        listeners.orderedStream().filter(l -> l != store).forEach(all::add);
        List<DriveStatus> persisted = List.of();
        if (props.persistDrives()) {
            all.add(0, store);
            persisted = store.load(props.library());
        }
        if (props.driver() == TapeProperties.Driver.SIMULATED && props.sim().readLog() != null) {
            all.add(new ReadLog(props.sim().readLog()));
        }
        LibraryEvents events = LibraryEvents.all(all);
        return switch (props.driver()) {
            case SIMULATED -> SimulatedLibrary.builder(tapeClock)
                    .name(props.library())
                    .drivePrefix(props.drivePrefix())
                    .drives(props.drives())
                    .accessors(props.accessors())
                    .model(props.sim().model())
                    .root(props.sim().root())
                    .mountTimeout(props.sim().mountTimeout())
                    .faults(props.sim().faults().plan())
                    .events(events)
                    .initialDrives(persisted)
                    .build();
            case SCRIPT -> {
                List<String> names = new ArrayList<>();
                for (int i = 1; i <= props.drives(); i++) names.add(String.format("%s%02d", props.drivePrefix(), i));
                String instance = InstanceId.orHostAndPid(shared.instanceId());
                if (shared.enabled()) persisted = SharedDrives.rowsToRestore(jdbc, props.library(), instance, persisted);
                ScriptLibrary script = new ScriptLibrary(new LibraryLayout(props.library(), names, props.accessors()),
                        props.script(), events, persisted);
                // closed with the context (inferred close()): its drive leases are given up
                yield shared.enabled() ? new SharedDrives(script, jdbc, tx, store, instance, shared.lease()).start() : script;
            }
        };
    }
}
