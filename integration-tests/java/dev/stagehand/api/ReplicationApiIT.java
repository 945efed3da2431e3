package dev.stagehand.api;

import static dev.stagehand.api.Problems.assertFieldProblem;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.UUID;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.jdbc.core.JdbcTemplate;
import tools.jackson.databind.JsonNode;

/** The replication REST API over real HTTP: sites, rules, schedules, completeness, and its problem documents. */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
class ReplicationApiIT {

    @LocalServerPort int port;
    @Autowired JdbcTemplate jdbc;
    @Autowired dev.stagehand.api.security.ApiTokens tokens;

    ApiClient api;
    final String tag = UUID.randomUUID().toString().substring(0, 8);

    @BeforeEach
    void setUp() {
        api = ApiClient.admin(port, tokens);
    }

    ApiClient.Answer put(String path, String body) {
        return api.put(path, body);
    }

    @Test
    void sitesRulesSchedulesAndCompleteness() throws Exception {
        String site = "API-" + tag;
        var s = put("/api/v1/sites/" + site, "{\"attributes\": {\"tier\": 1, \"country\": \"DE\"}, \"endpoints\": [\"gsiftp://se.example.org:2811/data\"]}");
        assertThat(s.status()).as(s.body()).isEqualTo(200);
        assertThat(s.json().get("attributes").get("tier").asString()).isEqualTo("1");
        assertThat(api.get("/api/v1/sites/" + site).json().get("endpoints").get(0).asString()).isEqualTo("gsiftp://se.example.org:2811/data");
        assertFieldProblem(put("/api/v1/sites/" + site, "{\"endpoints\": [\"http://x/y\"]}"), 400, "endpoints", "ftp:// or gsiftp://");
        assertFieldProblem(put("/api/v1/sites/" + site, "{\"color\": \"red\"}"), 400, "color", "unknown field");
        assertFieldProblem(put("/api/v1/sites/bad%20name", "{}"), 400, "name", "site name");
        assertFieldProblem(api.get("/api/v1/sites/NOSUCH-" + tag), 404, "site", "no site");

        String ds = "api-ds-" + tag;
        jdbc.update("INSERT INTO dataset (name, experiment) VALUES (?, 'phenix')", ds);
        assertFieldProblem(api.post("/api/v1/replication/rules", "{\"dataset\": \"" + ds + "\", \"copies\": 1, \"sites\": \"tier=\"}"),
                400, "sites", "expected a value after 'tier='");
        assertFieldProblem(api.post("/api/v1/replication/rules", "{\"dataset\": \"nosuch-" + tag + "\", \"sites\": \"tier=1\"}"),
                404, "dataset", "no dataset");
        assertFieldProblem(api.post("/api/v1/replication/rules", "{\"dataset\": \"" + ds + "\", \"sites\": \"tier=1\", \"schedule\": \"every night\"}"),
                400, "schedule", "cron");
        assertFieldProblem(api.post("/api/v1/replication/rules", "{\"dataset\": \"" + ds + "\", \"sites\": \"tier=1\", \"copies\": 0}"),
                400, "copies", "between 1 and 100");
        assertFieldProblem(api.post("/api/v1/replication/rules", "{\"dataset\": \"" + ds + "\", \"sites\": \"tier=1\", \"lifetime\": \"30 days\"}"),
                400, "lifetime", "ISO-8601");
        // well-formed but out of range: refused, not a 500 from Quartz or the database, nor cut to a valid value
        assertFieldProblem(api.post("/api/v1/replication/rules", "{\"dataset\": \"" + ds + "\", \"sites\": \"tier=1\", \"schedule\": \"0 0 0 30 2 ?\"}"),
                400, "schedule", "never fires");
        assertFieldProblem(api.post("/api/v1/replication/rules", "{\"dataset\": \"" + ds + "\", \"sites\": \"tier=1\", \"copies\": -4294967295}"),
                400, "copies", "between 1 and 100");
        assertFieldProblem(api.post("/api/v1/replication/rules", "{\"dataset\": \"" + ds + "\", \"sites\": \"tier=1\", \"lifetime\": \"P1000000000D\"}"),
                400, "lifetime", "at most");
        assertThat(jdbc.queryForObject("SELECT count(*) FROM replication_rule r JOIN dataset d ON d.id = r.dataset_id WHERE d.name = ?",
                Long.class, ds)).as("refused calls store nothing").isZero();

        // a rule no site can serve (a typo in its expression), or short of sites, is refused as Rucio refuses it
        assertFieldProblem(api.post("/api/v1/replication/rules", "{\"dataset\": \"" + ds + "\", \"copies\": 1, \"sites\": \"NOSUCH-" + tag + "\"}"),
                400, "sites", "site expression 'NOSUCH-" + tag + "' matches 0 sites; the rule asks for 1 copy");
        assertFieldProblem(api.post("/api/v1/replication/rules", "{\"dataset\": \"" + ds + "\", \"copies\": 2, \"sites\": \"" + site + "\"}"),
                400, "sites", "site expression '" + site + "' matches 1 site; the rule asks for 2 copies");
        assertThat(jdbc.queryForObject("SELECT count(*) FROM replication_rule r JOIN dataset d ON d.id = r.dataset_id WHERE d.name = ?",
                Long.class, ds)).as("refused calls store nothing").isZero();

        var created = api.post("/api/v1/replication/rules", "{\"dataset\": \"" + ds + "\", \"copies\": 1, \"sites\": \"" + site
                + "\", \"lifetime\": \"P30D\", \"schedule\": \"0 0 2 * * ?\"}");
        assertThat(created.status()).as(created.body()).isEqualTo(201);
        long rule = created.json().get("id").asLong();
        assertThat(created.location()).endsWith("/api/v1/replication/rules/" + rule);
        assertThat(created.json().get("owner").asString()).as("the owner is the authenticated account").isEqualTo("admin");
        assertThat(created.json().get("expiresAt").isNull()).isFalse();
        try {
            // the same rule again (a retried POST): a conflict naming the rule there is
            assertFieldProblem(api.post("/api/v1/replication/rules", "{\"dataset\": \"" + ds + "\", \"copies\": 1, \"sites\": \"" + site
                    + "\", \"schedule\": \"0 0 2 * * ?\"}"), 409, "sites", "rule " + rule + " of admin already asks");
            JsonNode schedules = api.get("/api/v1/replication/schedules").json();
            JsonNode mine = null;
            for (JsonNode n : schedules) if (n.get("ruleId").asLong() == rule) mine = n;
            assertThat(mine).isNotNull();
            assertThat(mine.get("cron").asString()).isEqualTo("0 0 2 * * ?");
            assertThat(mine.get("state").asString()).isEqualTo("NORMAL");
            assertThat(api.post("/api/v1/replication/schedules/" + rule + "/pause", null).status()).isEqualTo(204);
            assertThat(api.get("/api/v1/replication/schedules/" + rule).json().get("schedule").get("state").asString()).isEqualTo("PAUSED");
            assertThat(api.post("/api/v1/replication/schedules/" + rule + "/resume", null).status()).isEqualTo(204);
            assertThat(api.get("/api/v1/replication/schedules/" + rule).json().get("schedule").get("state").asString()).isEqualTo("NORMAL");
            assertThat(api.post("/api/v1/replication/schedules/" + rule + "/trigger", null).status()).isEqualTo(202);
            // the triggered run applies the rule: it chooses the site
            long deadline = System.nanoTime() + 30_000_000_000L;
            JsonNode runs;
            do {
                Thread.sleep(200);
                runs = api.get("/api/v1/replication/schedules/" + rule).json().get("runs");
            } while ((runs.isEmpty() || runs.get(0).get("finishedAt").isNull()) && System.nanoTime() < deadline);
            assertThat(runs.get(0).get("outcome").asString()).isEqualTo("settled");
            assertThat(api.get("/api/v1/replication/rules/" + rule).json().get("rule").get("chosenSites").get(0).asString()).isEqualTo(site);
            assertThat(api.get("/api/v1/replication/rules?dataset=" + ds).json()).hasSize(1);
            assertThat(api.get("/api/v1/datasets/" + ds + "/completeness").status()).isEqualTo(200);
            assertFieldProblem(api.get("/api/v1/datasets/nosuch-" + tag + "/completeness"), 404, "dataset", "no dataset");
            // an unknown dataset, site or state is named, not answered with an empty list or "retried 0"
            assertThat(api.get("/api/v1/datasets/" + ds + "/replicas").status()).isEqualTo(200);
            assertFieldProblem(api.get("/api/v1/datasets/nosuch-" + tag + "/replicas"), 404, "dataset", "no dataset");
            assertFieldProblem(api.get("/api/v1/datasets/" + ds + "/replicas?site=NOSUCH-" + tag), 404, "site", "no site");
            assertFieldProblem(api.get("/api/v1/datasets/" + ds + "/replicas?state=finished"), 400, "state", "unknown replica state");
            assertThat(api.get("/api/v1/datasets/" + ds + "/replicas/history?limit=10000").json().isArray()).isTrue();
            assertFieldProblem(api.get("/api/v1/datasets/nosuch-" + tag + "/replicas/history"), 404, "dataset", "no dataset");
            assertFieldProblem(api.get("/api/v1/datasets/" + ds + "/replicas/history?site=NOSUCH-" + tag), 404, "site", "no site");
            assertFieldProblem(api.get("/api/v1/datasets/" + ds + "/replicas/history?limit=0"), 400, "limit", "from 1 to 10000");
            assertFieldProblem(api.get("/api/v1/datasets/" + ds + "/replicas/history?limit=10001"), 400, "limit", "from 1 to 10000");
            assertThat(api.post("/api/v1/datasets/" + ds + "/replicas/retry", null).json().get("retried").intValue()).isZero();
            assertFieldProblem(api.post("/api/v1/datasets/nosuch-" + tag + "/replicas/retry", null), 404, "dataset", "no dataset");
            assertFieldProblem(api.post("/api/v1/datasets/" + ds + "/replicas/retry?site=NOSUCH-" + tag, null), 404, "site", "no site");
            assertFieldProblem(api.post("/api/v1/sites/NOSUCH-" + tag + "/replicas/declare", "{\"files\": [\"/a\"]}"), 404, "site", "no site");
            assertFieldProblem(api.post("/api/v1/replication/schedules/999999999/pause", null), 404, "rule", "no schedule");
        } finally {
            assertThat(api.delete("/api/v1/replication/rules/" + rule).status()).isEqualTo(204);
        }
        assertThat(api.get("/api/v1/replication/schedules/" + rule).status()).isEqualTo(404);
        assertThat(api.delete("/api/v1/sites/" + site).status()).isEqualTo(204);
        assertThat(api.get("/v3/api-docs").body()).contains("/api/v1/replication/rules", "/api/v1/datasets/{name}/completeness");
    }

    /**
     * The rules' list comes in pages in id order, the next one named by a {@code Link: <...>; rel="next"} header; its
     * limit is bounded and a bad page parameter is refused naming it. (It read every rule of the site at each call.)
     */
    @Test
    void rulesAreListedInPagesInIdOrderWithALinkToTheNext() {
        String site = "PAGE-" + tag, ds = "page-ds-" + tag;
        assertThat(put("/api/v1/sites/" + site, "{\"attributes\": {\"tier\": \"page-" + tag + "\"}}").status()).isEqualTo(200);
        jdbc.update("INSERT INTO dataset (name, experiment) VALUES (?, 'phenix')", ds);
        java.util.List<Long> made = new java.util.ArrayList<>();
        try {
            // three rules of one dataset (scheduled: the engine leaves them be), told apart by their preferred source
            for (int i = 0; i < 3; i++) {
                var r = api.post("/api/v1/replication/rules", "{\"dataset\": \"" + ds + "\", \"sites\": \"" + site
                        + "\", \"source\": \"SRC" + i + "-" + tag + "\", \"schedule\": \"0 0 2 * * ?\"}");
                assertThat(r.status()).as(r.body()).isEqualTo(201);
                made.add(r.json().get("id").asLong());
            }
            var first = api.get("/api/v1/replication/rules?dataset=" + ds + "&limit=2");
            assertThat(first.status()).isEqualTo(200);
            assertThat(ids(first)).containsExactly(made.get(0), made.get(1));
            assertThat(first.link()).isEqualTo("</api/v1/replication/rules?dataset=" + ds + "&after=" + made.get(1) + "&limit=2>; rel=\"next\"");
            String next = first.link().substring(1, first.link().indexOf('>'));
            var second = api.get(next);
            assertThat(ids(second)).containsExactly(made.get(2));
            assertThat(second.link()).as("the last page names no next one").isNull();
            assertThat(ids(api.get("/api/v1/replication/rules?dataset=" + ds))).as("1,000 by default").isEqualTo(made);
            // every dataset's: after a rule, in id order
            java.util.List<Long> after = ids(api.get("/api/v1/replication/rules?after=" + made.get(0) + "&limit=10000"));
            assertThat(after).contains(made.get(1), made.get(2)).doesNotContain(made.get(0)).isSorted().allMatch(id -> id > made.get(0));
            for (String bad : new String[] {"limit=0", "limit=10001", "limit=ten", "limit=", "after=-1", "after=x", "after=99999999999999999999"}) {
                String field = bad.substring(0, bad.indexOf('='));
                assertFieldProblem(api.get("/api/v1/replication/rules?" + bad), 400, field, "expected an integer from");
            }
        } finally {
            for (long id : made) api.delete("/api/v1/replication/rules/" + id);
            api.delete("/api/v1/sites/" + site);
        }
    }

    static java.util.List<Long> ids(ApiClient.Answer a) {
        assertThat(a.status()).as(a.body()).isEqualTo(200);
        java.util.List<Long> out = new java.util.ArrayList<>();
        a.json().forEach(r -> out.add(r.get("id").asLong()));
        return out;
    }

    /**
     * A declaration's reason is kept on each replica it names (its last error, its history): one over the API's limit
     * on free text is refused naming it, and the replica is left as it was; one at the limit is kept whole. Any
     * length was taken before.
     */
    @Test
    void aDeclarationsReasonOverTheLimitIsRefusedAndTheReplicaLeftAsItWas() {
        String site = "WHY-" + tag, file = "/it/declared-" + tag;
        assertThat(put("/api/v1/sites/" + site, "{\"endpoints\": [\"gsiftp://se.example.org:2811/data\"]}").status()).isEqualTo(200);
        dev.stagehand.ItDb.simulatedFile(jdbc, file, 1000);
        assertThat(api.post("/api/v1/sites/" + site + "/replicas/register", ApiClient.json(java.util.Map.of("files", java.util.List.of(file))))
                .status()).isEqualTo(200);
        String replica = "SELECT r.state || ' ' || coalesce(r.last_error, '-') FROM replica r JOIN file f ON f.id = r.file_id "
                + "JOIN site s ON s.id = r.site_id WHERE f.name = ? AND s.name = ?";
        assertThat(jdbc.queryForObject(replica, String.class, file, site)).isEqualTo("verified -");
        String declare = "/api/v1/sites/" + site + "/replicas/declare";

        assertFieldProblem(api.post(declare, ApiClient.json(java.util.Map.of("files", java.util.List.of(file), "reason", "bad: " + "x".repeat(196)))),
                400, "reason", "at most 200 characters, got 201");
        assertThat(jdbc.queryForObject(replica, String.class, file, site)).as("nothing changed").isEqualTo("verified -");

        String why = "bad: " + "y".repeat(195);
        assertThat(api.post(declare, ApiClient.json(java.util.Map.of("files", java.util.List.of(file), "reason", why))).status()).isEqualTo(200);
        assertThat(jdbc.queryForObject(replica, String.class, file, site)).isEqualTo("lost declared " + why);
        assertThat(api.delete("/api/v1/sites/" + site).status()).isEqualTo(204);
    }

    /** A NUL in a body's string or a query parameter is refused naming the field; PostgreSQL refused it, a 500. */
    @Test
    void aNulInAnyNameIsRefusedNamingTheField() {
        String site = "NUL-" + tag, ds = "nul-ds-" + tag;
        assertThat(put("/api/v1/sites/" + site, "{\"attributes\": {\"tier\": 1}}").status()).isEqualTo(200);
        jdbc.update("INSERT INTO dataset (name, experiment) VALUES (?, 'phenix')", ds);
        assertFieldProblem(api.post("/api/v1/replication/rules", "{\"dataset\": \"" + ds + "\\u0000\", \"sites\": \"tier=1\"}"),
                400, "dataset", "NUL");
        assertFieldProblem(api.post("/api/v1/sites/" + site + "/replicas/declare", "{\"files\": [\"/a\\u0000b\"]}"), 400, "files", "NUL");
        assertFieldProblem(api.post("/api/v1/sites/" + site + "/replicas/register", "{\"files\": [\"/a\\u0000b\"]}"), 400, "files", "NUL");
        assertFieldProblem(api.get("/api/v1/replication/rules?dataset=" + ds + "%00"), 400, "dataset", "NUL");
        assertFieldProblem(api.get("/api/v1/datasets/" + ds + "/replicas?site=" + site + "%00"), 400, "site", "NUL");
        assertFieldProblem(api.post("/api/v1/datasets/" + ds + "/replicas/retry?site=" + site + "%00", null), 400, "site", "NUL");
        assertThat(api.delete("/api/v1/sites/" + site).status()).isEqualTo(204);
    }
}
