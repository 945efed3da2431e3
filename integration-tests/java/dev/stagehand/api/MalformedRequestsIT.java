package dev.stagehand.api;

import static dev.stagehand.api.Problems.assertProblem;
import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.ItCatalog;
import dev.stagehand.api.ApiClient.Answer;
import dev.stagehand.catalog.CatalogImporter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.IntStream;
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
 * A table of malformed inputs: each gets the right status, an RFC 9457 problem body whose {@code errors}
 * name the offending entry (by field, or by index and path), and leaves every request table as it was.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class MalformedRequestsIT {

    /** K0..K2 stand for known catalog files, REQ for an open request, DONE for a cancelled one. */
    record Case(String name, String method, String path, String body, int status,
                String field, Integer index, String badPath) {
        @Override
        public String toString() {
            return name;
        }
    }

    @LocalServerPort
    int port;
    @Autowired
    CatalogImporter importer;
    @Autowired
    JdbcTemplate jdbc;

    @Autowired
    dev.stagehand.api.security.ApiTokens tokens;

    ItCatalog catalog;
    ApiClient admin;
    String openRequest, cancelledRequest;

    @BeforeAll
    void setUp() {
        catalog = ItCatalog.load(importer, 5);
        admin = ApiClient.admin(port, tokens);
        ApiClient api = admin;
        openRequest = api.post("/api/v1/requests", ApiClient.json(Map.of("files", catalog.files.subList(0, 3)))).json().get("id").stringValue();
        cancelledRequest = api.post("/api/v1/requests", ApiClient.json(Map.of("files", catalog.files.subList(0, 2)))).json().get("id").stringValue();
        assertThat(api.post("/api/v1/requests/" + cancelledRequest + "/cancel", null).status()).isEqualTo(200);
    }

    static Case field(String name, String body, int status, String field) {
        return new Case(name, "POST", "/api/v1/requests", body, status, field, null, null);
    }

    static Case entry(String name, String body, int index, String badPath) {
        return new Case(name, "POST", "/api/v1/requests", body, 400, null, index, badPath);
    }

    static Stream<Case> cases() {
        String tooMany = "{\"files\":[" + String.join(",", IntStream.range(0, 100_001).mapToObj(i -> "\"/x/" + i + "\"").toList()) + "]}";
        String longPath = "/a/" + "b".repeat(5000);
        return Stream.of(
                field("empty body", "", 400, "body"),
                field("blank body", "  \n ", 400, "body"),
                field("malformed JSON", "{\"files\": [\"K0\"", 400, "body"),
                field("trailing garbage", "{\"files\": [\"K0\"]} x", 400, "body"),
                field("JSON list instead of object", "[\"K0\"]", 400, "body"),
                field("JSON string instead of object", "\"K0\"", 400, "body"),
                field("duplicate key", "{\"files\": [\"K0\"], \"files\": [\"K1\"]}", 400, "body"),
                field("files missing", "{}", 400, "files"),
                field("files null", "{\"files\": null}", 400, "files"),
                field("files not a list", "{\"files\": \"K0\"}", 400, "files"),
                field("files empty", "{\"files\": []}", 400, "files"),
                field("more than 100,000 files", tooMany, 413, "files"),
                entry("entry is a number", "{\"files\": [\"K0\", 42]}", 1, null),
                entry("entry is an object", "{\"files\": [\"K0\", {\"path\": \"K1\"}]}", 1, null),
                entry("entry is null", "{\"files\": [\"K0\", null]}", 1, null),
                entry("unknown file", "{\"files\": [\"K0\", \"/it/no/such/file\"]}", 1, "/it/no/such/file"),
                entry("duplicate file", "{\"files\": [\"K0\", \"K1\", \"K0\"]}", 2, "K0"),
                entry("relative path", "{\"files\": [\"relative/file\", \"K1\"]}", 0, "relative/file"),
                entry("dot-dot segment", "{\"files\": [\"K0\", \"/it/../etc/passwd\"]}", 1, "/it/../etc/passwd"),
                entry("trailing dot-dot", "{\"files\": [\"K0\", \"/it/x/..\"]}", 1, "/it/x/.."),
                entry("dot segment", "{\"files\": [\"/it/./x\"]}", 0, "/it/./x"),
                entry("NUL character", "{\"files\": [\"K0\", \"/it/a\\u0000b\"]}", 1, "/it/a\u0000b"),
                entry("bell character", "{\"files\": [\"/it/a\\u0007b\"]}", 0, "/it/a\u0007b"),
                entry("newline", "{\"files\": [\"K0\", \"K1\", \"/it/a\\nb\"]}", 2, "/it/a\nb"),
                entry("DEL character", "{\"files\": [\"/it/a\\u007fb\"]}", 0, "/it/a\u007fb"),
                entry("C1 control character", "{\"files\": [\"/it/a\\u0085b\"]}", 0, "/it/a\u0085b"),
                entry("empty path", "{\"files\": [\"K0\", \"\"]}", 1, ""),
                entry("directory path", "{\"files\": [\"/it/dir/\"]}", 0, "/it/dir/"),
                entry("path too long", "{\"files\": [\"" + longPath + "\"]}", 0, longPath),
                field("unknown field", "{\"files\": [\"K0\"], \"colour\": \"red\"}", 400, "colour"),
                field("priority is a string", "{\"files\": [\"K0\"], \"priority\": \"high\"}", 400, "priority"),
                field("priority is fractional", "{\"files\": [\"K0\"], \"priority\": 1.5}", 400, "priority"),
                field("priority out of range", "{\"files\": [\"K0\"], \"priority\": 5000}", 400, "priority"),
                field("priority beyond int", "{\"files\": [\"K0\"], \"priority\": 99999999999}", 400, "priority"),
                field("negative lifetime", "{\"files\": [\"K0\"], \"diskLifetimeSeconds\": -1}", 400, "diskLifetimeSeconds"),
                field("zero lifetime", "{\"files\": [\"K0\"], \"diskLifetimeSeconds\": 0}", 400, "diskLifetimeSeconds"),
                field("absurd lifetime", "{\"files\": [\"K0\"], \"diskLifetimeSeconds\": 1000000000000}", 400, "diskLifetimeSeconds"),
                field("lifetime is a string", "{\"files\": [\"K0\"], \"diskLifetimeSeconds\": \"1d\"}", 400, "diskLifetimeSeconds"),
                field("clientRequestId is a number", "{\"files\": [\"K0\"], \"clientRequestId\": 7}", 400, "clientRequestId"),
                field("clientRequestId empty", "{\"files\": [\"K0\"], \"clientRequestId\": \"\"}", 400, "clientRequestId"),
                field("destination not a URL", "{\"files\": [\"K0\"], \"destination\": \"no url\"}", 400, "destination"),
                field("destination not GridFTP", "{\"files\": [\"K0\"], \"destination\": \"https://h/x\"}", 400, "destination"),
                field("destination is a list", "{\"files\": [\"K0\"], \"destination\": []}", 400, "destination"),
                // decoded, %0D%0A ended the movers' STOR line and the rest went to the server as a command
                field("destination with an encoded line break", "{\"files\": [\"K0\"], \"destination\": \"gsiftp://h/x%0D%0ADELE%20/y/\"}", 400, "destination"),
                field("destination port out of range", "{\"files\": [\"K0\"], \"destination\": \"gsiftp://h:70000/x\"}", 400, "destination"),
                // java.net.URI parses these with no host and no port: they were accepted, and every file failed at the movers
                field("destination without a host", "{\"files\": [\"K0\"], \"destination\": \"gsiftp:///x\"}", 400, "destination"),
                field("destination port not a number", "{\"files\": [\"K0\"], \"destination\": \"gsiftp://h:2811x/x\"}", 400, "destination"),
                field("destination host list with port 0", "{\"files\": [\"K0\"], \"destination\": \"gsiftp://a:2811,b:0/x\"}", 400, "destination"),
                field("destination host list with an empty host", "{\"files\": [\"K0\"], \"destination\": \"gsiftp://a:2811,:2811/x\"}", 400, "destination"),
                field("experiment with spaces", "{\"files\": [\"K0\"], \"experiment\": \"at las\"}", 400, "experiment"),
                new Case("GET with a bad UUID", "GET", "/api/v1/requests/not-a-uuid", null, 404, "id", null, null),
                new Case("GET an unknown request", "GET", "/api/v1/requests/" + UUID.randomUUID(), null, 404, "id", null, null),
                new Case("GET negative fileLimit", "GET", "/api/v1/requests/REQ?fileLimit=-1", null, 400, "fileLimit", null, null),
                new Case("GET huge fileLimit", "GET", "/api/v1/requests/REQ?fileLimit=1000000", null, 400, "fileLimit", null, null),
                new Case("list with an unknown state", "GET", "/api/v1/requests?state=sleeping", null, 400, "state", null, null),
                new Case("list with a bad since", "GET", "/api/v1/requests?since=yesterday", null, 400, "since", null, null),
                new Case("list with limit 0", "GET", "/api/v1/requests?limit=0", null, 400, "limit", null, null),
                new Case("list with a text offset", "GET", "/api/v1/requests?offset=ten", null, 400, "offset", null, null),
                new Case("list with a NUL in owner", "GET", "/api/v1/requests?owner=a%00b", null, 400, "owner", null, null),
                new Case("list with a NUL in experiment", "GET", "/api/v1/requests?experiment=%00", null, 400, "experiment", null, null),
                // PostgreSQL refuses a NUL in a query parameter: these were 500s
                new Case("tokens with a NUL in account", "GET", "/api/v1/admin/tokens?account=a%00b", null, 400, "account", null, null),
                new Case("token for an account with a NUL", "POST", "/api/v1/admin/tokens", "{\"account\": \"a\\u0000b\"}", 400, "account", null, null),
                new Case("token with a NUL in its label", "POST", "/api/v1/admin/tokens", "{\"account\": \"admin\", \"label\": \"x\\u0000\"}", 400, "label", null, null),
                new Case("cancel an unknown request", "POST", "/api/v1/requests/" + UUID.randomUUID() + "/cancel", null, 404, "id", null, null),
                new Case("cancel with a bad UUID", "POST", "/api/v1/requests/123/cancel", null, 404, "id", null, null),
                new Case("cancel a finished request", "POST", "/api/v1/requests/DONE/cancel", null, 409, "state", null, null),
                new Case("cancel a file not in the request", "POST", "/api/v1/requests/REQ/cancel", "{\"files\": [\"K0\", \"K4\"]}", 400, null, 1, "K4"),
                new Case("cancel with a dot-dot path", "POST", "/api/v1/requests/REQ/cancel", "{\"files\": [\"/it/../K0\"]}", 400, null, 0, "/it/../K0"),
                new Case("cancel with files not a list", "POST", "/api/v1/requests/REQ/cancel", "{\"files\": 3}", 400, "files", null, null),
                new Case("cancel with an empty list", "POST", "/api/v1/requests/REQ/cancel", "{\"files\": []}", 400, "files", null, null),
                new Case("release with an unknown field", "POST", "/api/v1/requests/REQ/release", "{\"file\": [\"K0\"]}", 400, "file", null, null),
                new Case("release a duplicate file", "POST", "/api/v1/requests/REQ/release", "{\"files\": [\"K0\", \"K0\"]}", 400, null, 1, "K0"),
                new Case("release an unknown request", "POST", "/api/v1/requests/" + UUID.randomUUID() + "/release", null, 404, "id", null, null),
                new Case("release with malformed JSON", "POST", "/api/v1/requests/REQ/release", "{files: [K0]}", 400, "body", null, null));
    }

    private String fill(String s) {
        if (s == null) return null;
        for (int i = 0; i < catalog.files.size(); i++) s = s.replace("K" + i, catalog.files.get(i));
        return s.replace("REQ", openRequest).replace("DONE", cancelledRequest);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void refusedWithAProblemNamingTheEntryAndNothingStored(Case c) {
        List<Long> before = snapshot();
        ApiClient api = admin;
        Answer a = c.method().equals("GET") ? api.get(fill(c.path())) : api.post(fill(c.path()), fill(c.body()));

        assertProblem(a, c.status());
        JsonNode errors = a.json().get("errors");
        assertThat(errors.isArray() && !errors.isEmpty()).as(a.body()).isTrue();
        List<JsonNode> named = new ArrayList<>();
        errors.forEach(e -> {
            boolean match = c.index() != null
                    ? e.has("index") && e.get("index").intValue() == c.index()
                    : e.has("field") && e.get("field").stringValue().equals(c.field());
            if (match) named.add(e);
        });
        assertThat(named).as("errors naming the entry in " + a.body()).isNotEmpty();
        assertThat(named.getFirst().get("reason").stringValue()).isNotBlank();
        if (c.badPath() != null) assertThat(named.getFirst().get("path").stringValue()).isEqualTo(fill(c.badPath()));

        assertThat(snapshot()).as("request tables unchanged").isEqualTo(before);
    }

    @Test
    void aUrlTomcatCannotReadIsAProblemDocumentToo() throws java.io.IOException {
        // Tomcat refuses these before any of the application runs: it was Tomcat's HTML page
        for (String path : List.of("/api/v1/requests/a%00b", "/api/v1/stage/%00", "/api/v1/requests/a%2Fb",
                "/api/v1/requests/a%5Cb", "/api/v1/requests/a%zzb", "/api/v1/requests/a%C3%28b")) {
            assertUnreadable(path, "url", "the URL cannot be read");
        }
        // Spring Security's firewall refuses these: it was Spring Boot's error body
        for (String path : List.of("/api/v1/requests/a;x=%00", "/api/v1/requests/a%0Ab", "/api/v1//requests")) {
            assertUnreadable(path, "url", "the URL cannot be read");
        }
        // a query string that cannot be decoded failed in the controller: an error logged, Spring Boot's error body
        assertUnreadable("/api/v1/requests?owner=%zz", "query", "the query string cannot be read");
        assertUnreadable("/api/v1/admin/tokens?account=a%zz", "query", "the query string cannot be read");
    }

    /** Sent as it is (java.net.URI refuses a bad %-escape): a problem document naming the URL or its query. */
    private void assertUnreadable(String path, String field, String detail) throws java.io.IOException {
        try (var socket = new java.net.Socket("localhost", port)) {
            // HTTP/1.0: the answer is not sent in chunks
            socket.getOutputStream().write(("GET " + path + " HTTP/1.0\r\nHost: localhost\r\nAuthorization: Bearer "
                    + admin.token() + "\r\n\r\n").getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            String raw = new String(socket.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
            String head = raw.substring(0, raw.indexOf("\r\n\r\n")).toLowerCase(java.util.Locale.ROOT);
            assertThat(head).as(path).matches("(?s)http/1\\.[01] 400.*").contains("content-type: application/problem+json");
            JsonNode problem = ApiClient.parse(raw.substring(raw.indexOf("\r\n\r\n") + 4));
            assertThat(problem.get("status").intValue()).isEqualTo(400);
            assertThat(problem.get("detail").stringValue()).as(path).contains(detail);
            assertThat(problem.get("errors").get(0).get("field").stringValue()).as(path).isEqualTo(field);
        }
    }

    @Test
    void theTableHoldsAtLeastThirtyCases() {
        assertThat(cases().count()).isGreaterThanOrEqualTo(30);
    }

    @Test
    void everyOffendingEntryIsNamed() {
        List<Long> before = snapshot();
        String body = fill("{\"files\": [\"K0\", \"/it/unknown-1\", \"rel\", \"K0\", \"/it/unknown-2\", 5], \"priority\": -9999}");
        Answer a = admin.post("/api/v1/requests", body);
        assertThat(a.status()).isEqualTo(400);
        List<String> named = new ArrayList<>();
        a.json().get("errors").forEach(e -> named.add(e.has("index") ? "#" + e.get("index").intValue() : e.get("field").stringValue()));
        // a wrong type, a bad priority, a relative path and a duplicate, all in one answer (the catalog is
        // consulted only once the request is well formed)
        assertThat(named).containsExactlyInAnyOrder("#2", "#3", "#5", "priority");
        String names = fill("{\"files\": [\"K0\", \"/it/unknown-1\", \"rel\", \"K0\", \"/it/unknown-2\", \"/it/a/../b\"]}");
        Answer b = admin.post("/api/v1/requests", names);
        assertThat(b.status()).isEqualTo(400);
        List<Integer> indices = new ArrayList<>();
        b.json().get("errors").forEach(e -> indices.add(e.get("index").intValue()));
        // syntax problems and duplicates first; unknown names are looked up only when the names are well formed
        assertThat(indices).containsExactly(2, 3, 5);
        Answer c = admin.post("/api/v1/requests", fill("{\"files\": [\"K0\", \"/it/unknown-1\", \"K1\", \"/it/unknown-2\"]}"));
        List<String> unknown = new ArrayList<>();
        c.json().get("errors").forEach(e -> unknown.add(e.get("index").intValue() + "=" + e.get("path").stringValue()));
        assertThat(unknown).containsExactly("1=/it/unknown-1", "3=/it/unknown-2");
        assertThat(snapshot()).isEqualTo(before);
    }

    /**
     * A name the movers cannot send to an ftp:// destination (non-ASCII: a GridFTP server's clear-text control
     * channel drops those bytes) is refused at once, named by its entry; the same name to a gsiftp:// one is only
     * looked up. Before, the request was taken, its files read from tape, and each failed at its transfer.
     */
    @Test
    void aNonAsciiNameForAnFtpDestinationIsRefusedAtOnce() {
        List<Long> before = snapshot();
        Answer a = admin.post("/api/v1/requests", fill("{\"files\": [\"K0\", \"/it/déjà vu\"], \"destination\": \"ftp://h:2811/x\"}"));
        assertThat(a.status()).isEqualTo(400);
        List<String> named = new ArrayList<>();
        a.json().get("errors").forEach(e -> named.add(e.get("index").intValue() + "=" + e.get("path").stringValue() + ": "
                + e.get("reason").stringValue()));
        assertThat(named).singleElement().asString().startsWith("1=/it/déjà vu: ").contains("ftp://", "use gsiftp://");
        Answer dir = admin.post("/api/v1/requests", fill("{\"files\": [\"K0\"], \"destination\": \"ftp://h:2811/données\"}"));
        assertThat(dir.status()).isEqualTo(400);
        assertThat(dir.json().get("errors").get(0).get("field").stringValue()).isEqualTo("destination");
        Answer gsi = admin.post("/api/v1/requests", fill("{\"files\": [\"K0\", \"/it/déjà vu\"], \"destination\": \"gsiftp://h:2811/x\"}"));
        assertThat(gsi.json().get("errors").get(0).get("reason").stringValue()).doesNotContain("ftp://");
        assertThat(snapshot()).isEqualTo(before);
    }

    /** Every number a refused call might have changed. */
    private List<Long> snapshot() {
        return jdbc.queryForList("""
                SELECT (SELECT count(*) FROM stage_request) UNION ALL
                SELECT (SELECT count(*) FROM stage_request WHERE state = 'cancelled') UNION ALL
                SELECT (SELECT count(*) FROM stage_request_file) UNION ALL
                SELECT (SELECT count(*) FROM stage_request_file WHERE state = 'cancelled') UNION ALL
                SELECT (SELECT count(*) FROM stage_request_file WHERE released)""", Long.class);
    }
}
