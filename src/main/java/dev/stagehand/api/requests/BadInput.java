package dev.stagehand.api.requests;

import dev.stagehand.platform.EntryError;
import java.util.List;
import org.springframework.http.HttpStatus;

/** Input the API refused before reaching the service (malformed JSON, wrong types, bad parameters). */
public final class BadInput extends RuntimeException {

    /** The longest free text a caller writes for people to read (a token's label, a replica declaration's reason). */
    public static final int MAX_TEXT = 200;

    /** A caller's text as an error message quotes it: its first 60 characters (an id may be 100 kB). */
    public static String shown(String text) {
        return text.length() > 60 ? text.substring(0, 60) + "..." : text;
    }

    final HttpStatus status;
    final transient List<EntryError> errors;

    public BadInput(HttpStatus status, String message, List<EntryError> errors) {
        super(message);
        this.status = status;
        this.errors = List.copyOf(errors);
    }

    public HttpStatus status() {
        return status;
    }

    public List<EntryError> errors() {
        return errors;
    }

    /** An unknown id, or one that does not parse, of a {@code what} ("request", "token"): 404 naming the {@code id} field. */
    public static BadInput notFound(String what, String id) {
        String message = "no " + what + " " + shown(id);
        return new BadInput(HttpStatus.NOT_FOUND, message, List.of(EntryError.field("id", message)));
    }

    public static BadInput field(String field, String reason) {
        return new BadInput(HttpStatus.BAD_REQUEST, field + ": " + reason, List.of(EntryError.field(field, reason)));
    }

    /** A whole-number query parameter from {@code min} to {@code max}; {@code dflt} when absent; else refused naming it. */
    public static int intParam(String name, String value, int dflt, int min, int max) {
        return (int) longParam(name, value, dflt, min, max);
    }

    /** A whole-number query parameter (a row id, say) from {@code min} to {@code max}; {@code dflt} when absent; else refused naming it. */
    public static long longParam(String name, String value, long dflt, long min, long max) {
        if (value == null) return dflt;
        try {
            long v = Long.parseLong(value);
            if (v >= min && v <= max) return v;
        } catch (NumberFormatException ignored) {
            // answered below
        }
        throw field(name, "expected an integer from " + min + " to " + max + ", got '" + value + "'");
    }

    /**
     * {@code value}, refused naming {@code field} when it holds a NUL: no name, expression or reason does, and
     * PostgreSQL refuses one in a query parameter (the call was a 500). Null passes.
     */
    public static String noNul(String field, String value) {
        if (value != null && value.indexOf('\0') >= 0) throw field(field, "contains a NUL character");
        return value;
    }
}
