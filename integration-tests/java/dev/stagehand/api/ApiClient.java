package dev.stagehand.api;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** A tiny real-HTTP client for the integration tests. */
final class ApiClient {

    record Answer(int status, String contentType, String body, JsonNode json, String location) {}

    static final JsonMapper JSON = JsonMapper.builder().build();
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private final String base;

    ApiClient(int port) {
        this.base = "http://localhost:" + port;
    }

    Answer get(String path) {
        return send(HttpRequest.newBuilder(URI.create(base + path)).GET().build());
    }

    Answer post(String path, String body) {
        return post(path, body, null);
    }

    Answer post(String path, String body, String owner) {
        var b = HttpRequest.newBuilder(URI.create(base + path)).header("Content-Type", "application/json")
                .POST(body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        if (owner != null) b.header("X-Stagehand-Owner", owner);
        return send(b.build());
    }

    Answer delete(String path) {
        return send(HttpRequest.newBuilder(URI.create(base + path)).DELETE().build());
    }

    /** The Retry-After header of a GET... kept simple: send and return the raw response headers' value. */
    String retryAfter(String path, String body) {
        try {
            var r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(base + path)).header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
            return r.headers().firstValue("Retry-After").orElse(null);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static Answer send(HttpRequest r) {
        try {
            HttpResponse<String> resp = HttpClient.newHttpClient().send(r, HttpResponse.BodyHandlers.ofString());
            JsonNode json = null;
            try {
                json = resp.body().isEmpty() ? null : JSON.readTree(resp.body());
            } catch (RuntimeException notJson) {
                // left null; tests assert on it where JSON is expected
            }
            return new Answer(resp.statusCode(), resp.headers().firstValue("Content-Type").orElse(""), resp.body(), json,
                    resp.headers().firstValue("Location").orElse(null));
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    static String json(Object o) {
        return JSON.writeValueAsString(o);
    }
}
