package dev.stagehand.tape;

import dev.stagehand.platform.EventClock;
import dev.stagehand.platform.EventLog;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import java.time.Duration;
import java.time.Instant;
import java.util.EnumSet;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.stereotype.Component;

/**
 * Hears the tape library for monitoring: Micrometer meters {@code stagehand.tape.*} (mounts by result, mount
 * time, bytes read, failures by kind, drives by state, each drive's busy time, the accessors' busy time)
 * and one structured line per mount and per dismount on the logger {@code stagehand.events.mount}.
 * All tape times are on the library's clock (real time in production; the simulated library's clock in the
 * demo and simulations), so rates and durations describe the drives, whatever the clock's scale.
 */
@Component
class TapeObserver implements LibraryEvents {

    static final Logger EVENTS = LoggerFactory.getLogger("stagehand.events.mount");
    private static final Set<DriveState> BUSY = EnumSet.of(DriveState.MOUNTING, DriveState.LOCATING, DriveState.READING,
            DriveState.WRITING, DriveState.UNLOADING);

    /** One volume's stay in a drive, from the mount request to the dismount. */
    private static final class Session {
        final String volume;
        final Instant requested;
        Instant ready;
        long segments, bytes;
        double readSeconds, locateSeconds;

        Session(String volume, Instant requested) {
            this.volume = volume;
            this.requested = requested;
        }
    }

    /** Busy time of one drive on the library's clock. */
    private static final class Busy {
        double seconds;
        Instant since;
    }

    private final MeterRegistry registry;
    private final String library;
    private final ObjectProvider<EventClock> clock;
    private final ObjectProvider<TapeLibrary> lib; // held here: function counters keep only weak references
    private final Map<String, Session> sessions = new ConcurrentHashMap<>();
    private final Map<String, Busy> busy = new ConcurrentHashMap<>();
    private final Counter bytesRead, segmentsRead, bytesWritten, dismounts;

    TapeObserver(ObjectProvider<MeterRegistry> registry, TapeProperties props, ObjectProvider<TapeLibrary> lib,
                 ObjectProvider<EventClock> clock) {
        this.registry = registry.getIfAvailable(CompositeMeterRegistry::new);
        this.library = props.library();
        this.clock = clock;
        this.lib = lib;
        MeterRegistry r = this.registry;
        bytesRead = Counter.builder("stagehand.tape.read").baseUnit("bytes").description("bytes read from tape")
                .tag("library", library).register(r);
        segmentsRead = Counter.builder("stagehand.tape.segments.read").description("segments read from tape")
                .tag("library", library).register(r);
        bytesWritten = Counter.builder("stagehand.tape.written").baseUnit("bytes").description("bytes written to tape")
                .tag("library", library).register(r);
        dismounts = Counter.builder("stagehand.tape.dismounts").description("volumes returned to their slot")
                .tag("library", library).register(r);
        mounts("ok"); // present from the start, so rate() has a baseline
        for (DriveState s : DriveState.values()) {
            Gauge.builder("stagehand.tape.drives", lib, l -> count(l, s)).description("drives in each state").strongReference(true)
                    .tags("library", library, "state", s.name().toLowerCase(Locale.ROOT)).register(r);
        }
        Gauge.builder("stagehand.tape.accessors", props, p -> p.accessors()).description("robot accessors")
                .tag("library", library).register(r);
        if (props.driver() == TapeProperties.Driver.SIMULATED) {
            // only the simulated library knows its accessors' occupancy; a script driver's HSM does not tell
            FunctionCounter.builder("stagehand.tape.accessor.busy", lib, l -> l.getIfAvailable() instanceof SimulatedLibrary s
                            ? s.stats().accessorBusySeconds() : 0).baseUnit("seconds")
                    .description("time accessors spent moving cartridges, summed over accessors (library clock)")
                    .tag("library", library).register(r);
            FunctionCounter.builder("stagehand.tape.accessor.wait", lib, l -> l.getIfAvailable() instanceof SimulatedLibrary s
                            ? s.stats().accessorWaitSeconds() : 0).baseUnit("seconds")
                    .description("time cartridge moves waited for a free accessor (library clock)")
                    .tag("library", library).register(r);
        }
    }

    private static double count(ObjectProvider<TapeLibrary> lib, DriveState state) {
        TapeLibrary l = lib.getIfAvailable();
        if (l == null) return Double.NaN;
        return l.drives().stream().filter(d -> d.state() == state).count();
    }

    private Counter mounts(String result) {
        return Counter.builder("stagehand.tape.mounts").description("mounts finished, by result (ok or the failure kind)")
                .tags("library", library, "result", result).register(registry);
    }

    private Instant now() {
        EventClock c = clock.getIfAvailable();
        return c == null ? Instant.now() : c.now();
    }

    @Override
    public void driveChanged(String lib, DriveStatus status, Instant at) {
        Busy b = busy.computeIfAbsent(status.drive(), d -> {
            Busy n = new Busy();
            FunctionCounter.builder("stagehand.tape.drive.busy", n, x -> busySeconds(x))
                    .baseUnit("seconds").description("time the drive spent mounting, positioning, reading, writing or unloading (library clock)")
                    .tags("library", library, "drive", d).register(registry);
            return n;
        });
        synchronized (b) {
            boolean nowBusy = BUSY.contains(status.state());
            if (nowBusy && b.since == null) {
                b.since = at;
            } else if (!nowBusy && b.since != null) {
                b.seconds += seconds(b.since, at);
                b.since = null;
            }
        }
    }

    private double busySeconds(Busy b) {
        synchronized (b) {
            return b.seconds + (b.since == null ? 0 : seconds(b.since, now()));
        }
    }

    private static double seconds(Instant from, Instant to) {
        return Math.max(0, Duration.between(from, to).toNanos() / 1e9);
    }

    @Override
    public void mountStarted(String drive, String volume, Instant at) {
        sessions.put(drive, new Session(volume, at));
    }

    @Override
    public void mountFinished(String drive, String volume, Instant at, TapeFailure failure) {
        Session s = sessions.get(drive);
        Instant requested = s != null && s.volume.equals(volume) ? s.requested : at;
        String result = failure == null ? "ok" : failure.kind().name().toLowerCase(Locale.ROOT);
        double seconds = seconds(requested, at);
        mounts(result).increment();
        Timer.builder("stagehand.tape.mount.duration").description("mount request to volume ready at BOT, incl. accessor waits (library clock)")
                .tags("library", library, "result", result)
                .serviceLevelObjectives(Duration.ofSeconds(15), Duration.ofSeconds(30), Duration.ofMinutes(1),
                        Duration.ofMinutes(2), Duration.ofMinutes(5), Duration.ofMinutes(15), Duration.ofHours(1))
                .register(registry).record(Duration.between(requested, at).isNegative() ? Duration.ZERO : Duration.between(requested, at));
        if (failure != null) {
            failures("mount", failure.kind()).increment();
            sessions.remove(drive);
        } else if (s != null) {
            s.ready = at;
        }
        EventLog.event("mount").with("library", library).with("drive", drive).with("volume", volume)
                .with("requested", requested).with("finished", at).with("duration_s", seconds).with("result", result)
                .with("error", failure == null ? null : failure.getMessage()).log(EVENTS);
    }

    private Counter failures(String operation, TapeFailure.Kind kind) {
        return Counter.builder("stagehand.tape.failures").description("tape failures by operation and kind")
                .tags("library", library, "operation", operation, "kind", kind.name().toLowerCase(Locale.ROOT)).register(registry);
    }

    @Override
    public void segmentRead(String drive, ReadResult r) {
        long size = r.segment().sizeBytes();
        bytesRead.increment(size);
        segmentsRead.increment();
        Session s = sessions.get(drive);
        if (s != null) {
            synchronized (s) {
                s.segments++;
                s.bytes += size;
                s.locateSeconds += r.locateSeconds();
                s.readSeconds += Math.max(0, seconds(r.startedAt(), r.finishedAt()) - r.locateSeconds());
            }
        }
    }

    @Override
    public void segmentFailed(String drive, SegmentRead segment, TapeFailure failure, Instant at) {
        failures("read", failure.kind()).increment();
    }

    @Override
    public void fileWritten(String drive, WriteBatch.WrittenSegment written, Instant at) {
        bytesWritten.increment(written.file().sizeBytes());
    }

    @Override
    public void dismounted(String drive, String volume, Instant at) {
        dismounts.increment();
        Session s = sessions.remove(drive);
        EventLog line = EventLog.event("dismount").with("library", library).with("drive", drive).with("volume", volume);
        if (s != null && s.volume.equals(volume)) {
            synchronized (s) {
                Instant from = s.ready != null ? s.ready : s.requested;
                line.with("mounted", from).with("dismounted", at).with("duration_s", seconds(from, at))
                        .with("segments", s.segments).with("bytes", s.bytes).with("read_s", s.readSeconds)
                        .with("locate_s", s.locateSeconds)
                        .with("rate_mb_s", s.readSeconds > 0 ? s.bytes / 1e6 / s.readSeconds : 0.0);
            }
        } else {
            line.with("dismounted", at); // mounted before this process started: its history is in tape_mount_log
        }
        line.with("result", "ok").log(EVENTS);
    }
}
