package dev.stagehand.api;

import static dev.stagehand.api.Problems.assertProblem;
import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.api.ApiClient.Answer;
import dev.stagehand.api.security.ApiAccounts;
import dev.stagehand.api.security.ApiRole;
import dev.stagehand.api.security.ApiTokens;
import dev.stagehand.cache.DirectoryUsage;
import dev.stagehand.cache.DiskCache;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The cache admin API over real HTTP: the directories with their out-of-service mark, and putting one back in service
 * (admin only; an unknown id is 404). A directory out of service gets no reservation until then, across restarts.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
class CacheApiIT {

    @LocalServerPort
    int port;
    @Autowired
    JdbcTemplate jdbc;
    @Autowired
    ApiAccounts accounts;
    @Autowired
    ApiTokens tokens;
    @Autowired
    DiskCache cache;

    @Test
    void anAdminPutsACacheDirectoryTakenOutOfServiceBackInService() {
        String tag = UUID.randomUUID().toString().substring(0, 8);
        ApiClient admin = ApiClient.admin(port, tokens);
        ApiClient operator = ApiClient.as(port, accounts, tokens, "cache-op-" + tag, ApiRole.OPERATOR, "*");
        DirectoryUsage dir = cache.usage().getFirst();
        // as the cache marks it after 3 staged copies in a row could not be forced to disk (DiskCacheIT does that part)
        jdbc.update("UPDATE cache_directory SET out_of_service_since = now(), out_of_service_reason = ? WHERE id = ?",
                "taken out of service: 3 staged copies in a row could not be forced to disk (fsync); last: EIO " + tag, dir.id());
        try {
            assertThat(cache.largestReservable()).as("out of service: nothing reservable").isZero();
            Answer list = admin.get("/api/v1/admin/cache/directories");
            assertThat(list.status()).as(list.body()).isEqualTo(200);
            var row = java.util.stream.StreamSupport.stream(list.json().spliterator(), false)
                    .filter(d -> d.get("id").intValue() == dir.id()).findFirst().orElseThrow();
            assertThat(row.get("path").stringValue()).isEqualTo(dir.path().toString());
            assertThat(row.get("inService").booleanValue()).isFalse();
            assertThat(row.get("outOfServiceReason").stringValue()).contains("EIO " + tag);
            assertThat(row.get("outOfServiceSince").isNull()).isFalse();

            String path = "/api/v1/admin/cache/directories/" + dir.id() + "/in-service";
            assertProblem(operator.post(path, null), 403, "admin");
            assertProblem(operator.get("/api/v1/admin/cache/directories"), 403);
            assertThat(cache.outOfService()).as("refused: nothing changed").containsKey(dir.path());
            assertProblem(admin.post("/api/v1/admin/cache/directories/2147483647/in-service", null), 404, "no cache directory");
            assertProblem(admin.post("/api/v1/admin/cache/directories/nope/in-service", null), 404, "no cache directory");

            Answer back = admin.post(path, null);
            assertThat(back.status()).as(back.body()).isEqualTo(200);
            assertThat(back.json().get("inService").booleanValue()).isTrue();
            assertThat(back.json().get("path").stringValue()).isEqualTo(dir.path().toString());
            assertThat(cache.outOfService()).isEmpty();
            assertThat(cache.largestReservable()).as("in service: reservable again").isPositive();
            assertThat(admin.post(path, null).status()).as("already in service: nothing to do").isEqualTo(200);
        } finally {
            jdbc.update("UPDATE cache_directory SET out_of_service_since = NULL, out_of_service_reason = NULL WHERE id = ?", dir.id());
        }
    }
}
