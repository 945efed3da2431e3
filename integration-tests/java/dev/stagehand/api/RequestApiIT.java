package dev.stagehand.api;

import static dev.stagehand.api.Problems.assertFieldProblem;
import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.ItCatalog;
import dev.stagehand.api.ApiClient.Answer;
import dev.stagehand.catalog.CatalogImporter;
import java.util.ArrayList;
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

/** The native request API end to end: real HTTP, real PostgreSQL. */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
class RequestApiIT {

    @LocalServerPort
    int port;
    @Autowired
    CatalogImporter importer;
    @Autowired
    JdbcTemplate jdbc;
    @Autowired
    dev.stagehand.api.security.ApiAccounts accounts;
    @Autowired
    dev.stagehand.api.security.ApiTokens tokens;

    ApiClient api;
    final Map<String, ApiClient> clients = new java.util.HashMap<>();
    ItCatalog catalog;

    @BeforeEach
    void setUp() {
        api = ApiClient.admin(port, tokens);
        catalog = ItCatalog.load(importer, 30);
    }

    private Answer submit(List<String> files, String clientRequestId, String owner) {
        var body = new java.util.LinkedHashMap<String, Object>();
        body.put("files", files);
        if (clientRequestId != null) body.put("clientRequestId", clientRequestId);
        body.put("experiment", "atlas");
        // the owner is the authenticated account: an operator of atlas per owner, the admin when none is named
        ApiClient client = owner == null ? api : clients.computeIfAbsent(owner, o -> ApiClient.as(port, accounts, tokens, o,
                dev.stagehand.api.security.ApiRole.OPERATOR, "atlas"));
        return client.post("/api/v1/requests", ApiClient.json(body));
    }

    @Test
    void submitThenReadCountsFilesInOrderAndPages() {
        List<String> files = new ArrayList<>(catalog.files.subList(0, 25));
        java.util.Collections.reverse(files); // not catalog order: reads must keep the submitted order
        Answer created = submit(files, null, "alice");
        assertThat(created.status()).isEqualTo(201);
        String id = created.json().get("id").stringValue();
        assertThat(created.location()).endsWith("/api/v1/requests/" + id);
        assertThat(created.json().get("state").stringValue()).isEqualTo("submitted");
        assertThat(created.json().get("fileCount").intValue()).isEqualTo(25);
        assertThat(created.json().get("owner").stringValue()).isEqualTo("alice");
        assertThat(jdbc.queryForObject("SELECT count(*) FROM stage_request_file WHERE request_id = ?::uuid", Long.class, id)).isEqualTo(25);

        Answer got = api.get("/api/v1/requests/" + id + "?fileOffset=5&fileLimit=10");
        assertThat(got.status()).isEqualTo(200);
        assertThat(got.json().get("counts").get("queued").longValue()).isEqualTo(25);
        assertThat(got.json().get("counts").get("done").longValue()).isZero();
        JsonNode page = got.json().get("files");
        assertThat(page.size()).isEqualTo(10);
        for (int i = 0; i < 10; i++) {
            assertThat(page.get(i).get("path").stringValue()).isEqualTo(files.get(5 + i));
            assertThat(page.get(i).get("state").stringValue()).isEqualTo("queued");
        }
    }

    @Test
    void listFiltersByOwnerStateExperimentAndSince() {
        String owner = "lister-" + UUID.randomUUID().toString().substring(0, 8);
        for (int i = 0; i < 3; i++) assertThat(submit(catalog.files.subList(i, i + 2), null, owner).status()).isEqualTo(201);
        Answer all = api.get("/api/v1/requests?owner=" + owner + "&limit=2");
        assertThat(all.status()).isEqualTo(200);
        assertThat(all.json().get("total").longValue()).isEqualTo(3);
        assertThat(all.json().get("items").size()).isEqualTo(2);
        Answer rest = api.get("/api/v1/requests?owner=" + owner + "&limit=2&offset=2");
        assertThat(rest.json().get("items").size()).isEqualTo(1);
        assertThat(api.get("/api/v1/requests?owner=" + owner + "&state=done").json().get("total").longValue()).isZero();
        assertThat(api.get("/api/v1/requests?owner=" + owner + "&state=submitted&experiment=atlas").json().get("total").longValue()).isEqualTo(3);
        assertThat(api.get("/api/v1/requests?owner=" + owner + "&experiment=cms").json().get("total").longValue()).isZero();
        assertThat(api.get("/api/v1/requests?owner=" + owner + "&since=2999-01-01T00:00:00Z").json().get("total").longValue()).isZero();
        assertThat(api.get("/api/v1/requests?owner=" + owner + "&since=2000-01-01T00:00:00Z").json().get("total").longValue()).isEqualTo(3);
    }

    @Test
    void aRetryWithTheSameClientIdReturnsTheSameRequestAndOtherContentConflicts() {
        String cid = "retry-" + UUID.randomUUID();
        List<String> files = catalog.files.subList(0, 5);
        Answer first = submit(files, cid, "bob");
        assertThat(first.status()).isEqualTo(201);
        long requests = count("stage_request"), rows = count("stage_request_file");

        Answer retry = submit(files, cid, "bob");
        assertThat(retry.status()).isEqualTo(200);
        assertThat(retry.json().get("id").stringValue()).isEqualTo(first.json().get("id").stringValue());

        Answer other = submit(catalog.files.subList(0, 6), cid, "bob");
        assertFieldProblem(other, 409, "clientRequestId", "already used for request");
        assertThat(count("stage_request")).isEqualTo(requests);
        assertThat(count("stage_request_file")).isEqualTo(rows);

        // The key is per owner: another owner may use the same client id.
        assertThat(submit(files, cid, "carol").status()).isEqualTo(201);
    }

    @Test
    void cancelSomeThenAllThenAgain() {
        String id = submit(catalog.files.subList(0, 10), null, null).json().get("id").stringValue();
        // A file that already ended stays as it was and is reported unchanged.
        jdbc.update("UPDATE stage_request_file SET state = 'done' WHERE request_id = ?::uuid AND file_id = "
                + "(SELECT id FROM file WHERE name = ?)", id, catalog.files.get(1));

        Answer some = api.post("/api/v1/requests/" + id + "/cancel", ApiClient.json(Map.of("files", catalog.files.subList(0, 3))));
        assertThat(some.status()).isEqualTo(200);
        assertThat(some.json().get("changed").longValue()).isEqualTo(2);
        assertThat(some.json().get("unchanged").get(0).get("path").stringValue()).isEqualTo(catalog.files.get(1));
        assertThat(some.json().get("unchanged").get(0).get("state").stringValue()).isEqualTo("done");
        assertThat(some.json().get("state").stringValue()).isEqualTo("submitted");

        Answer detail = api.get("/api/v1/requests/" + id);
        assertThat(detail.json().get("request").has("etaAt")).as("the scheduler's ETA is a field of the request").isTrue();
        assertThat(detail.json().get("counts").get("cancelled").longValue()).isEqualTo(2);
        assertThat(detail.json().get("counts").get("queued").longValue()).isEqualTo(7);

        Answer all = api.post("/api/v1/requests/" + id + "/cancel", null);
        assertThat(all.status()).isEqualTo(200);
        assertThat(all.json().get("changed").longValue()).isEqualTo(7);
        // a finished request has no ETA, whatever the row kept from before
        jdbc.update("UPDATE stage_request SET eta_at = now() + interval '1 hour' WHERE id = ?::uuid", id);
        assertThat(api.get("/api/v1/requests/" + id).json().get("request").get("etaAt").isNull()).isTrue();
        assertThat(all.json().get("state").stringValue()).isEqualTo("cancelled");
        assertThat(api.get("/api/v1/requests/" + id).json().get("counts").get("cancelled").longValue()).isEqualTo(9);

        Answer again = api.post("/api/v1/requests/" + id + "/cancel", null);
        assertThat(again.status()).isEqualTo(409);
        assertThat(again.json().get("errors").get(0).get("field").stringValue()).isEqualTo("state");
    }

    @Test
    void priorityChangesWhileTheRequestIsOpenWithinTheRangeAndOnlyForItsExperiment() {
        String id = submit(catalog.files.subList(0, 4), null, "dora").json().get("id").stringValue();
        Answer raised = clients.get("dora").put("/api/v1/requests/" + id + "/priority", "{\"priority\": 250}");
        assertThat(raised.status()).isEqualTo(200);
        assertThat(raised.json().get("priority").intValue()).isEqualTo(250);
        assertThat(api.get("/api/v1/requests/" + id).json().get("request").get("priority").intValue()).isEqualTo(250);
        assertThat(jdbc.queryForObject("SELECT priority FROM stage_request WHERE id = ?::uuid", Integer.class, id)).isEqualTo(250);

        // bad bodies name the field and change nothing
        for (String bad : List.of("{}", "{\"priority\": \"high\"}", "{\"priority\": 1.5}", "{\"priority\": 5, \"colour\": 1}", "", "[3]")) {
            Answer a = api.put("/api/v1/requests/" + id + "/priority", bad);
            assertThat(a.status()).as(bad).isEqualTo(400);
            assertThat(a.json().get("errors").get(0).get("field").stringValue()).as(bad).isIn("priority", "colour", "body");
        }
        Answer outOfRange = api.put("/api/v1/requests/" + id + "/priority", "{\"priority\": 5000}");
        assertThat(outOfRange.status()).isEqualTo(400);
        assertThat(outOfRange.json().get("errors").get(0).get("reason").stringValue()).contains("between -1000 and 1000");
        assertThat(api.put("/api/v1/requests/" + UUID.randomUUID() + "/priority", "{\"priority\": 1}").status()).isEqualTo(404);
        // a viewer may not; an operator of another experiment gets 404 as for an unknown id
        ApiClient viewer = ApiClient.as(port, accounts, tokens, "vera-" + UUID.randomUUID().toString().substring(0, 6),
                dev.stagehand.api.security.ApiRole.VIEWER, "atlas");
        assertThat(viewer.put("/api/v1/requests/" + id + "/priority", "{\"priority\": 1}").status()).isEqualTo(403);
        ApiClient cms = ApiClient.as(port, accounts, tokens, "cmsop-" + UUID.randomUUID().toString().substring(0, 6),
                dev.stagehand.api.security.ApiRole.OPERATOR, "cms");
        assertThat(cms.put("/api/v1/requests/" + id + "/priority", "{\"priority\": 1}").status()).isEqualTo(404);
        assertThat(jdbc.queryForObject("SELECT priority FROM stage_request WHERE id = ?::uuid", Integer.class, id)).isEqualTo(250);

        // lowered, then not any more once finished
        assertThat(api.put("/api/v1/requests/" + id + "/priority", "{\"priority\": -10}").json().get("priority").intValue()).isEqualTo(-10);
        assertThat(api.post("/api/v1/requests/" + id + "/cancel", null).status()).isEqualTo(200);
        Answer finished = api.put("/api/v1/requests/" + id + "/priority", "{\"priority\": 3}");
        assertThat(finished.status()).isEqualTo(409);
        assertThat(finished.json().get("detail").stringValue()).contains("already cancelled");
    }

    @Test
    void cancellingTheLastOpenFilesEndsTheRequest() {
        String id = submit(catalog.files.subList(0, 3), null, null).json().get("id").stringValue();
        jdbc.update("UPDATE stage_request_file SET state = 'on_disk' WHERE request_id = ?::uuid AND file_id = "
                + "(SELECT id FROM file WHERE name = ?)", id, catalog.files.get(0));
        Answer a = api.post("/api/v1/requests/" + id + "/cancel", ApiClient.json(Map.of("files", catalog.files.subList(1, 3))));
        assertThat(a.status()).isEqualTo(200);
        // no destination: the file on disk has ended, so with the other two cancelled the request is done
        assertThat(a.json().get("state").stringValue()).isEqualTo("done");
        assertThat(jdbc.queryForObject("SELECT completed_at IS NOT NULL FROM stage_request WHERE id = ?::uuid", Boolean.class, id)).isTrue();
    }

    @Test
    void releaseSomeThenAll() {
        String id = submit(catalog.files.subList(0, 6), null, null).json().get("id").stringValue();
        Answer some = api.post("/api/v1/requests/" + id + "/release", ApiClient.json(Map.of("files", catalog.files.subList(0, 2))));
        assertThat(some.status()).isEqualTo(200);
        assertThat(some.json().get("changed").longValue()).isEqualTo(2);
        assertThat(api.get("/api/v1/requests/" + id).json().get("released").longValue()).isEqualTo(2);

        Answer again = api.post("/api/v1/requests/" + id + "/release", ApiClient.json(Map.of("files", catalog.files.subList(1, 3))));
        assertThat(again.json().get("changed").longValue()).isEqualTo(1);
        assertThat(again.json().get("unchanged").get(0).get("path").stringValue()).isEqualTo(catalog.files.get(1));

        Answer all = api.post("/api/v1/requests/" + id + "/release", "{}");
        assertThat(all.status()).isEqualTo(200);
        assertThat(all.json().get("changed").longValue()).isEqualTo(3);
        Answer detail = api.get("/api/v1/requests/" + id + "?fileLimit=6");
        assertThat(detail.json().get("released").longValue()).isEqualTo(6);
        detail.json().get("files").forEach(f -> assertThat(f.get("released").booleanValue()).isTrue());
        // releasing does not cancel: the files are still queued
        assertThat(detail.json().get("counts").get("queued").longValue()).isEqualTo(6);
    }

    @Test
    void theOpenApiDocumentIsServed() {
        Answer doc = api.get("/v3/api-docs");
        assertThat(doc.status()).isEqualTo(200);
        assertThat(doc.json().get("openapi").stringValue()).startsWith("3.");
        assertThat(doc.json().get("paths").has("/api/v1/requests")).isTrue();
        assertThat(doc.json().get("paths").has("/api/v1/requests/{id}/cancel")).isTrue();
    }

    private long count(String table) {
        return jdbc.queryForObject("SELECT count(*) FROM " + table, Long.class);
    }
}
