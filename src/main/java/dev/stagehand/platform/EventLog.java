package dev.stagehand.platform;

import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.spi.LoggingEventBuilder;

/**
 * One structured event line on a dedicated logger (e.g. {@code stagehand.events.transfer}): the message is
 * the event in logfmt ({@code key=value key="quoted value"}), so any log file can be analysed offline with
 * logfmt tools, and the same fields are attached as SLF4J key-value pairs, so a JSON encoder (Spring Boot's
 * {@code logging.structured.format.*}, Logback's JsonEncoder) emits them as fields.
 */
public final class EventLog {

    private final Map<String, Object> fields = new LinkedHashMap<>();

    private EventLog(String event) {
        fields.put("event", event);
    }

    /** Starts an event line of kind {@code event} (mount, dismount, transfer). */
    public static EventLog event(String event) {
        return new EventLog(event);
    }

    /** Adds a field; null values are left out. Doubles are written with 3 decimals, instants in ISO-8601 UTC. */
    public EventLog with(String key, Object value) {
        if (value != null) fields.put(key, value);
        return this;
    }

    public Map<String, Object> fields() {
        return fields;
    }

    /** Writes the line at INFO. */
    public void log(Logger logger) {
        if (!logger.isInfoEnabled()) return;
        LoggingEventBuilder b = logger.atInfo();
        for (var e : fields.entrySet()) b = b.addKeyValue(e.getKey(), text(e.getValue()));
        b.log(toString());
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder();
        for (var e : fields.entrySet()) {
            if (!sb.isEmpty()) sb.append(' ');
            sb.append(e.getKey()).append('=').append(quote(text(e.getValue())));
        }
        return sb.toString();
    }

    private static String text(Object v) {
        if (v instanceof Double d) return Double.isFinite(d) ? String.format(Locale.ROOT, "%.3f", d) : "NaN";
        if (v instanceof Float f) return text(f.doubleValue());
        if (v instanceof Instant i) return i.toString();
        return String.valueOf(v);
    }

    /** logfmt: bare when the value has no space, quote, equals sign or control character; else quoted and escaped. */
    static String quote(String s) {
        boolean bare = !s.isEmpty();
        for (int i = 0; i < s.length() && bare; i++) {
            char c = s.charAt(i);
            if (c <= ' ' || c == '"' || c == '=' || c == '\\' || c == 0x7f) bare = false;
        }
        if (bare) return s;
        StringBuilder sb = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                default -> sb.append(c < ' ' ? ' ' : c);
            }
        }
        return sb.append('"').toString();
    }

    /** Parses a logfmt line back into its fields (for tests and offline tools written in Java). */
    public static Map<String, String> parse(String line) {
        Map<String, String> out = new LinkedHashMap<>();
        int i = 0, n = line.length();
        while (i < n) {
            while (i < n && line.charAt(i) == ' ') i++;
            int eq = line.indexOf('=', i);
            if (eq < 0) break;
            String key = line.substring(i, eq);
            i = eq + 1;
            StringBuilder v = new StringBuilder();
            if (i < n && line.charAt(i) == '"') {
                i++;
                while (i < n && line.charAt(i) != '"') {
                    char c = line.charAt(i++);
                    if (c == '\\' && i < n) {
                        char e = line.charAt(i++);
                        v.append(switch (e) { case 'n' -> '\n'; case 'r' -> '\r'; case 't' -> '\t'; default -> e; });
                    } else {
                        v.append(c);
                    }
                }
                i++;
            } else {
                while (i < n && line.charAt(i) != ' ') v.append(line.charAt(i++));
            }
            out.put(key, v.toString());
        }
        return out;
    }
}
