package dev.stagehand.api.security;

import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import tools.jackson.databind.json.JsonMapper;

/** RFC 9457 problem documents for refusals made before a controller runs (401, 403), shaped like the API's others. */
final class ApiProblems {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    static final String REALM = "Bearer realm=\"stagehand\"";

    private ApiProblems() {}

    static void write(HttpServletResponse resp, int status, String type, String detail, String field, String wwwAuthenticate)
            throws IOException {
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("type", "https://stagehand.dev/problems/" + type);
        p.put("title", status == 401 ? "Unauthorized" : "Forbidden");
        p.put("status", status);
        p.put("detail", detail);
        p.put("errors", List.of(Map.of("field", field, "reason", detail)));
        resp.setStatus(status);
        if (wwwAuthenticate != null) resp.setHeader("WWW-Authenticate", wwwAuthenticate);
        resp.setContentType("application/problem+json");
        resp.setCharacterEncoding("UTF-8");
        resp.getWriter().write(JSON.writeValueAsString(p));
    }
}
