package dev.stagehand.api.replication;

import dev.stagehand.api.requests.BadInput;
import dev.stagehand.api.requests.JsonBodies;
import jakarta.servlet.http.HttpServletRequest;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import tools.jackson.databind.JsonNode;

/** A strictly read JSON object body: unknown fields and wrong types are refused, naming the field. */
final class Body {

    private final JsonNode node;

    private Body(JsonNode node) {
        this.node = node;
    }

    static Body read(HttpServletRequest http, Set<String> fields) throws IOException {
        JsonNode n = JsonBodies.parse(JsonBodies.read(http));
        for (Map.Entry<String, JsonNode> e : n.properties()) {
            if (!fields.contains(e.getKey()))
                throw BadInput.field(e.getKey(), "unknown field; expected one of " + new java.util.TreeSet<>(fields));
        }
        return new Body(n);
    }

    String string(String field, boolean required) {
        JsonNode n = node.get(field);
        if (n == null || n.isNull()) {
            if (required) throw BadInput.field(field, "required");
            return null;
        }
        if (!n.isString()) throw BadInput.field(field, "expected a string");
        return BadInput.noNul(field, n.stringValue());
    }

    Long integer(String field) {
        JsonNode n = node.get(field);
        if (n == null || n.isNull()) return null;
        if (!n.isIntegralNumber() || !n.canConvertToLong()) throw BadInput.field(field, "expected an integer");
        return n.longValue();
    }

    List<String> strings(String field, boolean required) {
        JsonNode n = node.get(field);
        if (n == null || n.isNull()) {
            if (required) throw BadInput.field(field, "required");
            return null;
        }
        if (!n.isArray()) throw BadInput.field(field, "expected a list of strings");
        List<String> out = new ArrayList<>();
        int i = 0;
        for (JsonNode e : n) {
            if (!e.isString()) throw BadInput.field(field, "entry " + i + " is not a string");
            if (e.stringValue().indexOf('\0') >= 0) throw BadInput.field(field, "entry " + i + " contains a NUL character");
            out.add(e.stringValue());
            i++;
        }
        return out;
    }

    Map<String, String> map(String field) {
        JsonNode n = node.get(field);
        if (n == null || n.isNull()) return null;
        if (!n.isObject()) throw BadInput.field(field, "expected an object of names to values");
        Map<String, String> out = new LinkedHashMap<>();
        for (Map.Entry<String, JsonNode> e : n.properties()) {
            JsonNode v = e.getValue();
            BadInput.noNul(field, e.getKey());
            if (v.isString()) out.put(e.getKey(), BadInput.noNul(field, v.stringValue()));
            // its digits as they are: longValue() threw beyond a long (a 500)
            else if (v.isIntegralNumber()) out.put(e.getKey(), v.bigIntegerValue().toString());
            else throw BadInput.field(field, "value of '" + e.getKey() + "' must be a string or an integer");
        }
        return out;
    }
}
