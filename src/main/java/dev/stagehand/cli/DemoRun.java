package dev.stagehand.cli;

import dev.stagehand.StagehandApplication;
import dev.stagehand.catalog.CatalogImporter;
import dev.stagehand.catalog.ImportSummary;
import dev.stagehand.tape.LibraryEventPrinter;
import java.io.ByteArrayInputStream;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The demo, step by step: {@link #start}, {@link #resetRequests}, {@link #loadCatalog}, {@link #submitRecall},
 * {@link #watch}. Progress comes from the request's own API (per-state counts); as soon as a recall
 * scheduler moves files, {@link #watch} reports it and waits for the request to finish. With nothing moving
 * files it says so after the stall timeout and ends normally.
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

    DemoRun(PrintStream out, int port) {
        this.out = out;
        this.port = port;
    }

    int execute(Duration timeout, Duration stall) throws Exception {
        start();
        resetRequests();
        loadCatalog();
        String id = submitRecall();
        return watch(id, timeout, stall);
    }

    /** Starts the whole service in this JVM: embedded PostgreSQL (its own database), web server on a free port. */
    void start() {
        // each run recalls from tape: an earlier run's cached copies would answer the request at once
        org.springframework.util.FileSystemUtils.deleteRecursively(java.nio.file.Path.of(CACHE).toFile());
        SpringApplication app = new SpringApplication(StagehandApplication.class);
        app.addListeners(new ServingUrlPrinter(out));
        // Quiet logs: the demo's own lines are the show; warnings and errors still appear.
        // The simulated library prints what its drives do; the demo runs it on the scaled clock (x60).
        app.addInitializers(ctx -> ctx.getBeanFactory().registerSingleton("demoLibraryEvents",
                new LibraryEventPrinter(out, Instant.now(), false)));
        context = app.run("--server.port=" + port, "--stagehand.db.local-database=" + DATABASE, "--logging.level.root=WARN",
                "--stagehand.tape.clock=scaled", "--stagehand.tape.scale=60", "--stagehand.cache.directories[0].path=" + CACHE, "--stagehand.cache.directories[0].capacity=20GB",
                "--stagehand.recall.poll-interval=500ms");
        int actual = ((WebServerApplicationContext) context).getWebServer().getPort();
        baseUrl = "http://localhost:" + actual;
        out.printf("[demo] service up (database %s); API %s/api/v1/requests, OpenAPI %s/v3/api-docs%n", DATABASE, baseUrl, baseUrl);
        out.printf("[demo] console %s/console: log in as 'admin' with the password in STAGEHAND_ADMIN_PASSWORD "
                + "(when unset, the generated one printed above)%n", baseUrl);
    }

    /** The demo database starts each run without old requests or cached copies, so what is shown is this run's recall from tape. */
    void resetRequests() {
        JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
        jdbc.execute("TRUNCATE stage_request, recall_file, cache_pin, cache_reservation, cache_file CASCADE");
        jdbc.update("UPDATE cache_directory SET used_bytes = 0, reserved_bytes = 0");
    }

    void loadCatalog() {
        ImportSummary s = context.getBean(CatalogImporter.class).importStream(
                new ByteArrayInputStream(SampleCatalog.csv().getBytes(StandardCharsets.UTF_8)), "sample catalog");
        out.println("[demo] " + s.describe());
    }

    /** Submits the sample recall through the service's own HTTP API, as a client would. */
    String submitRecall() throws Exception {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("clientRequestId", "demo-" + Instant.now());
        body.put("files", SampleCatalog.sampleRecall());
        body.put("experiment", "atlas");
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(baseUrl + "/api/v1/requests"))
                .header("Content-Type", "application/json").header("X-Stagehand-Owner", "demo")
                .POST(HttpRequest.BodyPublishers.ofString(json.writeValueAsString(body))).build(),
                HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 201) throw new IllegalStateException("submission refused: " + r.statusCode() + " " + r.body());
        String id = json.readTree(r.body()).get("id").stringValue();
        out.printf("[demo] submitted request %s: %d files (%s/api/v1/requests/%s)%n", id, SampleCatalog.sampleRecall().size(), baseUrl, id);
        return id;
    }

    /** Prints per-state counts once a second until the request finishes, nothing moves for {@code stall}, or {@code timeout}. */
    int watch(String id, Duration timeout, Duration stall) throws Exception {
        Instant deadline = Instant.now().plus(timeout);
        Instant lastChange = Instant.now();
        String last = null;
        while (true) {
            JsonNode d = json.readTree(http.send(HttpRequest.newBuilder(URI.create(baseUrl + "/api/v1/requests/" + id + "?fileLimit=0"))
                    .GET().build(), HttpResponse.BodyHandlers.ofString()).body());
            String state = d.get("request").get("state").stringValue();
            StringBuilder line = new StringBuilder("request ").append(state).append(":");
            d.get("counts").properties().forEach(e -> {
                if (e.getValue().longValue() > 0) line.append(' ').append(e.getKey()).append('=').append(e.getValue().longValue());
            });
            String now = line.toString();
            if (!now.equals(last)) lastChange = Instant.now();
            out.printf("[demo] %tT %s%n", java.util.Date.from(Instant.now()), now);
            last = now;
            if (FINISHED.contains(state)) {
                out.println("[demo] the request finished: " + state);
                return state.equals("done") ? 0 : 1;
            }
            if (Duration.between(lastChange, Instant.now()).compareTo(stall) >= 0) {
                out.printf("[demo] nothing changed for %d s: the recall is stuck (see the log above). Stopping.%n",
                        stall.toSeconds());
                return 1;
            }
            if (Instant.now().isAfter(deadline)) {
                out.printf("[demo] timed out after %d s with the request %s%n", timeout.toSeconds(), state);
                return 1;
            }
            Thread.sleep(1000);
        }
    }

    @Override
    public void close() {
        if (context != null) context.close();
    }
}
