package dev.stagehand.observability;

import static dev.stagehand.ItWait.await;
import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.stagehand.catalog.CatalogImporter;
import dev.stagehand.platform.EventLog;
import dev.stagehand.tape.SimulatedContent;
import dev.stagehand.tape.SimulatedLibrary;
import dev.stagehand.tape.TapeLibrary;
import dev.stagehand.transfer.GridFtpScratch;
import dev.stagehand.transfer.GridFtpServer;
import java.io.ByteArrayInputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.jdbc.core.JdbcTemplate;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The service's observability end to end: a small recall with hand-off to a real GridFTP server, on the
 * simulated library (scaled clock) and a database of its own; then the Prometheus scrape, the event lines,
 * the recall queue gauges and the health probes are checked against what happened.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
        "stagehand.db.local-database=stagehand_obs",
        "stagehand.db.pool-size=6",   // the IT contexts share one cluster (max_connections 500): keep this one small
        "stagehand.tape.library=obs", "stagehand.tape.clock=scaled", "stagehand.tape.scale=600",
        "stagehand.tape.drives=2", "stagehand.tape.accessors=1", "stagehand.tape.sim.root=target/obs-it/tape",
        "stagehand.cache.directories[0].path=target/obs-it/cache", "stagehand.cache.directories[0].create-missing=true", "stagehand.cache.directories[0].capacity=2GB",
        "stagehand.cache.health.min-free=1MB",
        "stagehand.recall.poll-interval=200ms", "stagehand.recall.min-mount-age=1s",
        "stagehand.recall.experiment-drive-caps.parked=0",   // files of 'parked' wait: the queue gauges see them
        "stagehand.recall.metrics.queue-interval=200ms",
        "stagehand.transfer.queue.poll-interval=200ms",
        "management.endpoint.health.show-details=always", "management.endpoint.health.show-components=always"})
class ObservabilityIT {

    static final JsonMapper JSON = JsonMapper.builder().build();
    static GridFtpScratch scratch;
    static Path root;
    static GridFtpServer ftp;

    @LocalServerPort int port;
    @Autowired JdbcTemplate jdbc;
    @Autowired CatalogImporter importer;
    @Autowired TapeLibrary library;
    @Autowired dev.stagehand.api.security.ApiTokens tokens;
    String token;

    /** A bearer token of the built-in admin, made once per test. */
    String token() {
        if (token == null) token = tokens.create(dev.stagehand.api.security.ApiAccounts.ADMIN, "observability test", null, "it").token();
        return token;
    }

    final String tag = UUID.randomUUID().toString().substring(0, 8);
    final HttpClient http = HttpClient.newHttpClient();
    final ListAppender<ILoggingEvent> lines = new ListAppender<>();
    final List<Logger> events = List.of((Logger) LoggerFactory.getLogger("stagehand.events.mount"),
            (Logger) LoggerFactory.getLogger("stagehand.events.transfer"));

    @BeforeAll
    static void server() throws Exception {
        scratch = GridFtpScratch.create("stagehand-obs-it");
        root = scratch.root;
        ftp = scratch.anonymous("server");
    }

    @AfterAll
    static void stopServer() throws Exception {
        if (scratch != null) scratch.close();
    }

    @BeforeEach
    void capture() {
        lines.start();
        for (Logger l : events) l.addAppender(lines);
    }

    @AfterEach
    void release() {
        for (Logger l : events) l.detachAppender(lines);
    }

    record Answer(int status, String body) {
        JsonNode json() {
            return JSON.readTree(body);
        }
    }

    Answer get(String path) throws Exception {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://localhost:" + port + path))
                        .header("Authorization", "Bearer " + token()).GET().build(),
                HttpResponse.BodyHandlers.ofString());
        return new Answer(r.statusCode(), r.body());
    }

    Answer post(String path, Object body) throws Exception {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://localhost:" + port + path))
                .header("Authorization", "Bearer " + token()).header("Content-Type", "application/json").POST(body == null ? HttpRequest.BodyPublishers.noBody()
                        : HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body))).build(),
                HttpResponse.BodyHandlers.ofString());
        return new Answer(r.statusCode(), r.body());
    }

    Scrape scrape() throws Exception {
        Answer a = get("/actuator/prometheus");
        assertThat(a.status()).isEqualTo(200);
        return Scrape.parse(a.body());
    }

    /** Imports files {@code prefix}-0.. of {@code experiment}, alternating over {@code volumes}; returns name -> size. */
    Map<String, Long> catalog(String prefix, String experiment, int n, String... volumes) {
        Map<String, Long> files = new LinkedHashMap<>();
        StringBuilder csv = new StringBuilder("file,volume,offset_bytes,size_bytes,experiment,adler32\n");
        long[] offsets = new long[volumes.length];
        for (int i = 0; i < n; i++) {
            String name = "/" + prefix + "-" + i; // flat names: the destination directory has no subdirectories
            long size = 2_000_000L + 1_000L * i;
            int v = i % volumes.length;
            csv.append(name).append(',').append(volumes[v]).append(',').append(offsets[v]).append(',').append(size).append(',')
                    .append(experiment).append(',').append(SimulatedContent.adler32Hex(name, size)).append('\n');
            offsets[v] += size;
            files.put(name, size);
        }
        importer.importStream(new ByteArrayInputStream(csv.toString().getBytes(StandardCharsets.UTF_8)), "observability it");
        return files;
    }

    String requestState(String id) {
        return jdbc.queryForObject("SELECT state FROM stage_request WHERE id = ?::uuid", String.class, id);
    }

    @Test
    void aRecallWithTransfersShowsInTheScrapeTheEventLinesAndHealth() throws Exception {
        String exp = "obs-" + tag;
        String va = "OA" + tag, vb = "OB" + tag;
        Map<String, Long> files = catalog("obs-" + tag, exp, 6, va, vb);
        long total = files.values().stream().mapToLong(Long::longValue).sum();
        long onA = 0;
        int i = 0;
        for (long size : files.values()) if (i++ % 2 == 0) onA += size;
        Path dst = root.resolve("dst-" + tag);
        GridFtpServer.openUp(dst);
        String link = "ftp://127.0.0.1:" + ftp.port;

        Scrape before = scrape();
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("files", new ArrayList<>(files.keySet()));
        body.put("experiment", exp);
        body.put("destination", ftp.url(dst));
        Answer created = post("/api/v1/requests", body);
        assertThat(created.status()).isEqualTo(201);
        String id = created.json().get("id").stringValue();
        await("request " + id + " to end", Duration.ofSeconds(180), () -> !List.of("submitted", "active").contains(requestState(id)));
        assertThat(requestState(id)).isEqualTo("done");
        for (var f : files.entrySet()) assertThat(Files.size(dst.resolve(f.getKey().substring(1)))).isEqualTo(f.getValue());

        // the drives dismount after their idle time (5 min on the library clock = 0.5 s here)
        await("both volumes dismounted", Duration.ofSeconds(60), () -> dismounts(va) + dismounts(vb) >= 2);
        Scrape after = scrape();
        Files.writeString(Path.of("target/obs-it/scrape.txt"), after.text()); // for reading: what a scraper sees

        // staged from tape into the cache: exactly the files' bytes, each file once
        assertThat(after.sum("stagehand_recall_staged_bytes_total") - before.sum("stagehand_recall_staged_bytes_total")).isEqualTo(total);
        assertThat(after.sum("stagehand_recall_staged_files_total") - before.sum("stagehand_recall_staged_files_total")).isEqualTo(6);
        // delivered and verified on the link: the same bytes; on the wire at least as many
        assertThat(after.sum("stagehand_transfer_bytes_total", "link", link) - before.sum("stagehand_transfer_bytes_total", "link", link))
                .isEqualTo(total);
        assertThat(after.sum("stagehand_transfer_sent_bytes_total", "link", link) - before.sum("stagehand_transfer_sent_bytes_total", "link", link))
                .isGreaterThanOrEqualTo(total);
        assertThat(after.sum("stagehand_transfer_files_total", "link", link, "result", "done")
                - before.sum("stagehand_transfer_files_total", "link", link, "result", "done")).isEqualTo(6);
        assertThat(after.sum("stagehand_transfer_duration_seconds_count", "link", link)
                - before.sum("stagehand_transfer_duration_seconds_count", "link", link)).isEqualTo(6);
        assertThat(after.has("stagehand_transfer_link_throughput_bytes_per_second", "link", link)).isTrue();
        assertThat(after.sum("stagehand_transfer_link_concurrency", "link", link)).isGreaterThanOrEqualTo(1);
        assertThat(after.sum("stagehand_transfer_failures_total", "link", link)).isZero();
        // tape: two volumes, at least one mount each, every byte read
        double mounts = after.sum("stagehand_tape_mounts_total", "library", "obs", "result", "ok")
                - before.sum("stagehand_tape_mounts_total", "library", "obs", "result", "ok");
        assertThat(mounts).isGreaterThanOrEqualTo(2);
        assertThat(after.sum("stagehand_tape_mount_duration_seconds_count", "library", "obs", "result", "ok")
                - before.sum("stagehand_tape_mount_duration_seconds_count", "library", "obs", "result", "ok")).isEqualTo(mounts);
        assertThat(after.sum("stagehand_tape_read_bytes_total", "library", "obs") - before.sum("stagehand_tape_read_bytes_total", "library", "obs"))
                .isGreaterThanOrEqualTo(total);
        // each mount's accessor move + load (23.7 s of library time) is drive busy time
        assertThat(after.sum("stagehand_tape_drive_busy_seconds_total", "library", "obs")
                - before.sum("stagehand_tape_drive_busy_seconds_total", "library", "obs")).isGreaterThan(mounts * 23.7 - 0.1);
        assertThat(after.sum("stagehand_tape_accessor_busy_seconds_total", "library", "obs")
                - before.sum("stagehand_tape_accessor_busy_seconds_total", "library", "obs")).isGreaterThanOrEqualTo(mounts * 2 * 6.7 - 0.1);
        assertThat(after.sum("stagehand_tape_drives", "library", "obs")).isEqualTo(2);
        assertThat(after.sum("stagehand_tape_accessors", "library", "obs")).isEqualTo(1);
        // request latency: one completed request of this experiment, in every bucket up to +Inf
        assertThat(after.sum("stagehand_recall_request_duration_seconds_count", "experiment", exp, "result", "done")).isEqualTo(1);
        assertThat(after.sum("stagehand_recall_request_duration_seconds_bucket", "experiment", exp, "le", "+Inf")).isEqualTo(1);
        double latency = after.sum("stagehand_recall_request_duration_seconds_sum", "experiment", exp);
        assertThat(latency).isGreaterThan(0).isLessThan(180);
        // cache usage per directory: the staged copies are there
        // (the cache gauges reuse one accounting query for 5 s: the scrape before the request may still be served)
        String cacheDir = Path.of("target/obs-it/cache").toAbsolutePath().normalize().toString();
        await("the cache gauges to count the copies", Duration.ofSeconds(30), () -> {
            try {
                return scrape().sum("stagehand_cache_used_bytes", "directory", cacheDir) >= total;
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        assertThat(after.sum("stagehand_cache_capacity_bytes", "directory", cacheDir)).isEqualTo(2L << 30);

        // one event line per finished transfer, with its fields
        List<Map<String, String>> transfers = parsed("transfer").stream().filter(m -> m.get("correlation").contains(id)).toList();
        assertThat(transfers).hasSize(6);
        for (Map<String, String> t : transfers) {
            String name = t.get("destination").substring(t.get("destination").lastIndexOf('/'));
            assertThat(t).containsEntry("result", "done").containsEntry("link", link).containsEntry("bytes", String.valueOf(files.get(name)))
                    .containsKeys("job", "host", "started", "finished", "duration_s", "rate_mb_s", "attempts", "source");
            assertThat(Double.parseDouble(t.get("rate_mb_s"))).isPositive();
        }
        // one line per mount and per dismount of these volumes; the dismounts account for every byte read
        assertThat(parsed("mount").stream().filter(m -> m.get("volume").equals(va) || m.get("volume").equals(vb)))
                .hasSize((int) mounts).allSatisfy(m -> assertThat(m).containsEntry("result", "ok").containsEntry("library", "obs")
                        .containsKeys("drive", "requested", "finished", "duration_s"));
        long dismountedBytesA = parsed("dismount").stream().filter(m -> m.get("volume").equals(va)).mapToLong(m -> Long.parseLong(m.get("bytes"))).sum();
        assertThat(dismountedBytesA).isGreaterThanOrEqualTo(onA);
        assertThat(parsed("dismount")).allSatisfy(m -> assertThat(m).containsKeys("drive", "mounted", "dismounted", "duration_s",
                "segments", "bytes", "rate_mb_s"));

        // health: everything usable -> ready; no usable drive -> not ready, but still alive
        Answer ready = get("/actuator/health/readiness");
        assertThat(ready.status()).isEqualTo(200);
        assertThat(ready.json().get("status").stringValue()).isEqualTo("UP");
        assertThat(ready.json().get("components").propertyNames()).contains("db", "tapeLibrary", "cacheDirectories", "readinessState");
        SimulatedLibrary sim = (SimulatedLibrary) library;
        await("drives empty", Duration.ofSeconds(30), () -> sim.drives().stream().allMatch(d -> d.state().name().equals("EMPTY")));
        try {
            sim.setEnabled("drive01", false);
            sim.setEnabled("drive02", false);
            Answer notReady = get("/actuator/health/readiness");
            assertThat(notReady.status()).isEqualTo(503);
            assertThat(notReady.json().get("status").stringValue()).isEqualTo("DOWN");
            assertThat(notReady.json().get("components").get("tapeLibrary").get("status").stringValue()).isEqualTo("DOWN");
            assertThat(notReady.json().get("components").get("db").get("status").stringValue()).isEqualTo("UP");
            assertThat(get("/actuator/health").status()).isEqualTo(503);
            Answer alive = get("/actuator/health/liveness");
            assertThat(alive.status()).isEqualTo(200);
            assertThat(alive.json().get("status").stringValue()).isEqualTo("UP");
        } finally {
            sim.setEnabled("drive01", true);
            sim.setEnabled("drive02", true);
        }
        assertThat(get("/actuator/health/readiness").status()).isEqualTo(200);
    }

    @Test
    void queueDepthPerVolumeAndExperimentFollowsTheQueue() throws Exception {
        String vol = "OP" + tag;
        Map<String, Long> files = catalog("parked-" + tag, "parked", 3, vol);
        long total = files.values().stream().mapToLong(Long::longValue).sum();
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("files", new ArrayList<>(files.keySet()));
        body.put("experiment", "parked");
        Answer created = post("/api/v1/requests", body);
        assertThat(created.status()).isEqualTo(201);
        String id = created.json().get("id").stringValue();

        await("the parked volume's queue gauge", Duration.ofSeconds(30), () -> {
            try {
                return scrape().sum("stagehand_recall_volume_queue_files", "volume", vol) == 3;
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        Scrape s = scrape();
        assertThat(s.sum("stagehand_recall_volume_queue_bytes", "volume", vol)).isEqualTo(total);
        assertThat(s.sum("stagehand_recall_queue_files", "experiment", "parked", "state", "queued")).isEqualTo(3);
        assertThat(s.sum("stagehand_recall_queue_bytes", "experiment", "parked", "state", "queued")).isEqualTo(total);

        // cancelled: the volume has no queued work left and its series disappears
        assertThat(post("/api/v1/requests/" + id + "/cancel", null).status()).isEqualTo(200);
        await("the parked volume's series to go", Duration.ofSeconds(30), () -> {
            try {
                return !scrape().has("stagehand_recall_volume_queue_files", "volume", vol);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        assertThat(scrape().sum("stagehand_recall_request_duration_seconds_count", "experiment", "parked", "result", "cancelled"))
                .isGreaterThanOrEqualTo(1);
    }

    long dismounts(String volume) {
        return parsed("dismount").stream().filter(m -> volume.equals(m.get("volume"))).count();
    }

    List<Map<String, String>> parsed(String event) {
        List<ILoggingEvent> copy;
        synchronized (lines) {
            copy = new ArrayList<>(lines.list);
        }
        return copy.stream().map(e -> EventLog.parse(e.getFormattedMessage())).filter(m -> event.equals(m.get("event"))).toList();
    }
}
