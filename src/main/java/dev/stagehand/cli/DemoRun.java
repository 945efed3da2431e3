package dev.stagehand.cli;

import dev.stagehand.StagehandApplication;
import dev.stagehand.catalog.CatalogImporter;
import dev.stagehand.catalog.ImportSummary;
import dev.stagehand.platform.DatabaseRetry;
import dev.stagehand.tape.LibraryEventPrinter;
import dev.stagehand.transfer.GridFtpServer;
import dev.stagehand.transfer.TransferJob;
import dev.stagehand.transfer.TransferQueue;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.util.FileSystemUtils;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The demo, step by step: {@link #start}, {@link #resetRequests}, {@link #loadCatalog}, {@link #startGridFtp},
 * {@link #submitRecall}, {@link #watch}, {@link #summarise}. The recall's destination is a loopback Globus
 * GridFTP server, so files flow tape &rarr; cache &rarr; GridFTP while the library still reads; progress comes
 * from the request's own API (per-state counts). At the end the demo measures the transfer stage on its own
 * (the same files sent again from the cache by the same queue and movers) and reads every delivered file back to check its Adler32.
 * Without the server binary it says so and recalls to the cache only.
 */
final class DemoRun implements AutoCloseable {

    static final String DATABASE = "stagehand_demo";
    private static final Set<String> FINISHED = Set.of("done", "failed", "cancelled");

    private final PrintStream out;
    private final int port;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    static final String CACHE = "var/demo/cache";
    private final JsonMapper json = JsonMapper.builder().build();
    private ConfigurableApplicationContext context;
    private String baseUrl;
    /** The admin's API bearer token and console password: from the environment, else made for this run. */
    private final String adminToken = fromEnv("STAGEHAND_ADMIN_TOKEN", "sht_");
    private final String adminPassword = fromEnv("STAGEHAND_ADMIN_PASSWORD", "");

    DemoRun(PrintStream out, int port) {
        this.out = out;
        this.port = port;
    }

    private GridFtpServer gridftp;
    private Path transferRoot;
    private String destination;
    private Instant submittedAt, tapeDoneAt, finishedAt;

    int execute(Duration timeout, Duration stall) throws Exception {
        start();
        resetRequests();
        loadCatalog();
        startGridFtp();
        String id = submitRecall();
        int code = watch(id, timeout, stall);
        if (code == 0 && destination != null) code = summarise(id);
        return code;
    }

    /** Starts the whole service in this JVM: embedded PostgreSQL (its own database), web server on a free port. */
    void start() {
        // each run recalls from tape: an earlier run's cached copies would answer the request at once
        FileSystemUtils.deleteRecursively(Path.of(CACHE).toFile());
        SpringApplication app = new SpringApplication(StagehandApplication.class);
        app.addListeners(new ServingUrlPrinter(out));
        // Quiet logs: the demo's own lines are the show; warnings and errors still appear.
        // The simulated library prints what its drives do; the demo runs it on the scaled clock (x60).
        app.addInitializers(ctx -> ctx.getBeanFactory().registerSingleton("demoLibraryEvents",
                new LibraryEventPrinter(out, Instant.now(), false)));
        context = app.run("--server.port=" + port, "--stagehand.security.admin-token=" + adminToken,
                "--stagehand.console.admin-password=" + adminPassword, "--stagehand.db.local-database=" + DATABASE, "--logging.level.root=WARN",
                "--stagehand.tape.clock=scaled", "--stagehand.tape.scale=60", "--stagehand.cache.directories[0].path=" + CACHE, "--stagehand.cache.directories[0].capacity=20GB",
                "--stagehand.cache.directories[0].create-missing=true",
                "--stagehand.recall.poll-interval=500ms", "--stagehand.transfer.queue.poll-interval=250ms");
        int actual = ((WebServerApplicationContext) context).getWebServer().getPort();
        baseUrl = "http://localhost:" + actual;
        out.printf("[demo] service up (database %s); API %s/api/v1/requests, OpenAPI %s/v3/api-docs%n", DATABASE, baseUrl, baseUrl);
        boolean tokenFromEnv = !blank(System.getenv("STAGEHAND_ADMIN_TOKEN"));
        boolean passwordFromEnv = !blank(System.getenv("STAGEHAND_ADMIN_PASSWORD"));
        out.printf("[demo] console %s/console: log in as 'admin' with password %s%n", baseUrl,
                passwordFromEnv ? "from STAGEHAND_ADMIN_PASSWORD" : adminPassword + " (generated for this run; set STAGEHAND_ADMIN_PASSWORD to choose one)");
        out.printf("[demo] API: bearer token of account 'admin' %s%n", tokenFromEnv ? "from STAGEHAND_ADMIN_TOKEN"
                : adminToken + " (generated for this run; set STAGEHAND_ADMIN_TOKEN to choose one)");
        out.printf("[demo]   e.g. curl -H \"Authorization: Bearer $TOKEN\" %s/api/v1/requests ; more tokens and accounts: %s/api/v1/admin/tokens%n",
                baseUrl, baseUrl);
    }

    /** The demo database starts each run without old requests or cached copies, so what is shown is this run's recall from tape. */
    void resetRequests() {
        JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
        // the service's pollers already query these tables: a TRUNCATE may lose a deadlock to one and is retried
        DatabaseRetry.onDeadlock(Duration.ofMillis(50)).invoke(() -> jdbc.execute(
                "TRUNCATE stage_request, recall_file, cache_pin, cache_reservation, cache_file, transfer_job CASCADE"));
        jdbc.update("UPDATE cache_directory SET used_bytes = 0, reserved_bytes = 0");
    }

    void loadCatalog() {
        ImportSummary s = context.getBean(CatalogImporter.class).importStream(
                new ByteArrayInputStream(SampleCatalog.csv().getBytes(StandardCharsets.UTF_8)), "sample catalog");
        out.println("[demo] " + s.describe());
    }

    /**
     * Starts an anonymous globus-gridftp-server on 127.0.0.1 (a free port) whose destination directory is
     * a fresh temporary directory; without the binary the recall goes to the cache only.
     */
    void startGridFtp() throws Exception {
        if (!GridFtpServer.available()) {
            out.println("[demo] globus-gridftp-server not found (Debian package globus-gridftp-server-progs): "
                    + "running without transfers; files are recalled to the disk cache only");
            return;
        }
        transferRoot = Files.createTempDirectory("stagehand-demo-");
        Path delivered = transferRoot.resolve("delivered");
        for (SampleCatalog.Dataset d : SampleCatalog.DATASETS) { // the movers do not create directories
            GridFtpServer.openUp(delivered.resolve(d.directory().substring(1)));
        }
        gridftp = GridFtpServer.anonymous(transferRoot.resolve("server"));
        destination = gridftp.url(delivered);
        out.printf("[demo] Globus GridFTP server on 127.0.0.1:%d (anonymous, pid %d); recalled files go to %s%n",
                gridftp.port, gridftp.pid(), destination);
    }

    /** Submits the sample recall through the service's own HTTP API, as a client would. */
    String submitRecall() throws Exception {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("clientRequestId", "demo-" + Instant.now());
        body.put("files", SampleCatalog.sampleRecall());
        // no experiment named: the sample spans three, so the admin's request has none (admins see it)
        if (destination != null) body.put("destination", destination);
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(baseUrl + "/api/v1/requests"))
                .header("Content-Type", "application/json").header("Authorization", "Bearer " + adminToken)
                .POST(HttpRequest.BodyPublishers.ofString(json.writeValueAsString(body))).build(),
                HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 201) throw new IllegalStateException("submission refused: " + r.statusCode() + " " + r.body());
        String id = json.readTree(r.body()).get("id").stringValue();
        submittedAt = Instant.now();
        out.printf("[demo] submitted request %s: %d files (%s/api/v1/requests/%s)%n", id, SampleCatalog.sampleRecall().size(), baseUrl, id);
        return id;
    }

    /**
     * Prints the request's per-state counts once a second (polling four times a second to time the stages)
     * until the request finishes, nothing moves for {@code stall}, or {@code timeout}. With a destination each
     * line also says how many files the tape has delivered to the cache, how many wait on disk or are being
     * sent, and how many the GridFTP server has: the overlap is visible as deliveries while tape still reads.
     */
    int watch(String id, Duration timeout, Duration stall) throws Exception {
        Instant deadline = Instant.now().plus(timeout);
        Instant lastChange = Instant.now();
        Instant lastPrint = Instant.EPOCH;
        String last = null;
        int total = SampleCatalog.sampleRecall().size();
        while (true) {
            JsonNode d = json.readTree(http.send(HttpRequest.newBuilder(URI.create(baseUrl + "/api/v1/requests/" + id + "?fileLimit=0"))
                    .header("Authorization", "Bearer " + adminToken).GET().build(), HttpResponse.BodyHandlers.ofString()).body());
            Instant now = Instant.now();
            String state = d.get("request").get("state").stringValue();
            Map<String, Long> counts = new LinkedHashMap<>();
            d.get("counts").properties().forEach(e -> counts.put(e.getKey(), e.getValue().longValue()));
            StringBuilder line = new StringBuilder("request ").append(state).append(":");
            counts.forEach((k, v) -> {
                if (v > 0) line.append(' ').append(k).append('=').append(v);
            });
            long onDisk = counts.getOrDefault("on_disk", 0L), sending = counts.getOrDefault("transferring", 0L),
                    delivered = counts.getOrDefault("done", 0L);
            long fromTape = onDisk + sending + delivered;
            if (tapeDoneAt == null && fromTape + counts.getOrDefault("failed", 0L) + counts.getOrDefault("cancelled", 0L) >= total) {
                tapeDoneAt = now;
            }
            String status = line.toString();
            if (!status.equals(last)) lastChange = now;
            boolean finished = FINISHED.contains(state);
            if (finished || !status.equals(last) && Duration.between(lastPrint, now).toMillis() >= 1000
                    || Duration.between(lastPrint, now).toMillis() >= 5000) {
                if (destination != null) {
                    out.printf("[demo] %tT +%5.1fs  tape->cache %3d/%d | on disk, waiting %3d | sending %3d | delivered %3d/%d   (%s)%n",
                            java.util.Date.from(now), seconds(submittedAt, now), fromTape, total, onDisk, sending, delivered, total, status);
                } else {
                    out.printf("[demo] %tT %s%n", java.util.Date.from(now), status);
                }
                lastPrint = now;
            }
            last = status;
            if (finished) {
                finishedAt = now;
                out.println("[demo] the request finished: " + state);
                return state.equals("done") ? 0 : 1;
            }
            if (Duration.between(lastChange, now).compareTo(stall) >= 0) {
                out.printf("[demo] nothing changed for %d s: the recall is stuck (see the log above). Stopping.%n",
                        stall.toSeconds());
                return 1;
            }
            if (now.isAfter(deadline)) {
                out.printf("[demo] timed out after %d s with the request %s%n", timeout.toSeconds(), state);
                return 1;
            }
            Thread.sleep(250);
        }
    }

    private static boolean blank(String s) {
        return s == null || s.isBlank();
    }

    /** The environment variable's value, else a random one (prefix + 32 random bytes, base64url). */
    private static String fromEnv(String name, String prefix) {
        String v = System.getenv(name);
        if (!blank(v)) return v.strip();
        byte[] b = new byte[prefix.isEmpty() ? 15 : 32];
        new java.security.SecureRandom().nextBytes(b);
        return prefix + java.util.Base64.getUrlEncoder().withoutPadding().encodeToString(b);
    }

    /**
     * The overlap in figures, and the delivered files checked. The transfer stage alone is measured by sending
     * the same files again from the cache through the service's transfer queue and movers; every delivered file
     * is read back from the server's disk and its Adler32 compared with the catalog's.
     */
    int summarise(String id) throws Exception {
        JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
        record Staged(String name, String cachePath, long size, String adler) {}
        List<Staged> files = jdbc.query("""
                SELECT f.name, cf.path, f.size_bytes, f.adler32 FROM stage_request_file x JOIN file f ON f.id = x.file_id
                  JOIN cache_file cf ON cf.file_id = f.id AND cf.state = 'verified'
                 WHERE x.request_id = ?::uuid ORDER BY f.name""",
                (rs, i) -> new Staged(rs.getString(1), rs.getString(2), rs.getLong(3), rs.getString(4).trim()), id);
        long bytes = files.stream().mapToLong(Staged::size).sum();

        // transfer stage alone: the same files, already cached, sent again to another directory by the same
        // queue and movers the pipeline used (same connections, same adaptive concurrency)
        Path againDir = transferRoot.resolve("again");
        for (SampleCatalog.Dataset d : SampleCatalog.DATASETS) GridFtpServer.openUp(againDir.resolve(d.directory().substring(1)));
        String again = "demo-again:" + id;
        List<TransferQueue.Request> copies = files.stream().map(f -> new TransferQueue.Request(again, Path.of(f.cachePath()).toUri(),
                URI.create(gridftp.url(againDir) + f.name()), f.size(), Long.parseLong(f.adler(), 16))).toList();
        out.printf("[demo] measuring the transfer stage alone: the service's movers send the %d cached files again ...%n", copies.size());
        TransferQueue queue = context.getBean(TransferQueue.class);
        Instant t0 = Instant.now();
        queue.enqueue(copies);
        List<TransferJob> jobs;
        while (!(jobs = queue.byCorrelation(again)).stream().allMatch(TransferJob::finished)
                && Duration.between(t0, Instant.now()).toMinutes() < 10) {
            Thread.sleep(100);
        }
        Instant t1 = Instant.now();
        long failedAgain = jobs.stream().filter(j -> !j.state().equals("done")).count();
        double transferAlone = seconds(t0, t1);
        FileSystemUtils.deleteRecursively(againDir);

        // every delivered file, read back from the server's disk
        Path delivered = transferRoot.resolve("delivered");
        int match = 0;
        List<String> bad = new ArrayList<>();
        for (Staged f : files) {
            Path p = delivered.resolve(f.name().substring(1));
            if (Files.isRegularFile(p) && Files.size(p) == f.size() && dev.stagehand.cache.Checksums.adler32Of(p).equals(dev.stagehand.cache.Checksums.normalise(f.adler()))) match++;
            else bad.add(f.name());
        }

        double tape = seconds(submittedAt, tapeDoneAt), end = seconds(submittedAt, finishedAt);
        out.printf("[demo] pipeline overlap, %d files, %.2f GB (tape on the simulated library's x60 clock):%n", files.size(), bytes / 1e9);
        out.printf("[demo]   %-70s %7.1f s%n", "tape stage: submission to the last file read and verified in the cache", tape);
        out.printf("[demo]   %-70s %7.1f s%n", "transfer stage alone: the same files sent again from the cache" + (failedAgain > 0 ? " (" + failedAgain + " failed)" : ""), transferAlone);
        out.printf("[demo]   %-70s %7.1f s%n", "sum of the stages (stage everything, then transfer)", tape + transferAlone);
        out.printf("[demo]   %-70s %7.1f s%n", "end to end, pipelined (submission to the last file delivered)", end);
        out.printf("[demo]   end to end / tape stage = %.2f; end to end / sum of the stages = %.2f%n", end / tape, end / (tape + transferAlone));
        out.printf("[demo] %d of %d delivered files match the catalog's Adler32 (read back from the GridFTP server's disk)%s%n",
                match, files.size(), bad.isEmpty() ? "" : "; bad: " + bad.subList(0, Math.min(5, bad.size())));
        return match == SampleCatalog.sampleRecall().size() ? 0 : 1;
    }

    private static double seconds(Instant from, Instant to) {
        return Duration.between(from, to).toNanos() / 1e9;
    }

    @Override
    public void close() {
        try {
            if (context != null) context.close();
        } finally {
            if (gridftp != null) {
                try {
                    gridftp.close();
                } catch (Exception e) {
                    out.println("[demo] could not stop the GridFTP server (pid " + gridftp.pid() + "): " + e);
                }
            }
            if (transferRoot != null) FileSystemUtils.deleteRecursively(transferRoot.toFile());
        }
    }
}
