package dev.stagehand.transfer;

import dev.stagehand.platform.EventLog;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import java.net.URI;
import java.time.Duration;
import java.time.Instant;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.ToDoubleFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;

/**
 * Watches the service's transfers for monitoring: Micrometer meters {@code stagehand.transfer.*} per link
 * (a destination's scheme and host list, as the movers pool connections) and one structured line per
 * finished transfer on the logger {@code stagehand.events.transfer}. Hears the mover's progress (bytes on
 * the wire, retries) as its {@link TransferListener}, and each final outcome from the drainer.
 */
class TransferObserver implements TransferListener {

    static final Logger EVENTS = LoggerFactory.getLogger("stagehand.events.transfer");

    private final MeterRegistry registry;
    private final ObjectProvider<Mover> mover;
    private final Map<String, String> links = new ConcurrentHashMap<>();  // raw authority -> link
    private final Map<String, Counter> sent = new ConcurrentHashMap<>();  // link -> bytes on the wire

    TransferObserver(ObjectProvider<MeterRegistry> registry, ObjectProvider<Mover> mover) {
        this.registry = registry.getIfAvailable(CompositeMeterRegistry::new);
        this.mover = mover;
    }

    /** The link of a destination: scheme and host:port list (user names dropped, port 2811 by default). */
    static String linkOf(URI destination) {
        String authority = destination.getRawAuthority();
        if (authority == null) return String.valueOf(destination.getScheme());
        StringBuilder sb = new StringBuilder(String.valueOf(destination.getScheme()).toLowerCase(Locale.ROOT)).append("://");
        String[] parts = authority.split(",");
        for (int i = 0; i < parts.length; i++) {
            String hp = parts[i].trim();
            hp = hp.substring(hp.lastIndexOf('@') + 1);
            int colon = hp.lastIndexOf(':');
            if (i > 0) sb.append(',');
            sb.append(colon > 0 && !hp.endsWith("]") ? hp : hp + ":2811");
        }
        return sb.toString();
    }

    private String link(FileCopy copy) {
        String authority = String.valueOf(copy.destination().getScheme()) + "|" + copy.destination().getRawAuthority();
        return links.computeIfAbsent(authority, k -> {
            String link = linkOf(copy.destination());
            registerLinkGauges(link);
            return link;
        });
    }

    /** Gauges of the mover's live view of a link, registered when the link is first seen. */
    private void registerLinkGauges(String link) {
        gauge(link, "stagehand.transfer.link.throughput", "bytes.per.second", "smoothed throughput of the link",
                s -> s.mbPerSecond() * 1e6);
        gauge(link, "stagehand.transfer.link.concurrency", null, "concurrent transfers the link allows now (adaptive)",
                LinkStatus::concurrency);
        gauge(link, "stagehand.transfer.link.active", null, "files being sent on the link", LinkStatus::active);
        gauge(link, "stagehand.transfer.link.queued", null, "files waiting for the link", LinkStatus::queued);
        gauge(link, "stagehand.transfer.link.success.ratio", null, "share of recent attempts that succeeded",
                LinkStatus::successRate);
    }

    private void gauge(String link, String name, String unit, String help, ToDoubleFunction<LinkStatus> value) {
        Gauge.Builder<ObjectProvider<Mover>> b = Gauge.builder(name, mover, m -> {
            Mover mv = m.getIfAvailable();
            if (mv == null) return Double.NaN;
            for (LinkStatus s : mv.links()) if (s.link().equals(link)) return value.applyAsDouble(s);
            return 0;
        }).description(help).tag("link", link).strongReference(true);
        if (unit != null) b.baseUnit(unit);
        b.register(registry);
    }

    @Override
    public void bytes(FileCopy copy, long delta) {
        sent.computeIfAbsent(link(copy), l -> Counter.builder("stagehand.transfer.sent").baseUnit("bytes")
                .description("bytes put on the wire, every attempt included (rate() is the link's throughput)")
                .tag("link", l).register(registry)).increment(delta);
    }

    @Override
    public void retrying(FileCopy copy, TransferFailure failure) {
        Counter.builder("stagehand.transfer.retries").description("failed attempts that are retried, by failure class")
                .tags("link", link(copy), "class", failure.kind().name().toLowerCase(Locale.ROOT)).register(registry).increment();
    }

    /** A file whose other end could not be reached went back to the queue to wait the outage out. */
    void putBack(FileCopy copy, TransferFailure failure) {
        try {
            Counter.builder("stagehand.transfer.put.back")
                    .description("files put back in the queue because their destination or source could not be reached")
                    .tags("link", link(copy), "class", failure.kind().name().toLowerCase(Locale.ROOT))
                    .register(registry).increment();
            // one line per link a minute, not one per file: an outage puts back thousands
            String link = link(copy);
            long now = System.nanoTime();
            Long last = lastPutBackLog.get(link);
            if (last == null || now - last > 60_000_000_000L) {
                lastPutBackLog.put(link, now);
                log.warn("transfer link {} unreachable ({}): its files wait in the queue for the outage to end",
                        link, failure.getMessage());
            }
        } catch (RuntimeException e) {
            // monitoring only
        }
    }

    private static final Logger log = LoggerFactory.getLogger(TransferObserver.class);
    private final Map<String, Long> lastPutBackLog = new ConcurrentHashMap<>();

    /** A claimed job ended: {@code result} (verified) or {@code failure}; {@code claimedAt} when it was handed to the mover. */
    void finished(TransferJob job, FileCopy copy, Instant claimedAt, CopyResult result, TransferFailure failure) {
        String link = link(copy);
        Instant now = Instant.now();
        String outcome = failure == null ? "done" : failure.kind() == TransferFailure.Kind.CANCELLED ? "cancelled" : "failed";
        Counter.builder("stagehand.transfer.files").description("files whose transfer ended, by result")
                .tags("link", link, "result", outcome).register(registry).increment();
        EventLog line = EventLog.event("transfer").with("job", job.id()).with("correlation", job.correlation())
                .with("link", link);
        if (result != null) {
            Duration elapsed = result.elapsed();
            double seconds = elapsed.toNanos() / 1e9;
            Counter.builder("stagehand.transfer").baseUnit("bytes").description("bytes delivered and verified")
                    .tag("link", link).register(registry).increment(result.bytes());
            Timer.builder("stagehand.transfer.duration").description("one file, first attempt to verified at the destination")
                    .tag("link", link)
                    .serviceLevelObjectives(Duration.ofMillis(100), Duration.ofSeconds(1), Duration.ofSeconds(10),
                            Duration.ofMinutes(1), Duration.ofMinutes(5), Duration.ofMinutes(30), Duration.ofHours(2))
                    .register(registry).record(elapsed);
            line.with("host", result.host()).with("bytes", result.bytes()).with("started", now.minus(elapsed))
                    .with("finished", now).with("duration_s", seconds)
                    .with("rate_mb_s", seconds > 0 ? result.bytes() / 1e6 / seconds : 0.0).with("attempts", result.attempts());
        } else {
            String kind = failure.kind().name().toLowerCase(Locale.ROOT);
            if (!outcome.equals("cancelled")) {
                Counter.builder("stagehand.transfer.failures").description("transfers given up, by failure class")
                        .tags("link", link, "class", kind).register(registry).increment();
            }
            double seconds = Math.max(0, Duration.between(claimedAt, now).toNanos() / 1e9);
            line.with("bytes", 0).with("size", copy.sizeBytes()).with("started", claimedAt).with("finished", now)
                    .with("duration_s", seconds).with("rate_mb_s", 0.0).with("attempts", failure.attempts())
                    .with("error_class", kind).with("error", failure.getMessage());
        }
        line.with("claims", job.attempts()).with("result", outcome).with("source", job.source())
                .with("destination", job.destination()).log(EVENTS);
    }
}
