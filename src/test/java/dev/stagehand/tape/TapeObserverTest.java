package dev.stagehand.tape;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.stagehand.platform.EventClock;
import dev.stagehand.platform.EventLog;
import dev.stagehand.platform.VirtualClock;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.support.StaticListableBeanFactory;

/** Tape meters and mount/dismount event lines from a simulated library's events (virtual clock). */
class TapeObserverTest {

    @TempDir Path tmp;

    final VirtualClock clock = new VirtualClock();
    final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    final ListAppender<ILoggingEvent> lines = new ListAppender<>();
    final Logger events = (Logger) LoggerFactory.getLogger("stagehand.events.mount");

    @BeforeEach
    void capture() {
        lines.start();
        events.addAppender(lines);
    }

    @AfterEach
    void release() {
        events.detachAppender(lines);
    }

    @Test
    void mountsReadsFailuresAndDismountsBecomeMetersAndOneLineEach() {
        StaticListableBeanFactory beans = new StaticListableBeanFactory();
        beans.addBean("registry", registry);
        beans.addBean("clock", clock);
        TapeProperties props = TapePropertiesTest.bind(Map.of("stagehand.tape.library", "lib1", "stagehand.tape.drives", "2",
                "stagehand.tape.accessors", "1"));
        TapeObserver observer = new TapeObserver(beans.getBeanProvider(MeterRegistry.class), props,
                beans.getBeanProvider(TapeLibrary.class), beans.getBeanProvider(EventClock.class));
        SimulatedLibrary lib = SimulatedLibrary.builder(clock).name("lib1").drives(2).accessors(1).root(tmp)
                .faults(new FaultPlan().missingVolume("GONE")).events(observer).build();
        beans.addBean("library", lib);

        SegmentRead a = new SegmentRead(1, "/d/a", "V1", 0, 400_000_000L, null);
        SegmentRead b = new SegmentRead(2, "/d/b", "V1", 4_000_000_000L, 200_000_000L, null);
        lib.mount("drive01", "V1").thenCompose(v -> lib.read("drive01", List.of(a, b)).done())
                .thenCompose(v -> lib.dismount("drive01"));
        lib.mount("drive02", "GONE");
        clock.runUntilIdle();

        assertThat(registry.get("stagehand.tape.mounts").tags("library", "lib1", "result", "ok").counter().count()).isEqualTo(1);
        assertThat(registry.get("stagehand.tape.mounts").tags("result", "volume_unavailable").counter().count()).isEqualTo(1);
        assertThat(registry.get("stagehand.tape.failures").tags("operation", "mount", "kind", "volume_unavailable").counter().count())
                .isEqualTo(1);
        assertThat(registry.get("stagehand.tape.read").counter().count()).isEqualTo(600_000_000.0);
        assertThat(registry.get("stagehand.tape.segments.read").counter().count()).isEqualTo(2);
        assertThat(registry.get("stagehand.tape.dismounts").counter().count()).isEqualTo(1);
        assertThat(registry.get("stagehand.tape.mount.duration").tags("result", "ok").timer().count()).isEqualTo(1);
        // accessor move + load, on the library's clock (no wait: the accessor was free)
        assertThat(registry.get("stagehand.tape.mount.duration").tags("result", "ok").timer().totalTime(java.util.concurrent.TimeUnit.SECONDS))
                .isCloseTo(6.7 + 17, within(0.01));
        // the drive was busy from the mount request to the end of the unload, idle in between: as the library counts it
        double busy = registry.get("stagehand.tape.drive.busy").tags("drive", "drive01").functionCounter().count();
        assertThat(busy).isCloseTo(lib.stats().drives().get("drive01").busySeconds(), within(0.01));
        assertThat(busy).isGreaterThan(6.7 + 17 + 1.5 + 55 + 30 - 0.01);
        assertThat(registry.get("stagehand.tape.accessor.busy").functionCounter().count())
                .isCloseTo(lib.stats().accessorBusySeconds(), within(1e-9)).isGreaterThan(0);
        assertThat(registry.get("stagehand.tape.drives").tags("state", "empty").gauge().value()).isGreaterThanOrEqualTo(1);
        assertThat(registry.get("stagehand.tape.drives").gauges().stream().mapToDouble(g -> g.value()).sum()).isEqualTo(2);
        assertThat(registry.get("stagehand.tape.drives").tags("state", "reading").gauge().value()).isZero();

        List<Map<String, String>> parsed = lines.list.stream().map(e -> EventLog.parse(e.getFormattedMessage())).toList();
        Map<String, String> mount = parsed.stream().filter(m -> m.get("event").equals("mount") && m.get("drive").equals("drive01")).findFirst().orElseThrow();
        assertThat(mount).containsEntry("library", "lib1").containsEntry("volume", "V1").containsEntry("result", "ok")
                .containsKeys("requested", "finished");
        assertThat(Double.parseDouble(mount.get("duration_s"))).isCloseTo(23.7, within(0.001));
        Map<String, String> failed = parsed.stream().filter(m -> m.get("event").equals("mount") && m.get("drive").equals("drive02")).findFirst().orElseThrow();
        assertThat(failed).containsEntry("volume", "GONE").containsEntry("result", "volume_unavailable").containsKey("error");
        Map<String, String> dismount = parsed.stream().filter(m -> m.get("event").equals("dismount")).findFirst().orElseThrow();
        assertThat(dismount).containsEntry("drive", "drive01").containsEntry("volume", "V1").containsEntry("segments", "2")
                .containsEntry("bytes", "600000000").containsEntry("result", "ok").containsKeys("mounted", "dismounted", "duration_s", "locate_s");
        assertThat(Double.parseDouble(dismount.get("rate_mb_s"))).isCloseTo(400, within(0.5)); // the drive's 400 MB/s
        assertThat(parsed.stream().filter(m -> m.get("event").equals("dismount")).count()).isEqualTo(1);
        // the same fields as key-value pairs, for JSON encoders
        ILoggingEvent raw = lines.list.stream().filter(e -> e.getFormattedMessage().startsWith("event=dismount")).findFirst().orElseThrow();
        assertThat(raw.getKeyValuePairs()).anySatisfy(kv -> {
            assertThat(kv.key).isEqualTo("bytes");
            assertThat(kv.value).isEqualTo("600000000");
        });
    }
}
