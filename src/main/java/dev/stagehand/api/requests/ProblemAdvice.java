package dev.stagehand.api.requests;

import dev.stagehand.recall.StageRequestRejected;
import dev.stagehand.platform.EntryError;
import java.net.URI;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.http.HttpStatus;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;

/**
 * Turns refusals into RFC 9457 problem documents (application/problem+json) with an {@code errors} array:
 * one {index, path, field, reason} object per offending entry (absent members omitted).
 * Status codes: 400 invalid input, 404 unknown request, 409 finished request or reused clientRequestId
 * with other content, 413 more than 100,000 files or a body over 64 MiB.
 */
@RestControllerAdvice(assignableTypes = RequestsController.class)
public class ProblemAdvice {

    @ExceptionHandler(BadInput.class)
    public ResponseEntity<ProblemDetail> badInput(BadInput e) {
        return problem(e.status, e.getMessage(), e.errors);
    }

    @ExceptionHandler(StageRequestRejected.class)
    public ResponseEntity<ProblemDetail> rejected(StageRequestRejected e) {
        HttpStatus status = switch (e.kind()) {
            case INVALID -> HttpStatus.BAD_REQUEST;
            case TOO_LARGE -> HttpStatus.CONTENT_TOO_LARGE;
            case NOT_FOUND -> HttpStatus.NOT_FOUND;
            case CONFLICT -> HttpStatus.CONFLICT;
        };
        return problem(status, e.getMessage(), e.errors());
    }

    public static ResponseEntity<ProblemDetail> problem(HttpStatus status, String detail, List<EntryError> errors) {
        ProblemDetail p = ProblemDetail.forStatusAndDetail(status, detail);
        p.setType(URI.create("https://stagehand.dev/problems/" + switch (status) {
            case NOT_FOUND -> "no-such-request";
            case CONFLICT -> "conflict";
            case CONTENT_TOO_LARGE -> "request-too-large";
            case TOO_MANY_REQUESTS -> "too-many-requests";
            default -> "invalid-request";
        }));
        p.setProperty("errors", errors.stream().map(ProblemAdvice::entry).toList());
        return ResponseEntity.status(status).body(p);
    }

    private static Map<String, Object> entry(EntryError e) {
        Map<String, Object> m = new LinkedHashMap<>();
        if (e.index() != null) m.put("index", e.index());
        if (e.path() != null) m.put("path", e.path());
        if (e.field() != null) m.put("field", e.field());
        m.put("reason", e.reason());
        return m;
    }
}
