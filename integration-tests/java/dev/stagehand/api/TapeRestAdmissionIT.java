package dev.stagehand.api;

import static dev.stagehand.api.Problems.assertProblem;
import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.ItDb;
import dev.stagehand.api.security.ApiAccounts;
import dev.stagehand.api.security.ApiRole;
import dev.stagehand.api.security.ApiTokens;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The WLCG submission's limit on open files, in all and per account, over real HTTP and PostgreSQL. The open
 * files come from the requests' running counts (V30): files submitted are held to the limits at once, and files
 * that end free room at once.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
        "stagehand.recall.enabled=false", "stagehand.api.wlcg.max-active-files=5",
        "stagehand.api.wlcg.max-active-files-per-account=4"})
class TapeRestAdmissionIT {

    @LocalServerPort int port;
    @Autowired JdbcTemplate jdbc;
    @Autowired ApiTokens tokens;
    @Autowired ApiAccounts accounts;

    final String tag = UUID.randomUUID().toString().substring(0, 8);

    @Test
    void openFilesAreHeldToTheLimitsAtOnceAndFreedWhenTheyEnd() throws InterruptedException {
        ItDb.cancelOpenRequests(jdbc); // what earlier classes left open
        ApiClient admin = ApiClient.admin(port, tokens);
        ApiClient fts = ApiClient.as(port, accounts, tokens, "fts-" + tag, ApiRole.ADMIN);

        ApiClient.Answer first = admin.post("/api/v1/stage", stage(1, 2, 3));
        assertThat(first.status()).isEqualTo(201);
        // the 3 files just submitted count for the account: 3 + 2 > 4
        ApiClient.Answer mine = admin.post("/api/v1/stage", stage(4, 5));
        assertProblem(mine, 429);
        assertThat(mine.json().get("detail").stringValue()).contains("account " + ApiAccounts.ADMIN
                + " holds 1 open requests with 3 files waiting (limits per account 5000 and 4)");

        assertThat(fts.post("/api/v1/stage", stage(4, 5)).status()).isEqualTo(201);
        // the service holds 3 + 2 files: one more is over its limit of 5
        String sixth = stage(6);
        ApiClient.Answer full = fts.post("/api/v1/stage", sixth);
        assertProblem(full, 429);
        assertThat(full.json().get("detail").stringValue())
                .contains("the service holds 2 open requests with 5 files waiting (limits 10000 and 5)");

        // the first request's files end: they leave room at once
        assertThat(admin.delete("/api/v1/stage/" + first.json().get("requestId").stringValue()).status()).isEqualTo(200);
        assertThat(fts.post("/api/v1/stage", sixth).status()).isEqualTo(201);
        assertThat(jdbc.queryForObject("SELECT count(*) FROM stage_request WHERE owner = ? AND state IN ('submitted', 'active')",
                Long.class, "fts-" + tag)).isEqualTo(2);
    }

    @Test
    void aRequestNoLimitCanEverAdmitIsTooLargeNotTooMany() {
        ItDb.cancelOpenRequests(jdbc);
        ApiClient idle = ApiClient.as(port, accounts, tokens, "idle-" + tag, ApiRole.ADMIN);
        // 5 files with nothing open: over the per-account limit of 4 however long the client waits
        ApiClient.Answer five = idle.post("/api/v1/stage", stage(11, 12, 13, 14, 15));
        assertProblem(five, 413, "the limit on open files per account is 4", "this request names 5");
        assertThat(five.json().get("errors").get(0).get("field").stringValue()).isEqualTo("files");
        // 4 fit the limit but not the account's room once it holds some: 429 with Retry-After, as before
        assertThat(idle.post("/api/v1/stage", stage(16, 17)).status()).isEqualTo(201);
        String four = stage(11, 12, 13, 14);
        assertProblem(idle.post("/api/v1/stage", four), 429);
        assertThat(idle.retryAfter("/api/v1/stage", four)).isEqualTo("60");
        // bad input is a 400 however full the account is: it was checked after the limits, and a 429 is retried for ever
        String tooLong = four.replace("\"}", "\", \"diskLifetime\": \"P1000D\"}");
        assertProblem(idle.post("/api/v1/stage", tooLong), 400);
        assertProblem(idle.post("/api/v1/stage", four.replace("/wlcg/admission/", "/wlcg/admission/../")), 400);
        assertThat(jdbc.queryForObject("SELECT count(*) FROM stage_request WHERE owner = ?", Long.class, "idle-" + tag))
                .isEqualTo(1);
    }

    /** A WLCG stage body naming catalog files {@code n} of this test. */
    String stage(int... n) {
        List<Map<String, String>> files = IntStream.of(n).mapToObj(i -> {
            String path = "/wlcg/admission/" + tag + "/f" + i;
            if (jdbc.queryForObject("SELECT count(*) FROM file WHERE name = ?", Long.class, path) == 0) {
                ItDb.simulatedFile(jdbc, path, 1_000_000);
            }
            return Map.of("path", path);
        }).toList();
        return ApiClient.json(Map.of("files", files));
    }
}
