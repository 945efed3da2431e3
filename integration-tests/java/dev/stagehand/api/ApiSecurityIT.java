package dev.stagehand.api;

import static dev.stagehand.api.Problems.assertProblem;
import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.ItCatalog;
import dev.stagehand.api.ApiClient.Answer;
import dev.stagehand.api.security.ApiAccounts;
import dev.stagehand.api.security.ApiRole;
import dev.stagehand.api.security.ApiTokens;
import dev.stagehand.catalog.CatalogImporter;
import java.net.URI;
import java.net.http.HttpRequest;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.jdbc.core.JdbcTemplate;
import tools.jackson.databind.JsonNode;

/**
 * API security over real HTTP with bearer tokens: 401 and 403 problem documents, each role's rights, token
 * creation, revocation and expiry, the owner taken from the credential, and per-experiment isolation on the
 * native and the WLCG API (ids of other experiments answer 404 like unknown ones; file names of other
 * experiments answer like unknown names).
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
class ApiSecurityIT {

    @LocalServerPort
    int port;
    @Autowired
    CatalogImporter importer;
    @Autowired
    JdbcTemplate jdbc;
    @Autowired
    ApiAccounts accounts;
    @Autowired
    ApiTokens tokens;

    final String tag = UUID.randomUUID().toString().substring(0, 8);
    final String expA = "expa-" + tag, expB = "expb-" + tag;
    ApiClient admin, anonymous;
    ItCatalog catalogA, catalogB;

    @BeforeEach
    void setUp() {
        admin = ApiClient.admin(port, tokens);
        anonymous = admin.withToken(null);
        catalogA = ItCatalog.load(importer, 6, expA);
        catalogB = ItCatalog.load(importer, 6, expB);
    }

    ApiClient user(String name, ApiRole role, String... experiments) {
        return ApiClient.as(port, accounts, tokens, name + "-" + tag, role, experiments);
    }

    static String files(List<String> f) {
        return ApiClient.json(Map.of("files", f));
    }

    @Test
    void withoutCredentialsEveryApiCallIs401WithABearerChallenge() {
        for (Answer a : List.of(anonymous.get("/api/v1/requests"), anonymous.get("/api/v1/whoami"),
                anonymous.post("/api/v1/requests", files(catalogA.files)), anonymous.post("/api/v1/stage", "{}"),
                anonymous.post("/api/v1/archiveinfo", ApiClient.json(Map.of("paths", catalogA.files))),
                anonymous.get("/api/v1/admin/tokens"))) {
            assertProblem(a, 401);
            assertThat(a.wwwAuthenticate()).startsWith("Bearer");
            assertThat(a.json().get("detail").stringValue()).contains("bearer token");
        }
        // discovery and the OpenAPI document stay open
        assertThat(anonymous.get("/.well-known/wlcg-tape-rest-api").status()).isEqualTo(200);
        assertThat(anonymous.get("/v3/api-docs").status()).isEqualTo(200);
        assertThat(count("stage_request WHERE experiment = '" + expA + "'")).isZero();
    }

    @Test
    void replicationRulesAndReplicasAreScopedToTheAccountsExperiments() {
        ApiClient operatorA = user("repl-a", ApiRole.OPERATOR, expA);
        String dsA = catalogA.dataset(), dsB = catalogB.dataset();
        // a site the rules can choose (no endpoint: nothing is sent); a rule no site matches is refused
        assertThat(admin.put("/api/v1/sites/NONE-" + tag, "{\"attributes\": {\"tier\": \"none-" + tag + "\"}}").status()).isEqualTo(200);
        // scheduled (nightly), so that the schedules' list is scoped too
        String rule = "{\"dataset\": \"%s\", \"sites\": \"tier=none-" + tag + "\", \"schedule\": \"0 0 2 * * ?\"}";
        // another experiment's dataset answers like an unknown one, and nothing is made
        assertProblem(operatorA.post("/api/v1/replication/rules", rule.formatted(dsB)), 404, "no dataset " + dsB);
        assertThat(count("replication_rule r JOIN dataset d ON d.id = r.dataset_id WHERE d.name = '" + dsB + "'")).isZero();
        // theirs first: a page cut before the experiments are filtered would hold theirs alone, and show nothing
        Answer theirs = admin.post("/api/v1/replication/rules", rule.formatted(dsB));
        assertThat(theirs.status()).isEqualTo(201);
        long theirsId = theirs.json().get("id").longValue();
        Answer mine = operatorA.post("/api/v1/replication/rules", rule.formatted(dsA));
        assertThat(mine.status()).as(mine.body()).isEqualTo(201);
        long mineId = mine.json().get("id").longValue();
        try {
            List<Long> listed = new ArrayList<>();
            operatorA.get("/api/v1/replication/rules").json().forEach(r -> listed.add(r.get("id").longValue()));
            assertThat(listed).contains(mineId).doesNotContain(theirsId);
            // paged, the experiments are filtered in the query, before the cut: the page after theirs is mine
            Answer page = operatorA.get("/api/v1/replication/rules?limit=1&after=" + (theirsId - 1));
            assertThat(page.json().findValues("id").stream().map(v -> v.longValue()).toList()).containsExactly(mineId);
            assertThat(page.link()).as("no rule of the account's experiments follows mine").isNull();
            assertThat(operatorA.get("/api/v1/replication/rules?dataset=" + dsB).json()).isEmpty();
            assertThat(admin.get("/api/v1/replication/rules?limit=1&after=" + (theirsId - 1)).json().findValues("id").stream()
                    .map(v -> v.longValue()).toList()).containsExactly(theirsId);
            List<Long> scheduled = new ArrayList<>();
            operatorA.get("/api/v1/replication/schedules").json().forEach(r -> scheduled.add(r.get("ruleId").longValue()));
            assertThat(scheduled).contains(mineId).doesNotContain(theirsId);
            assertThat(admin.get("/api/v1/replication/schedules").json().findValues("ruleId").stream().map(v -> v.longValue()).toList())
                    .contains(mineId, theirsId);
            assertThat(operatorA.get("/api/v1/replication/rules/" + mineId).status()).isEqualTo(200);
            assertProblem(operatorA.get("/api/v1/replication/rules/" + theirsId), 404);
            assertProblem(operatorA.delete("/api/v1/replication/rules/" + theirsId), 404);
            assertProblem(operatorA.get("/api/v1/datasets/" + dsB + "/completeness"), 404);
            assertProblem(operatorA.get("/api/v1/datasets/" + dsB + "/replicas"), 404);
            assertProblem(operatorA.get("/api/v1/datasets/" + dsB + "/replicas/history"), 404);
            assertThat(operatorA.get("/api/v1/datasets/" + dsA + "/replicas/history").status()).isEqualTo(200);
            assertProblem(operatorA.post("/api/v1/datasets/" + dsB + "/replicas/retry", ""), 404);
            assertThat(operatorA.get("/api/v1/datasets/" + dsA + "/completeness").status()).isEqualTo(200);
            assertThat(admin.get("/api/v1/replication/rules/" + theirsId).status()).isEqualTo(200);
        } finally {
            admin.delete("/api/v1/replication/rules/" + theirsId);
            admin.delete("/api/v1/replication/rules/" + mineId);
            admin.delete("/api/v1/sites/NONE-" + tag);
        }
    }

    @Test
    void wrongMalformedRevokedAndExpiredTokensAre401() throws Exception {
        Answer wrong = admin.withToken("sht_" + "A".repeat(43)).get("/api/v1/whoami");
        assertProblem(wrong, 401);
        assertThat(wrong.wwwAuthenticate()).contains("invalid_token");
        assertProblem(admin.withToken("not-even-our-format").get("/api/v1/whoami"), 401);
        Answer basic = ApiClient.send(HttpRequest.newBuilder(URI.create("http://localhost:" + port + "/api/v1/whoami"))
                .header("Authorization", "Basic YWRtaW46YWRtaW4=").GET().build());
        assertProblem(basic, 401);
        assertThat(basic.json().get("detail").stringValue()).contains("bearer");

        // an admin makes a token for an account; it works until revoked
        String name = "script-" + tag;
        assertThat(admin.put("/api/v1/admin/accounts/" + name, "{\"role\": \"viewer\", \"experiments\": [\"" + expA + "\"]}").status())
                .isEqualTo(200);
        Answer made = admin.post("/api/v1/admin/tokens", ApiClient.json(Map.of("account", name, "label", "nightly")));
        assertThat(made.status()).as(made.body()).isEqualTo(201);
        String secret = made.json().get("secret").stringValue();
        String id = made.json().get("token").get("id").stringValue();
        ApiClient script = admin.withToken(secret);
        Answer me = script.get("/api/v1/whoami");
        assertThat(me.status()).isEqualTo(200);
        assertThat(me.json().get("account").stringValue()).isEqualTo(name);
        assertThat(me.json().get("role").stringValue()).isEqualTo("viewer");
        assertThat(me.json().get("authenticatedBy").stringValue()).isEqualTo("token");
        // only a hash is stored, and listings never show the secret
        assertThat(jdbc.queryForObject("SELECT token_sha256 FROM api_token WHERE id = ?::uuid", String.class, id))
                .isEqualTo(jdbc.queryForObject("SELECT encode(sha256(convert_to(?, 'UTF8')), 'hex')", String.class, secret));
        Answer listed = admin.get("/api/v1/admin/tokens?account=" + name);
        assertThat(listed.body()).contains(id).doesNotContain(secret);

        assertThat(admin.delete("/api/v1/admin/tokens/" + id).status()).isEqualTo(204);
        Answer revoked = script.get("/api/v1/whoami");
        assertProblem(revoked, 401);
        assertThat(revoked.wwwAuthenticate()).contains("invalid_token");
        assertThat(admin.delete("/api/v1/admin/tokens/" + UUID.randomUUID()).status()).isEqualTo(404);

        Answer shortLived = admin.post("/api/v1/admin/tokens", ApiClient.json(Map.of("account", name, "expiresInSeconds", 1)));
        ApiClient brief = admin.withToken(shortLived.json().get("secret").stringValue());
        assertThat(brief.get("/api/v1/whoami").status()).isEqualTo(200);
        Thread.sleep(1500);
        assertProblem(brief.get("/api/v1/whoami"), 401);

        // deleting the account ends its tokens
        Answer another = admin.post("/api/v1/admin/tokens", ApiClient.json(Map.of("account", name)));
        assertThat(admin.delete("/api/v1/admin/accounts/" + name).status()).isEqualTo(204);
        assertProblem(admin.withToken(another.json().get("secret").stringValue()).get("/api/v1/whoami"), 401);
        // bad admin input is a problem naming the field
        Answer noAccount = admin.post("/api/v1/admin/tokens", ApiClient.json(Map.of("account", "nobody-" + tag)));
        assertProblem(noAccount, 400);
        assertThat(noAccount.json().get("errors").get(0).get("field").stringValue()).isEqualTo("account");
        Answer badRole = admin.put("/api/v1/admin/accounts/x-" + tag, "{\"role\": \"king\", \"experiments\": []}");
        assertProblem(badRole, 400);
        assertThat(badRole.json().get("errors").get(0).get("field").stringValue()).isEqualTo("role");
    }

    @Test
    void eachRoleGetsItsRightsAndNoMore() {
        ApiClient viewer = user("viewer", ApiRole.VIEWER, expA);
        ApiClient operator = user("operator", ApiRole.OPERATOR, expA);

        // viewer: reads, lists, archiveinfo; no submission, no cancel, no admin API
        assertThat(viewer.get("/api/v1/requests").status()).isEqualTo(200);
        assertThat(viewer.post("/api/v1/archiveinfo", ApiClient.json(Map.of("paths", catalogA.files))).status()).isEqualTo(200);
        Answer refused = viewer.post("/api/v1/requests", files(catalogA.files));
        assertProblem(refused, 403);
        assertThat(refused.json().get("detail").stringValue()).contains("operator").contains("viewer-" + tag);
        assertProblem(viewer.post("/api/v1/stage", ApiClient.json(Map.of("files", List.of(Map.of("path", catalogA.files.get(0)))))), 403);
        assertProblem(viewer.get("/api/v1/admin/tokens"), 403);
        assertThat(count("stage_request WHERE experiment = '" + expA + "'")).isZero();

        // operator: submits (owner = itself), reads, cancels; no admin API
        Answer created = operator.post("/api/v1/requests", files(catalogA.files.subList(0, 3)));
        assertThat(created.status()).as(created.body()).isEqualTo(201);
        String id = created.json().get("id").stringValue();
        assertThat(created.json().get("owner").stringValue()).isEqualTo("operator-" + tag);
        assertThat(created.json().get("experiment").stringValue()).isEqualTo(expA); // from its files
        assertThat(viewer.get("/api/v1/requests/" + id).status()).isEqualTo(200);
        assertProblem(viewer.post("/api/v1/requests/" + id + "/cancel", null), 403);
        assertThat(operator.post("/api/v1/requests/" + id + "/cancel", null).status()).isEqualTo(200);
        assertProblem(operator.get("/api/v1/admin/accounts"), 403);
        assertProblem(operator.post("/api/v1/admin/tokens", ApiClient.json(Map.of("account", "operator-" + tag))), 403);
        assertProblem(operator.put("/api/v1/admin/accounts/operator-" + tag, "{\"role\": \"admin\", \"experiments\": [\"*\"]}"), 403);
        // the role is decided on the path the call is routed by, not its raw spelling
        assertProblem(operator.put("/api/v1/%61dmin/accounts/operator-" + tag, "{\"role\": \"admin\", \"experiments\": [\"*\"]}"), 403);
        assertProblem(operator.put("/api/v1/%73ites/OPS-" + tag, "{\"endpoints\": [\"ftp://127.0.0.1:1/x\"]}"), 403);
        assertProblem(viewer.get("/api/v1/%61dmin/tokens"), 403);
        assertProblem(viewer.get("/%61pi/v1/%61dmin/accounts"), 403);
        // sites and bottleneck links describe the grid: an operator reads them but only an admin changes them
        assertProblem(operator.put("/api/v1/sites/OPS-" + tag, "{\"endpoints\": [\"ftp://127.0.0.1:1/x\"]}"), 403);
        assertProblem(operator.put("/api/v1/replication/links/l-" + tag, "{\"sideA\": \"a\", \"sideB\": \"b\"}"), 403);
        assertThat(operator.get("/api/v1/sites").status()).isEqualTo(200);
        assertThat(admin.put("/api/v1/sites/OPS-" + tag, "{\"endpoints\": [\"ftp://127.0.0.1:1/x\"]}").status()).isEqualTo(200);
        assertThat(admin.delete("/api/v1/sites/OPS-" + tag).status()).isLessThan(300);
        assertThat(accounts.find("operator-" + tag).orElseThrow().role()).isEqualTo(ApiRole.OPERATOR);

        // admin: everything, every experiment
        assertThat(admin.get("/api/v1/admin/accounts").body()).contains("operator-" + tag);
        assertThat(admin.get("/api/v1/requests/" + id).status()).isEqualTo(200);
        assertThat(admin.get("/api/v1/whoami").json().get("role").stringValue()).isEqualTo("admin");
    }

    @Test
    void theOwnerIsTheAuthenticatedAccountNotAHeader() {
        ApiClient alice = user("alice", ApiRole.OPERATOR, expA);
        Answer a = ApiClient.send(HttpRequest.newBuilder(URI.create("http://localhost:" + port + "/api/v1/requests"))
                .header("Authorization", "Bearer " + alice.token()).header("Content-Type", "application/json")
                .header("X-Stagehand-Owner", "mallory").POST(HttpRequest.BodyPublishers.ofString(files(catalogA.files.subList(0, 1)))).build());
        assertThat(a.status()).as(a.body()).isEqualTo(201);
        assertThat(a.json().get("owner").stringValue()).isEqualTo("alice-" + tag);
        assertThat(jdbc.queryForObject("SELECT owner FROM stage_request WHERE id = ?::uuid", String.class,
                a.json().get("id").stringValue())).isEqualTo("alice-" + tag);
    }

    @Test
    void aUserOfOneExperimentNeitherSeesNorTouchesAnothers() {
        ApiClient alice = user("alice", ApiRole.OPERATOR, expA);
        ApiClient bob = user("bob", ApiRole.OPERATOR, expB);
        String aId = alice.post("/api/v1/requests", files(catalogA.files.subList(0, 2))).json().get("id").stringValue();
        Answer bobs = bob.post("/api/v1/requests", files(catalogB.files.subList(0, 4)));
        assertThat(bobs.status()).as(bobs.body()).isEqualTo(201);
        String bId = bobs.json().get("id").stringValue();
        Answer bobsWlcg = bob.post("/api/v1/stage", ApiClient.json(Map.of("files", List.of(Map.of("path", catalogB.files.get(4))))));
        assertThat(bobsWlcg.status()).as(bobsWlcg.body()).isEqualTo(201);
        String bWlcg = bobsWlcg.json().get("requestId").stringValue();

        // a foreign id answers exactly as an unknown one: 404, the same problem but for the id
        String unknown = UUID.randomUUID().toString();
        for (String[] call : new String[][] {
                {"GET", "/api/v1/requests/%s"}, {"POST", "/api/v1/requests/%s/cancel"}, {"POST", "/api/v1/requests/%s/release"},
                {"GET", "/api/v1/stage/%s"}, {"POST", "/api/v1/stage/%s/cancel"}, {"POST", "/api/v1/release/%s"},
                {"DELETE", "/api/v1/stage/%s"}}) {
            for (String id : List.of(bId, bWlcg)) {
                String body = call[1].contains("stage/%s/cancel") || call[1].contains("release/%s")
                        ? ApiClient.json(Map.of("paths", catalogB.files.subList(0, 1))) : null;
                Answer foreign = send(alice, call[0], call[1].formatted(id), body);
                Answer none = send(alice, call[0], call[1].formatted(unknown), body);
                assertProblem(foreign, 404);
                assertThat(none.status()).isEqualTo(404);
                assertThat(foreign.body().replace(id, "ID")).as(call[0] + " " + call[1]).isEqualTo(none.body().replace(unknown, "ID"));
                assertThat(foreign.body()).doesNotContain(catalogB.prefix);
            }
        }
        // nothing of bob's changed
        assertThat(count("stage_request_file WHERE request_id IN ('" + bId + "', '" + bWlcg + "') AND (state = 'cancelled' OR released)")).isZero();
        assertThat(count("stage_request WHERE id IN ('" + bId + "', '" + bWlcg + "')")).isEqualTo(2);

        // lists show only the caller's experiments, whatever the filter
        JsonNode aliceList = alice.get("/api/v1/requests?limit=1000").json();
        List<String> ids = new ArrayList<>();
        aliceList.get("items").forEach(i -> ids.add(i.get("id").stringValue()));
        aliceList.get("items").forEach(i -> assertThat(i.get("experiment").stringValue()).isEqualTo(expA));
        assertThat(ids).contains(aId).doesNotContain(bId, bWlcg);
        assertThat(alice.get("/api/v1/requests?experiment=" + expB).json().get("total").longValue()).isZero();
        assertThat(alice.get("/api/v1/requests?owner=bob-" + tag).json().get("total").longValue()).isZero();
        assertThat(bob.get("/api/v1/requests?experiment=" + expB).json().get("total").longValue()).isEqualTo(2);
        assertThat(admin.get("/api/v1/requests?experiment=" + expB).json().get("total").longValue()).isEqualTo(2);

        // archiveinfo: another experiment's file is answered as an unknown path, without its locality
        String bFile = catalogB.files.get(0), nowhere = catalogB.prefix + "/never-existed";
        JsonNode info = alice.post("/api/v1/archiveinfo", ApiClient.json(Map.of("paths", List.of(catalogA.files.get(0), bFile, nowhere)))).json();
        assertThat(info.get(0).has("locality")).isTrue();
        assertThat(info.get(1).has("locality")).isFalse();
        assertThat(info.get(1).get("error").stringValue()).isEqualTo(info.get(2).get("error").stringValue());
        assertThat(bob.post("/api/v1/archiveinfo", ApiClient.json(Map.of("paths", List.of(bFile)))).json().get(0).has("locality")).isTrue();

        // submissions naming another experiment's file: "not in the catalog", as for a name that does not exist
        Answer probe = alice.post("/api/v1/requests", files(List.of(catalogA.files.get(1), bFile, nowhere)));
        assertProblem(probe, 400);
        JsonNode errors = probe.json().get("errors");
        assertThat(errors.size()).isEqualTo(2);
        assertThat(errors.get(0).get("index").intValue()).isEqualTo(1);
        assertThat(errors.get(0).get("reason").stringValue()).isEqualTo(errors.get(1).get("reason").stringValue());
        Answer wlcgProbe = alice.post("/api/v1/stage", ApiClient.json(Map.of("files", List.of(Map.of("path", bFile)))));
        Answer wlcgNone = alice.post("/api/v1/stage", ApiClient.json(Map.of("files", List.of(Map.of("path", nowhere)))));
        assertProblem(wlcgProbe, 400);
        assertThat(wlcgProbe.body().replace(bFile, "P")).isEqualTo(wlcgNone.body().replace(nowhere, "P"));
        // beside a file of hers, the WLCG API takes the request; the other experiment's file fails as an unknown one
        Answer mixed = alice.post("/api/v1/stage", ApiClient.json(Map.of("files", List.of(
                Map.of("path", catalogA.files.get(2)), Map.of("path", bFile), Map.of("path", nowhere)))));
        assertThat(mixed.status()).as(mixed.body()).isEqualTo(201);
        JsonNode mixedFiles = alice.get("/api/v1/stage/" + mixed.json().get("requestId").stringValue()).json().get("files");
        assertThat(alice.get("/api/v1/requests/" + mixed.json().get("requestId").stringValue()).json().get("request")
                .get("experiment").stringValue()).isEqualTo(expA);
        assertThat(mixedFiles.get(0).get("state").stringValue()).isEqualTo("SUBMITTED");
        assertThat(mixedFiles.get(1).get("state").stringValue()).isEqualTo("FAILED");
        assertThat(mixedFiles.get(1).toString().replace(bFile, "P")).isEqualTo(mixedFiles.get(2).toString().replace(nowhere, "P"));
        assertThat(jdbc.queryForObject("SELECT count(*) FROM stage_request_file x JOIN file f ON f.id = x.file_id "
                + "WHERE x.request_id = ?::uuid AND f.name = ?", Long.class, mixed.json().get("requestId").stringValue(), bFile)).isZero();
        // naming another experiment is refused; the admin may
        Map<String, Object> named = new LinkedHashMap<>();
        named.put("files", catalogB.files.subList(5, 6));
        named.put("experiment", expB);
        Answer foreignExperiment = alice.post("/api/v1/requests", ApiClient.json(named));
        assertProblem(foreignExperiment, 400);
        assertThat(foreignExperiment.json().get("errors").get(0).get("field").stringValue()).isEqualTo("experiment");
        assertThat(admin.post("/api/v1/requests", ApiClient.json(named)).status()).isEqualTo(201);
        assertThat(count("stage_request WHERE owner = 'alice-" + tag + "'")).as("hers: the first and the mixed WLCG one").isEqualTo(2);
    }

    @Test
    void aRequestBelongsToOneExperiment() {
        ApiClient both = user("both", ApiRole.OPERATOR, expA, expB);
        List<String> mixed = List.of(catalogA.files.get(0), catalogB.files.get(0));
        Answer a = both.post("/api/v1/requests", files(mixed));
        assertProblem(a, 400);
        assertThat(a.json().get("errors").get(0).get("field").stringValue()).isEqualTo("experiment");
        Map<String, Object> named = new LinkedHashMap<>();
        named.put("files", mixed);
        named.put("experiment", expA);
        Answer b = both.post("/api/v1/requests", ApiClient.json(named));
        assertProblem(b, 400);
        assertThat(b.json().get("errors").get(0).get("index").intValue()).isEqualTo(1);
        assertThat(b.json().get("errors").get(0).get("reason").stringValue()).contains(expB);
        assertThat(both.post("/api/v1/requests", files(catalogB.files.subList(0, 2))).json().get("experiment").stringValue()).isEqualTo(expB);
    }

    private static Answer send(ApiClient c, String method, String path, String body) {
        return switch (method) {
            case "GET" -> c.get(path);
            case "DELETE" -> c.delete(path);
            default -> c.post(path, body);
        };
    }

    private long count(String from) {
        return jdbc.queryForObject("SELECT count(*) FROM " + from, Long.class);
    }
}
