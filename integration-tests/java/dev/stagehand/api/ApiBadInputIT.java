package dev.stagehand.api;

import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.ItCatalog;
import dev.stagehand.api.ApiClient.Answer;
import dev.stagehand.catalog.CatalogImporter;
import java.net.URI;
import java.net.http.HttpRequest;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.jdbc.core.JdbcTemplate;
import tools.jackson.databind.JsonNode;

/**
 * Bad input to every write endpoint and the main queries of the native and WLCG APIs besides stage request
 * submission ({@link MalformedRequestsIT} has those): each is a 4xx problem document whose {@code errors} name the
 * field or parameter, with no exception in it, and nothing is stored.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ApiBadInputIT {

    /** In paths and bodies: K0, K1 known files, DS their dataset, SITE a site, REQ an open request. */
    record Case(String name, String method, String path, String contentType, String body, int status, String field) {
        @Override
        public String toString() {
            return name;
        }
    }

    static final String JSON = "application/json";
    static final String LONG = "x".repeat(100_000);

    @LocalServerPort int port;
    @Autowired CatalogImporter importer;
    @Autowired JdbcTemplate jdbc;
    @Autowired dev.stagehand.api.security.ApiTokens tokens;

    ItCatalog catalog;
    ApiClient admin;
    String site, request;

    @BeforeAll
    void setUp() {
        catalog = ItCatalog.load(importer, 3);
        admin = ApiClient.admin(port, tokens);
        site = "BAD-" + catalog.prefix.substring(4, 12);
        assertThat(admin.put("/api/v1/sites/" + site, "{\"endpoints\": [\"gsiftp://se.example.org:2811/data\"]}").status()).isEqualTo(200);
        request = admin.post("/api/v1/requests", ApiClient.json(Map.of("files", catalog.files.subList(0, 2)))).json().get("id").stringValue();
    }

    static Case c(String name, String method, String path, String body, int status, String field) {
        return new Case(name, method, path, JSON, body, status, field);
    }

    static Case typed(String name, String method, String path, String contentType, String body, int status, String field) {
        return new Case(name, method, path, contentType, body, status, field);
    }

    static Stream<Case> cases() {
        String unknown = UUID.randomUUID().toString();
        return Stream.of(
                // ---- replication: ids in the path, paging parameters. Spring converted these to numbers: a text was
                // answered by Spring Boot's handler, a problem without the errors array naming the parameter. An id
                // that does not parse is now not found, as an unknown one (UnparsableIdsIT has every endpoint)
                c("rule id not a number", "GET", "/api/v1/replication/rules/abc", null, 404, "rule"),
                c("rule id beyond a long", "GET", "/api/v1/replication/rules/99999999999999999999", null, 404, "rule"),
                c("unknown rule", "GET", "/api/v1/replication/rules/999999999", null, 404, "rule"),
                c("delete a rule by a text id", "DELETE", "/api/v1/replication/rules/abc", null, 404, "rule"),
                c("schedule of a text rule id", "GET", "/api/v1/replication/schedules/abc", null, 404, "rule"),
                c("pause a text rule id", "POST", "/api/v1/replication/schedules/1e3/pause", null, 404, "rule"),
                c("replicas with a text limit", "GET", "/api/v1/datasets/DS/replicas?limit=abc", null, 400, "limit"),
                c("replicas with a text offset", "GET", "/api/v1/datasets/DS/replicas?offset=ten", null, 400, "offset"),
                c("replicas with an offset beyond an int", "GET", "/api/v1/datasets/DS/replicas?offset=99999999999", null, 400, "offset"),
                c("replicas with a huge limit", "GET", "/api/v1/datasets/DS/replicas?limit=1000000000", null, 400, "limit"),
                // ---- replication: bodies
                c("rule: malformed JSON", "POST", "/api/v1/replication/rules", "{\"dataset\": ", 400, "body"),
                c("rule: a list", "POST", "/api/v1/replication/rules", "[{\"dataset\": \"DS\"}]", 400, "body"),
                c("rule: dataset a number", "POST", "/api/v1/replication/rules", "{\"dataset\": 5, \"sites\": \"SITE\"}", 400, "dataset"),
                c("rule: dataset missing", "POST", "/api/v1/replication/rules", "{\"sites\": \"SITE\"}", 400, "dataset"),
                c("rule: dataset empty", "POST", "/api/v1/replication/rules", "{\"dataset\": \"\", \"sites\": \"SITE\"}", 400, "dataset"),
                c("rule: dataset of 100 kB", "POST", "/api/v1/replication/rules", "{\"dataset\": \"" + LONG + "\", \"sites\": \"SITE\"}", 404, "dataset"),
                c("rule: copies a string", "POST", "/api/v1/replication/rules", "{\"dataset\": \"DS\", \"sites\": \"SITE\", \"copies\": \"1\"}", 400, "copies"),
                c("rule: copies Long.MAX_VALUE", "POST", "/api/v1/replication/rules", "{\"dataset\": \"DS\", \"sites\": \"SITE\", \"copies\": 9223372036854775807}", 400, "copies"),
                c("rule: copies 1e400", "POST", "/api/v1/replication/rules", "{\"dataset\": \"DS\", \"sites\": \"SITE\", \"copies\": 1e400}", 400, "copies"),
                c("rule: sites null", "POST", "/api/v1/replication/rules", "{\"dataset\": \"DS\", \"sites\": null}", 400, "sites"),
                c("rule: sites of 100 kB", "POST", "/api/v1/replication/rules", "{\"dataset\": \"DS\", \"sites\": \"" + LONG + "\"}", 400, "sites"),
                c("rule: sites with a NUL", "POST", "/api/v1/replication/rules", "{\"dataset\": \"DS\", \"sites\": \"SITE\\u0000\"}", 400, "sites"),
                c("rule: negative lifetime", "POST", "/api/v1/replication/rules", "{\"dataset\": \"DS\", \"sites\": \"SITE\", \"lifetime\": \"-P1D\"}", 400, "lifetime"),
                // a valid cron longer than Quartz's VARCHAR(120): a 500 from the trigger's insert
                c("rule: schedule too long to keep", "POST", "/api/v1/replication/rules", "{\"dataset\": \"DS\", \"sites\": \"SITE\", \"schedule\": \"0 "
                        + String.join(",", Stream.iterate(0, i -> i + 1).limit(60).map(String::valueOf).toList()) + " 2 * * ?\"}", 400, "schedule"),
                c("site: a list", "PUT", "/api/v1/sites/SITE", "[]", 400, "body"),
                c("site: endpoints a string", "PUT", "/api/v1/sites/SITE", "{\"endpoints\": \"gsiftp://h/x\"}", 400, "endpoints"),
                c("site: endpoint a number", "PUT", "/api/v1/sites/SITE", "{\"endpoints\": [5]}", 400, "endpoints"),
                c("site: endpoint of 100 kB", "PUT", "/api/v1/sites/SITE", "{\"endpoints\": [\"gsiftp://h/" + LONG + "\"]}", 400, "endpoints"),
                c("site: attributes a list", "PUT", "/api/v1/sites/SITE", "{\"attributes\": [\"tier\"]}", 400, "attributes"),
                c("site: attribute of 100 kB", "PUT", "/api/v1/sites/SITE", "{\"attributes\": {\"tier\": \"" + LONG + "\"}}", 400, "attributes"),
                c("site: attribute 1e400", "PUT", "/api/v1/sites/SITE", "{\"attributes\": {\"tier\": 1e400}}", 400, "attributes"),
                c("link: sideA a number", "PUT", "/api/v1/replication/links/L-SITE", "{\"sideA\": 5, \"sideB\": \"SITE\"}", 400, "sideA"),
                c("link: sideB missing", "PUT", "/api/v1/replication/links/L-SITE", "{\"sideA\": \"SITE\"}", 400, "sideB"),
                c("link: sideA empty", "PUT", "/api/v1/replication/links/L-SITE", "{\"sideA\": \"\", \"sideB\": \"SITE\"}", 400, "sideA"),
                c("link: sideA of 100 kB", "PUT", "/api/v1/replication/links/L-SITE", "{\"sideA\": \"" + LONG + "\", \"sideB\": \"SITE\"}", 400, "sideA"),
                c("declare: files empty", "POST", "/api/v1/sites/SITE/replicas/declare", "{\"files\": []}", 400, "files"),
                c("declare: reason a number", "POST", "/api/v1/sites/SITE/replicas/declare", "{\"files\": [\"K0\"], \"reason\": 5}", 400, "reason"),
                c("declare: reason of 100 kB", "POST", "/api/v1/sites/SITE/replicas/declare", "{\"files\": [\"K0\"], \"reason\": \"" + LONG + "\"}", 400, "reason"),
                c("register: an unknown file after a known one", "POST", "/api/v1/sites/SITE/replicas/register", "{\"files\": [\"K0\", \"/it/no/such\"]}", 400, "files"),
                c("register: files an object", "POST", "/api/v1/sites/SITE/replicas/register", "{\"files\": {\"K0\": 1}}", 400, "files"),
                // ---- archive
                c("archive: a list", "POST", "/api/v1/archive/files", "[]", 400, "body"),
                c("archive: files an object", "POST", "/api/v1/archive/files", "{\"files\": {}}", 400, "files"),
                c("archive: size a string", "POST", "/api/v1/archive/files", "{\"files\": [{\"path\": \"a\", \"size\": \"1\", \"dataset\": \"DS\"}]}", 400, "size"),
                c("archive: size 1e400", "POST", "/api/v1/archive/files", "{\"files\": [{\"path\": \"a\", \"size\": 1e400, \"dataset\": \"DS\"}]}", 400, "size"),
                c("archive: path of 100 kB", "POST", "/api/v1/archive/files", "{\"files\": [{\"path\": \"" + LONG + "\", \"size\": 1, \"dataset\": \"DS\"}]}", 400, "path"),
                c("archive file id beyond a long", "GET", "/api/v1/archive/files/99999999999999999999", null, 404, "id"),
                c("archive file: unknown id", "GET", "/api/v1/archive/files/-1", null, 404, "id"),
                c("retry an archive file by a text id", "POST", "/api/v1/archive/files/abc/retry", null, 404, "id"),
                c("delete an unknown archive file", "DELETE", "/api/v1/archive/files/999999999999", null, 404, "id"),
                c("unverified copies with a text limit", "GET", "/api/v1/archive/unverified-copies?limit=abc", null, 400, "limit"),
                c("archive file by a name of 100 kB", "GET", "/api/v1/archive/files?name=/" + "x".repeat(6000), null, 404, "id"),
                // ---- WLCG Tape REST API
                c("stage: a list", "POST", "/api/v1/stage", "[{\"path\": \"K0\"}]", 400, "body"),
                c("stage: files an object", "POST", "/api/v1/stage", "{\"files\": {\"path\": \"K0\"}}", 400, "files"),
                c("stage: path a number", "POST", "/api/v1/stage", "{\"files\": [{\"path\": \"K0\"}, {\"path\": 5}]}", 400, "path"),
                c("stage: diskLifetime negative", "POST", "/api/v1/stage", "{\"files\": [{\"path\": \"K0\", \"diskLifetime\": \"-P1D\"}]}", 400, "diskLifetime"),
                c("stage: diskLifetime a number", "POST", "/api/v1/stage", "{\"files\": [{\"path\": \"K0\", \"diskLifetime\": 86400}]}", 400, "diskLifetime"),
                // the native rule named diskLifetimeSeconds, a field a WLCG client never sends
                c("stage: diskLifetime beyond a long", "POST", "/api/v1/stage", "{\"files\": [{\"path\": \"K0\", \"diskLifetime\": \"PT9223372036854775807S\"}]}", 400, "diskLifetime"),
                c("stage: a path with a NUL", "POST", "/api/v1/stage", "{\"files\": [{\"path\": \"K0\"}, {\"path\": \"/it/a\\u0000b\"}]}", 400, null),
                c("stage: a path of 100 kB", "POST", "/api/v1/stage", "{\"files\": [{\"path\": \"K0\"}, {\"path\": \"/" + LONG + "\"}]}", 400, null),
                c("stage poll: unknown id", "GET", "/api/v1/stage/" + unknown, null, 404, "id"),
                c("stage cancel: paths a string", "POST", "/api/v1/stage/REQ/cancel", "{\"paths\": \"K0\"}", 400, "paths"),
                c("stage cancel: a path with a NUL", "POST", "/api/v1/stage/REQ/cancel", "{\"paths\": [\"K0\", \"/it/a\\u0000b\"]}", 400, null),
                c("stage cancel: a path not in the request", "POST", "/api/v1/stage/REQ/cancel", "{\"paths\": [\"K0\", \"K2\"]}", 400, null),
                c("release: a path with a NUL", "POST", "/api/v1/release/REQ", "{\"paths\": [\"K0\", \"/it/a\\u0000b\"]}", 400, null),
                c("release without an id: a path with a NUL", "POST", "/api/v1/release/gfal2-placeholder-id", "{\"paths\": [\"/it/a\\u0000b\"]}", 400, null),
                c("release without an id: paths missing", "POST", "/api/v1/release/gfal2-placeholder-id", "{}", 400, "paths"),
                c("archiveinfo: a path a number", "POST", "/api/v1/archiveinfo", "{\"paths\": [5]}", 400, null),
                c("archiveinfo: a list", "POST", "/api/v1/archiveinfo", "[\"K0\"]", 400, "body"),
                // ---- accounts and tokens
                c("account: role unknown", "PUT", "/api/v1/admin/accounts/bad-input-it", "{\"role\": \"god\", \"experiments\": [\"atlas\"]}", 400, "role"),
                c("account: experiment a number", "PUT", "/api/v1/admin/accounts/bad-input-it", "{\"role\": \"viewer\", \"experiments\": [5]}", 400, "experiments"),
                c("account: experiment with a NUL", "PUT", "/api/v1/admin/accounts/bad-input-it", "{\"role\": \"viewer\", \"experiments\": [\"at\\u0000las\"]}", 400, "experiments"),
                c("account: experiment of 100 kB", "PUT", "/api/v1/admin/accounts/bad-input-it", "{\"role\": \"viewer\", \"experiments\": [\"" + LONG + "\"]}", 400, "experiments"),
                c("account: experiments a string", "PUT", "/api/v1/admin/accounts/bad-input-it", "{\"role\": \"viewer\", \"experiments\": \"atlas\"}", 400, "experiments"),
                c("delete an unknown account", "DELETE", "/api/v1/admin/accounts/no-such-account-it", null, 404, "id"),
                c("token: expiresInSeconds 1e400", "POST", "/api/v1/admin/tokens", "{\"account\": \"admin\", \"expiresInSeconds\": 1e400}", 400, "expiresInSeconds"),
                // longValue() threw: a 500
                c("token: expiresInSeconds beyond a long", "POST", "/api/v1/admin/tokens", "{\"account\": \"admin\", \"expiresInSeconds\": 99999999999999999999}", 400, "expiresInSeconds"),
                c("token: expiresInSeconds a string", "POST", "/api/v1/admin/tokens", "{\"account\": \"admin\", \"expiresInSeconds\": \"60\"}", 400, "expiresInSeconds"),
                c("token: label of 100 kB", "POST", "/api/v1/admin/tokens", "{\"account\": \"admin\", \"label\": \"" + LONG + "\"}", 400, "label"),
                c("token: account a list", "POST", "/api/v1/admin/tokens", "{\"account\": [\"admin\"]}", 400, "account"),
                c("revoke a token by a bad id", "DELETE", "/api/v1/admin/tokens/abc", null, 404, "id"),
                c("cache directory: text id", "POST", "/api/v1/admin/cache/directories/abc/in-service", null, 404, "id"),
                c("cache directory: unknown id", "POST", "/api/v1/admin/cache/directories/2147483647/in-service", null, 404, "id"),
                // ---- stage requests: what MalformedRequestsIT has not
                c("priority 1e400", "PUT", "/api/v1/requests/REQ/priority", "{\"priority\": 1e400}", 400, "priority"),
                c("priority missing", "PUT", "/api/v1/requests/REQ/priority", "{}", 400, "priority"),
                c("priority a list", "PUT", "/api/v1/requests/REQ/priority", "[1]", 400, "body"),
                // ---- content types: every body is read as JSON whatever it is labelled. One labelled multipart was
                // taken apart as parts first and reached the API empty: "body: empty", though it was not
                typed("submit labelled a form", "POST", "/api/v1/requests", "application/x-www-form-urlencoded", "{\"files\": 5}", 400, "files"),
                typed("submit labelled multipart", "POST", "/api/v1/requests", "multipart/form-data; boundary=x", "{\"files\": 5}", 400, "files"),
                typed("submit as XML", "POST", "/api/v1/requests", "application/xml", "<files/>", 400, "body"),
                typed("stage labelled multipart", "POST", "/api/v1/stage", "multipart/form-data; boundary=x", "{\"files\": 5}", 400, "files"),
                typed("rule labelled a form", "POST", "/api/v1/replication/rules", "application/x-www-form-urlencoded", "{\"dataset\": 5}", 400, "dataset"));
    }

    /** An integer attribute is kept as its digits (a site's attributes are text), beyond a long too: that was a 500. */
    @Test
    void aSiteAttributeBeyondALongIsKeptAsItsDigits() {
        Answer a = admin.put("/api/v1/sites/" + site, "{\"attributes\": {\"tier\": 99999999999999999999}, \"endpoints\": [\"gsiftp://se.example.org:2811/data\"]}");
        assertThat(a.status()).as(a.body()).isEqualTo(200);
        assertThat(a.json().get("attributes").get("tier").asString()).isEqualTo("99999999999999999999");
    }

    private String fill(String s) {
        if (s == null) return null;
        for (int i = 0; i < catalog.files.size(); i++) s = s.replace("K" + i, catalog.files.get(i));
        return s.replace("REQ", request).replace("SITE", site).replace("DS", catalog.dataset());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void refusedWithAProblemNamingTheFieldAndNothingStored(Case c) {
        List<Long> before = snapshot();
        var b = HttpRequest.newBuilder(URI.create("http://localhost:" + port + fill(c.path())))
                .header("Authorization", "Bearer " + admin.token());
        String body = fill(c.body());
        if (body != null) b.header("Content-Type", c.contentType());
        b.method(c.method(), body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        Answer a = ApiClient.send(b.build());

        String shown = a.body().length() > 2000 ? a.body().substring(0, 2000) : a.body();
        assertThat(a.status()).as(shown).isEqualTo(c.status());
        assertThat(a.contentType()).as(shown).startsWith("application/problem+json");
        assertThat(a.body()).as("no exception or class name").doesNotContainPattern("Exception|java\\.|tools\\.jackson|org\\.springframework");
        JsonNode errors = a.json().get("errors");
        assertThat(errors != null && errors.isArray() && !errors.isEmpty()).as(shown).isTrue();
        JsonNode first = errors.get(0);
        if (c.field() != null) assertThat(first.path("field").asString()).as(shown).isEqualTo(c.field());
        else assertThat(first.has("index")).as("names the entry: " + shown).isTrue();
        assertThat(first.get("reason").asString()).isNotBlank();
        assertThat(snapshot()).as("nothing stored").isEqualTo(before);
    }

    /** Every row a refused call might have added, changed or removed. */
    private List<Long> snapshot() {
        return jdbc.queryForList("""
                SELECT (SELECT count(*) FROM stage_request) UNION ALL
                SELECT (SELECT count(*) FROM stage_request_file WHERE state = 'cancelled') UNION ALL
                SELECT (SELECT count(*) FROM stage_request_file WHERE released) UNION ALL
                SELECT (SELECT count(*) FROM site) UNION ALL
                SELECT (SELECT count(*) FROM site_endpoint) UNION ALL
                SELECT (SELECT count(*) FROM replication_link) UNION ALL
                SELECT (SELECT count(*) FROM replication_rule) UNION ALL
                SELECT (SELECT count(*) FROM replica) UNION ALL
                SELECT (SELECT count(*) FROM qrtz_triggers) UNION ALL
                SELECT (SELECT count(*) FROM file) UNION ALL
                SELECT (SELECT count(*) FROM dataset) UNION ALL
                SELECT (SELECT count(*) FROM archive_file) UNION ALL
                SELECT (SELECT count(*) FROM api_account) UNION ALL
                SELECT (SELECT count(*) FROM api_token)""", Long.class);
    }
}
