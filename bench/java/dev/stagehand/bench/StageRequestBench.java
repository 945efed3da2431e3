package dev.stagehand.bench;

import dev.stagehand.StagehandApplication;
import dev.stagehand.catalog.CatalogImporter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;
import tools.jackson.databind.json.JsonMapper;

/**
 * Acceptance of one 100,000-file stage request, end to end: the service runs (embedded PostgreSQL,
 * database stagehand_bench, its web server on a free port) and a client POSTs the request over real HTTP;
 * the time is from sending the body to the 201 answer (JSON parsing, validation, name resolution, inserts,
 * commit). Usage: StageRequestBench [files] [runs].
 */
public final class StageRequestBench {

    public static void main(String[] args) throws Exception {
        int files = args.length > 0 ? Integer.parseInt(args[0]) : 100_000;
        int runs = args.length > 1 ? Integer.parseInt(args[1]) : 5;
        Path dump = BenchSupport.catalogFor(files);
        try (var ctx = SpringApplication.run(StagehandApplication.class, BenchSupport.springArgs(true))) {
            JdbcTemplate jdbc = ctx.getBean(JdbcTemplate.class);
            BenchSupport.clean(jdbc);
            ctx.getBean(CatalogImporter.class).importFile(dump);
            List<String> names = jdbc.queryForList("SELECT name FROM file ORDER BY name LIMIT ?", String.class, files);
            int port = ((WebServerApplicationContext) ctx).getWebServer().getPort();
            HttpClient http = HttpClient.newHttpClient();
            String token = ctx.getBean(dev.stagehand.api.security.ApiTokens.class).create("admin", "bench", null, "bench").token();
            JsonMapper json = JsonMapper.builder().build();
            double[] seconds = new double[runs + 1];
            for (int run = 0; run <= runs; run++) { // run 0 warms the JVM up and is not counted
                Map<String, Object> body = new LinkedHashMap<>();
                body.put("clientRequestId", "bench-" + UUID.randomUUID());
                body.put("files", names);
                byte[] bytes = json.writeValueAsBytes(body);
                long t = System.nanoTime();
                HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://localhost:" + port + "/api/v1/requests"))
                        .header("Content-Type", "application/json").header("Authorization", "Bearer " + token)
                        .POST(HttpRequest.BodyPublishers.ofByteArray(bytes)).build(),
                        HttpResponse.BodyHandlers.ofString());
                seconds[run] = (System.nanoTime() - t) / 1e9;
                if (r.statusCode() != 201) throw new IllegalStateException("refused: " + r.statusCode() + " " + r.body());
                if (run == 0) System.out.printf("body %d MB; warm-up %.2f s%n", bytes.length >> 20, seconds[0]);
            }
            long stored = jdbc.queryForObject("SELECT count(*) FROM stage_request_file", Long.class);
            double[] counted = Arrays.copyOfRange(seconds, 1, runs + 1);
            Arrays.sort(counted);
            double median = counted[counted.length / 2];
            List<String> each = new ArrayList<>();
            for (int i = 1; i <= runs; i++) each.add(String.format("%.2f", seconds[i]));
            System.out.println();
            System.out.printf("stage request of %d files over HTTP + PostgreSQL, %d runs (s): %s; %d file rows stored%n",
                    files, runs, String.join(" ", each), stored);
            System.out.printf("  %-20s %10s %12s   %s%n", "", "seconds", "files/s", "target (issue 2)");
            System.out.printf("  %-20s %10.2f %12.0f   >= 20,000 files/s%n", "median", median, files / median);
            System.out.printf("  %-20s %10.2f %12.0f%n", "best", counted[0], files / counted[0]);
        }
    }
}
