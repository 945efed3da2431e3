package dev.stagehand.api;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import dev.stagehand.api.security.ApiAccounts;
import dev.stagehand.api.security.ApiRole;
import dev.stagehand.api.security.ApiTokens;
import java.time.Duration;
import java.util.List;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * A tiny real-HTTP client for the integration tests. It authenticates as an API account with a bearer token
 * minted through {@link ApiTokens} ({@link #admin}: the built-in admin; {@link #as}: an account made for the
 * test), as a script given a token by an administrator would.
 */
public final class ApiClient {

    /** {@code link}: the Link header (a list's next page), when the call read it. */
    record Answer(int status, String contentType, String body, JsonNode json, String location, String wwwAuthenticate, String link) {
        Answer(int status, String contentType, String body, JsonNode json, String location, String wwwAuthenticate) {
            this(status, contentType, body, json, location, wwwAuthenticate, null);
        }
    }

    static final JsonMapper JSON = JsonMapper.builder().build();
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private final String base;
    private final String token;

    public ApiClient(int port, String token) {
        this("http://localhost:" + port, token);
    }

    ApiClient(String base, String token) {
        this.base = base;
        this.token = token;
    }

    /** The built-in admin account (every experiment), with a fresh token. */
    public static ApiClient admin(int port, ApiTokens tokens) {
        return new ApiClient(port, tokens.create(ApiAccounts.ADMIN, "integration test", null, "it").token());
    }

    /** An account with this role and these experiments (created or replaced), with a fresh token. */
    public static ApiClient as(int port, ApiAccounts accounts, ApiTokens tokens, String account, ApiRole role, String... experiments) {
        accounts.put(account, role, List.of(experiments));
        return new ApiClient(port, tokens.create(account, "integration test", null, "it").token());
    }

    /** The same server without credentials, or with another token. */
    ApiClient withToken(String other) {
        return new ApiClient(base, other);
    }

    String token() {
        return token;
    }

    private HttpRequest.Builder request(String path) {
        var b = HttpRequest.newBuilder(URI.create(base + path));
        if (token != null) b.header("Authorization", "Bearer " + token);
        return b;
    }

    Answer get(String path) {
        return send(request(path).GET().build());
    }

    Answer post(String path, String body) {
        return send(request(path).header("Content-Type", "application/json")
                .POST(body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body)).build());
    }

    Answer put(String path, String body) {
        return send(request(path).header("Content-Type", "application/json").PUT(HttpRequest.BodyPublishers.ofString(body)).build());
    }

    Answer delete(String path) {
        return send(request(path).DELETE().build());
    }

    /** The Retry-After header of a GET... kept simple: send and return the raw response headers' value. */
    String retryAfter(String path, String body) {
        try {
            var r = HttpClient.newHttpClient().send(request(path).header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
            return r.headers().firstValue("Retry-After").orElse(null);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    static Answer send(HttpRequest r) {
        try {
            HttpResponse<String> resp = HttpClient.newHttpClient().send(r, HttpResponse.BodyHandlers.ofString());
            JsonNode json = null;
            try {
                json = resp.body().isEmpty() ? null : JSON.readTree(resp.body());
            } catch (RuntimeException notJson) {
                // left null; tests assert on it where JSON is expected
            }
            return new Answer(resp.statusCode(), resp.headers().firstValue("Content-Type").orElse(""), resp.body(), json,
                    resp.headers().firstValue("Location").orElse(null), resp.headers().firstValue("WWW-Authenticate").orElse(null),
                    resp.headers().firstValue("Link").orElse(null));
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    static String json(Object o) {
        return JSON.writeValueAsString(o);
    }

    static JsonNode parse(String json) {
        return JSON.readTree(json);
    }
}
