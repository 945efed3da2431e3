package dev.stagehand.api.requests;

import dev.stagehand.platform.EntryError;
import dev.stagehand.recall.StageRequests;
import dev.stagehand.recall.StageRequests.NewStageRequest;
import jakarta.servlet.http.HttpServletRequest;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.springframework.http.HttpStatus;
import tools.jackson.core.JacksonException;
import tools.jackson.core.StreamReadFeature;
import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Reads request bodies strictly, field by field, so every error can name its field or list entry: unknown
 * fields, wrong types, duplicate keys and malformed JSON are refused (Jackson's data binding would coerce
 * or drop them silently).
 */
public final class JsonBodies {

    /** Generous for 100,000 long names; a bigger body is refused before it is read. */
    static final long MAX_BODY_BYTES = 64L << 20;

    private static final JsonMapper MAPPER = JsonMapper.builder()
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .build();
    private static final Set<String> SUBMIT_FIELDS =
            Set.of("files", "clientRequestId", "priority", "diskLifetimeSeconds", "destination", "experiment");

    private JsonBodies() {}

    /** The request's body bytes, at most MAX_BODY_BYTES (a larger declared length is refused unread); empty when there is none. */
    public static byte[] read(HttpServletRequest http) throws IOException {
        long declaredLength = http.getContentLengthLong();
        if (declaredLength > MAX_BODY_BYTES) throw tooLarge(declaredLength);
        byte[] body = http.getInputStream().readNBytes((int) MAX_BODY_BYTES + 1);
        if (body.length > MAX_BODY_BYTES) throw tooLarge(body.length);
        return body;
    }

    private static BadInput tooLarge(long n) {
        return new BadInput(HttpStatus.CONTENT_TOO_LARGE, "the body has " + n + " bytes; at most " + MAX_BODY_BYTES + " are accepted",
                List.of(EntryError.field("body", "larger than " + MAX_BODY_BYTES + " bytes")));
    }

    public static JsonNode parse(byte[] body) {
        if (body.length == 0 || isBlank(body)) throw BadInput.field("body", "empty; expected a JSON object");
        try {
            JsonNode node = MAPPER.readTree(body);
            if (node == null || node.isMissingNode()) throw BadInput.field("body", "empty; expected a JSON object");
            if (!node.isObject()) throw BadInput.field("body", "expected a JSON object, got " + kind(node));
            return node;
        } catch (JacksonException e) {
            var loc = e.getLocation();
            String where = loc == null ? "" : " at line " + loc.getLineNr() + ", column " + loc.getColumnNr();
            throw BadInput.field("body", "malformed JSON" + where + ": " + e.getOriginalMessage());
        }
    }

    /** A submit body: {"files": [...], "clientRequestId", "priority", "diskLifetimeSeconds", "destination", "experiment"}. */
    /** A submit body and the type errors found in it (the request then has null where a value was unusable). */
    record Parsed(NewStageRequest request, List<EntryError> errors) {}

    static Parsed submit(JsonNode body) {
        List<EntryError> errors = new ArrayList<>();
        unknownFields(body, SUBMIT_FIELDS, errors);
        List<String> files = files(body, true, errors);
        String cid = text(body, "clientRequestId", errors);
        Integer priority = integer(body, "priority", errors);
        Long lifetime = longValue(body, "diskLifetimeSeconds", errors);
        String destination = text(body, "destination", errors);
        String experiment = text(body, "experiment", errors);
        return new Parsed(new NewStageRequest(cid, files, priority, lifetime, destination, experiment), errors);
    }

    /** A cancel or release body: none, {} (all files) or {"files": [...]}; null means all files. */
    static List<String> fileSelection(byte[] raw) {
        if (raw.length == 0 || isBlank(raw)) return null;
        JsonNode body = parse(raw);
        List<EntryError> errors = new ArrayList<>();
        unknownFields(body, Set.of("files"), errors);
        List<String> files = files(body, false, errors);
        if (!errors.isEmpty()) throw new BadInput(HttpStatus.BAD_REQUEST, describe(errors), errors);
        return files;
    }

    /** A priority-change body: {"priority": N}, N required. */
    static int priority(byte[] raw) {
        JsonNode body = parse(raw);
        List<EntryError> errors = new ArrayList<>();
        unknownFields(body, Set.of("priority"), errors);
        Integer p = integer(body, "priority", errors);
        if (p == null && errors.stream().noneMatch(e -> "priority".equals(e.field())))
            errors.add(EntryError.field("priority", "required: an integer, higher is more urgent"));
        if (!errors.isEmpty()) throw new BadInput(HttpStatus.BAD_REQUEST, describe(errors), errors);
        return p;
    }

    /** A body {"field": [...]} of file names (the WLCG API calls them paths), nothing else; null when absent. */
    public static List<String> selection(byte[] raw, String field, boolean required) {
        if (raw.length == 0 || isBlank(raw)) {
            if (required) throw BadInput.field("body", "empty; expected {\"" + field + "\": [...]}");
            return null;
        }
        JsonNode body = parse(raw);
        List<EntryError> errors = new ArrayList<>();
        unknownFields(body, Set.of(field), errors);
        List<String> files = names(body, field, required, errors);
        if (!errors.isEmpty()) throw new BadInput(HttpStatus.BAD_REQUEST, describe(errors), errors);
        return files;
    }

    public static void unknownFields(JsonNode body, Set<String> known, List<EntryError> errors) {
        for (Map.Entry<String, JsonNode> e : body.properties()) {
            if (!known.contains(e.getKey())) errors.add(EntryError.field(e.getKey(), "unknown field; known fields are " + known));
        }
    }

    private static List<String> files(JsonNode body, boolean required, List<EntryError> errors) {
        return names(body, "files", required, errors);
    }

    /** A list of file names under {@code field}, at most MAX_FILES (413 beyond); type errors name each entry. */
    public static List<String> names(JsonNode body, String field, boolean required, List<EntryError> errors) {
        JsonNode node = body.get(field);
        if (node == null || node.isNull()) {
            if (required) errors.add(EntryError.field(field, "required: a list of logical file names"));
            return null;
        }
        if (!node.isArray()) {
            errors.add(EntryError.field(field, "expected a list of strings, got " + kind(node)));
            return null;
        }
        if (node.size() > StageRequests.MAX_FILES) {
            throw new BadInput(HttpStatus.CONTENT_TOO_LARGE, "a request may name at most " + StageRequests.MAX_FILES
                    + " files, this one names " + node.size(),
                    List.of(EntryError.field(field, node.size() + " files; at most " + StageRequests.MAX_FILES)));
        }
        List<String> files = new ArrayList<>(node.size());
        Iterator<JsonNode> it = node.iterator();
        for (int i = 0; it.hasNext(); i++) {
            JsonNode f = it.next();
            if (f.isString()) files.add(f.stringValue());
            else {
                errors.add(new EntryError(i, null, field, "expected a string (a logical file name), got " + kind(f)));
                files.add(null);
            }
        }
        return files;
    }

    private static String text(JsonNode body, String field, List<EntryError> errors) {
        JsonNode n = body.get(field);
        if (n == null || n.isNull()) return null;
        if (!n.isString()) {
            errors.add(EntryError.field(field, "expected a string, got " + kind(n)));
            return null;
        }
        return n.stringValue();
    }

    private static Integer integer(JsonNode body, String field, List<EntryError> errors) {
        JsonNode n = body.get(field);
        if (n == null || n.isNull()) return null;
        if (!n.isIntegralNumber() || !n.canConvertToInt()) {
            errors.add(EntryError.field(field, "expected an integer, got " + kind(n) + " " + abbreviate(n)));
            return null;
        }
        return n.intValue();
    }

    private static Long longValue(JsonNode body, String field, List<EntryError> errors) {
        JsonNode n = body.get(field);
        if (n == null || n.isNull()) return null;
        if (!n.isIntegralNumber() || !n.canConvertToLong()) {
            errors.add(EntryError.field(field, "expected an integer number of seconds, got " + kind(n) + " " + abbreviate(n)));
            return null;
        }
        return n.longValue();
    }

    public static String kind(JsonNode n) {
        if (n.isString()) return "a string";
        if (n.isIntegralNumber()) return "an integer";
        if (n.isNumber()) return "a fractional number";
        if (n.isBoolean()) return "a boolean";
        if (n.isArray()) return "a list";
        if (n.isObject()) return "an object";
        if (n.isNull()) return "null";
        return n.getNodeType().toString().toLowerCase();
    }

    private static String abbreviate(JsonNode n) {
        String s = n.toString();
        return s.length() > 40 ? s.substring(0, 40) + "..." : s;
    }

    public static String describe(List<EntryError> errors) {
        return errors.size() == 1 ? "1 error in the request" : errors.size() + " errors in the request";
    }

    private static boolean isBlank(byte[] b) {
        for (byte x : b) if (x != ' ' && x != '\n' && x != '\r' && x != '\t') return false;
        return true;
    }
}
