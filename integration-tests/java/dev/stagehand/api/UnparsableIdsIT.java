package dev.stagehand.api;

import static dev.stagehand.api.Problems.assertProblem;
import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.api.ApiClient.Answer;
import java.net.URI;
import java.net.http.HttpRequest;
import java.util.List;
import java.util.UUID;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import tools.jackson.databind.JsonNode;

/**
 * Every endpoint of the API that takes an id in its path answers an id that does not parse as it answers an
 * unknown one: 404, a problem document naming the id, as the WLCG Tape REST API and dCache answer an id they never
 * gave out. The native requests, replication rules and schedules and archive files answered 400 before; the WLCG
 * endpoints, tokens and cache directories 404.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class UnparsableIdsIT {

    /** {@code path} with ID where the id goes; {@code unknown}: a well-formed id nothing has. */
    record Endpoint(String method, String path, String body, String unknown, String field) {
        @Override
        public String toString() {
            return method + " " + path;
        }
    }

    static final String PATHS = "{\"paths\": [\"/it/unparsable-ids\"]}";
    static final String UUID_ID = UUID.randomUUID().toString();

    static final List<Endpoint> ENDPOINTS = List.of(
            new Endpoint("GET", "/api/v1/stage/ID", null, UUID_ID, "id"),
            new Endpoint("POST", "/api/v1/stage/ID/cancel", PATHS, UUID_ID, "id"),
            new Endpoint("DELETE", "/api/v1/stage/ID", null, UUID_ID, "id"),
            new Endpoint("POST", "/api/v1/release/ID", PATHS, UUID_ID, "id"),
            new Endpoint("GET", "/api/v1/requests/ID", null, UUID_ID, "id"),
            new Endpoint("POST", "/api/v1/requests/ID/cancel", null, UUID_ID, "id"),
            new Endpoint("POST", "/api/v1/requests/ID/release", null, UUID_ID, "id"),
            new Endpoint("PUT", "/api/v1/requests/ID/priority", "{\"priority\": 1}", UUID_ID, "id"),
            new Endpoint("GET", "/api/v1/replication/rules/ID", null, "999999999999", "rule"),
            new Endpoint("DELETE", "/api/v1/replication/rules/ID", null, "999999999999", "rule"),
            new Endpoint("GET", "/api/v1/replication/schedules/ID", null, "999999999999", "rule"),
            new Endpoint("POST", "/api/v1/replication/schedules/ID/pause", null, "999999999999", "rule"),
            new Endpoint("POST", "/api/v1/replication/schedules/ID/resume", null, "999999999999", "rule"),
            new Endpoint("POST", "/api/v1/replication/schedules/ID/trigger", null, "999999999999", "rule"),
            new Endpoint("GET", "/api/v1/archive/files/ID", null, "999999999999", "id"),
            new Endpoint("POST", "/api/v1/archive/files/ID/retry", null, "999999999999", "id"),
            new Endpoint("DELETE", "/api/v1/archive/files/ID", null, "999999999999", "id"),
            new Endpoint("DELETE", "/api/v1/admin/tokens/ID", null, UUID_ID, "id"),
            new Endpoint("POST", "/api/v1/admin/cache/directories/ID/in-service", null, "2147483647", "id"));

    /**
     * Not a UUID, a UUID in a short form UUID.fromString takes, not a number, beyond a long, numbers in other forms
     * (Spring's own conversion reads 0x10 as 16).
     */
    static final List<String> UNPARSABLE = List.of("not-a-uuid", "1-2-3-4-5", "abc", "99999999999999999999", "1e3", "0x10");

    @LocalServerPort int port;
    @Autowired dev.stagehand.api.security.ApiTokens tokens;

    ApiClient admin;

    @BeforeAll
    void setUp() {
        admin = ApiClient.admin(port, tokens);
    }

    static Stream<Arguments> cases() {
        return ENDPOINTS.stream().flatMap(e -> UNPARSABLE.stream().map(id -> Arguments.of(e, id)));
    }

    @ParameterizedTest(name = "{0} with {1}")
    @MethodSource("cases")
    void anIdThatDoesNotParseIsNotFoundAsAnUnknownOne(Endpoint e, String id) {
        Answer unknown = call(e, e.unknown());
        assertProblem(unknown, 404);
        Answer a = call(e, id);
        assertProblem(a, 404, id);
        assertThat(a.json().get("errors").get(0).get("field").asString()).as(a.body()).isEqualTo(e.field());
        assertThat(a.json().get("errors").get(0).get("field").asString()).isEqualTo(unknown.json().get("errors").get(0).get("field").asString());
        assertThat(a.json().get("type").asString()).isEqualTo(unknown.json().get("type").asString());
    }

    /**
     * The ids that are numbers are typed so in the OpenAPI document, for generated clients: the replication rules and
     * schedules, archived files and cache directories were strings there while their handlers parsed them by hand.
     */
    @ParameterizedTest(name = "{0} {1}")
    @CsvSource({
            "get, /api/v1/replication/rules/{id}, id, int64",
            "delete, /api/v1/replication/rules/{id}, id, int64",
            "get, /api/v1/replication/schedules/{ruleId}, ruleId, int64",
            "post, /api/v1/replication/schedules/{ruleId}/pause, ruleId, int64",
            "post, /api/v1/replication/schedules/{ruleId}/resume, ruleId, int64",
            "post, /api/v1/replication/schedules/{ruleId}/trigger, ruleId, int64",
            "get, /api/v1/archive/files/{id}, id, int64",
            "post, /api/v1/archive/files/{id}/retry, id, int64",
            "delete, /api/v1/archive/files/{id}, id, int64",
            "post, /api/v1/admin/cache/directories/{id}/in-service, id, int32"})
    void numericIdsAreIntegersInTheOpenApiDocument(String method, String path, String name, String format) {
        Answer doc = admin.get("/v3/api-docs");
        assertThat(doc.status()).isEqualTo(200);
        JsonNode operation = doc.json().get("paths").get(path).get(method);
        JsonNode parameter = null;
        for (JsonNode p : operation.get("parameters")) {
            if (p.get("in").asString().equals("path") && p.get("name").asString().equals(name)) parameter = p;
        }
        assertThat(parameter).as(operation.toString()).isNotNull();
        assertThat(parameter.get("schema").get("type").asString()).as(parameter.toString()).isEqualTo("integer");
        assertThat(parameter.get("schema").get("format").asString()).as(parameter.toString()).isEqualTo(format);
    }

    private Answer call(Endpoint e, String id) {
        String body = e.body();
        var b = HttpRequest.newBuilder(URI.create("http://localhost:" + port + e.path().replace("ID", id)))
                .header("Authorization", "Bearer " + admin.token());
        if (body != null) b.header("Content-Type", "application/json");
        b.method(e.method(), body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        return ApiClient.send(b.build());
    }
}
