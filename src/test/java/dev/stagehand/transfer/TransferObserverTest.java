package dev.stagehand.transfer;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.stagehand.platform.EventLog;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.net.URI;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.support.StaticListableBeanFactory;

/** Transfer meters by link and failure class, and the per-transfer event line, without a server. */
class TransferObserverTest {

    @Test
    void linksAreSchemeAndHostListAsTheMoversPoolThem() {
        assertThat(TransferObserver.linkOf(URI.create("gsiftp://dtn1.example.org/data/f"))).isEqualTo("gsiftp://dtn1.example.org:2811");
        assertThat(TransferObserver.linkOf(URI.create("FTP://u@a:2812,b/x"))).isEqualTo("ftp://a:2812,b:2811");
    }

    @Test
    void outcomesAreCountedByResultAndClassAndEachIsOneLine() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        StaticListableBeanFactory beans = new StaticListableBeanFactory();
        beans.addBean("registry", registry);
        TransferObserver o = new TransferObserver(beans.getBeanProvider(MeterRegistry.class), beans.getBeanProvider(Mover.class));
        ListAppender<ILoggingEvent> lines = new ListAppender<>();
        lines.start();
        Logger events = (Logger) LoggerFactory.getLogger("stagehand.events.transfer");
        events.addAppender(lines);
        try {
            String link = "gsiftp://dtn:2811";
            FileCopy ok = new FileCopy("1", URI.create("file:/c/a"), URI.create("gsiftp://dtn/d/a"), 5_000_000, 1L);
            FileCopy denied = new FileCopy("2", URI.create("file:/c/b"), URI.create("gsiftp://dtn/d/b"), 7, 1L);
            FileCopy dropped = new FileCopy("3", URI.create("file:/c/c"), URI.create("gsiftp://dtn/d/c"), 9, 1L);
            o.bytes(ok, 3_000_000);
            o.retrying(ok, new TransferFailure(TransferFailure.Kind.STALL, "no progress"));
            o.bytes(ok, 5_000_000);
            o.finished(job(1, ok), ok, Instant.now().minusSeconds(3),
                    new CopyResult(ok, 5_000_000, Duration.ofMillis(2500), 2, "dtn:2811", 1), null);
            o.finished(job(2, denied), denied, Instant.now().minusSeconds(1), null,
                    new TransferFailure(TransferFailure.Kind.PERMISSION_DENIED, "550 denied", 1, null));
            o.finished(job(3, dropped), dropped, Instant.now(), null, new TransferFailure(TransferFailure.Kind.CANCELLED, "cancelled"));

            assertThat(registry.get("stagehand.transfer").tag("link", link).counter().count()).isEqualTo(5_000_000);
            assertThat(registry.get("stagehand.transfer.sent").tag("link", link).counter().count()).isEqualTo(8_000_000);
            assertThat(registry.get("stagehand.transfer.retries").tags("link", link, "class", "stall").counter().count()).isEqualTo(1);
            assertThat(registry.get("stagehand.transfer.failures").tags("link", link, "class", "permission_denied").counter().count()).isEqualTo(1);
            assertThat(registry.find("stagehand.transfer.failures").tag("class", "cancelled").counter()).isNull();
            for (String result : List.of("done", "failed", "cancelled")) {
                assertThat(registry.get("stagehand.transfer.files").tags("link", link, "result", result).counter().count()).isEqualTo(1);
            }
            assertThat(registry.get("stagehand.transfer.duration").tag("link", link).timer().count()).isEqualTo(1);

            List<Map<String, String>> parsed = lines.list.stream().map(e -> EventLog.parse(e.getFormattedMessage())).toList();
            assertThat(parsed).hasSize(3);
            assertThat(parsed.get(0)).containsEntry("event", "transfer").containsEntry("job", "1").containsEntry("result", "done")
                    .containsEntry("bytes", "5000000").containsEntry("duration_s", "2.500").containsEntry("rate_mb_s", "2.000")
                    .containsEntry("attempts", "2").containsEntry("host", "dtn:2811").containsEntry("link", link)
                    .containsKeys("started", "finished", "source", "destination", "correlation");
            assertThat(parsed.get(1)).containsEntry("result", "failed").containsEntry("error_class", "permission_denied")
                    .containsEntry("bytes", "0").containsEntry("size", "7").containsKey("error");
            assertThat(parsed.get(2)).containsEntry("result", "cancelled");
        } finally {
            events.detachAppender(lines);
        }
    }

    static TransferJob job(long id, FileCopy c) {
        return new TransferJob(id, "stage:r:" + id, c.source().toString(), c.destination().toString(), c.sizeBytes(), 1L, "active",
                1, null, null, 0, null, Instant.now(), Instant.now(), null, Instant.now(), 0);
    }
}
