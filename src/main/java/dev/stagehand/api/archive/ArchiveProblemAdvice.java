package dev.stagehand.api.archive;

import dev.stagehand.api.requests.BadInput;
import dev.stagehand.api.requests.ProblemAdvice;
import dev.stagehand.archive.ArchiveRejected;
import java.net.URI;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;

/**
 * RFC 9457 problem documents for the archive API, with the native API's {@code errors} array: 400 bad
 * input (checksum or size mismatch, path outside the landing area, ...), 404 unknown file, 409 a name
 * already in the catalog with other content (or a retry or delete the file's state does not allow), 413 too many
 * files, 503 with Retry-After when the buffer is at its high-water mark.
 */
@RestControllerAdvice(assignableTypes = ArchiveController.class)
class ArchiveProblemAdvice {

    @ExceptionHandler(BadInput.class)
    ResponseEntity<ProblemDetail> badInput(BadInput e) {
        return ProblemAdvice.problem(e.status(), e.getMessage(), e.errors());
    }

    @ExceptionHandler(ArchiveRejected.class)
    ResponseEntity<ProblemDetail> rejected(ArchiveRejected e) {
        HttpStatus status = switch (e.kind()) {
            case INVALID -> HttpStatus.BAD_REQUEST;
            case TOO_LARGE -> HttpStatus.CONTENT_TOO_LARGE; // as the stage request API (request-too-large)
            case CONFLICT -> HttpStatus.CONFLICT;
            case NOT_FOUND -> HttpStatus.NOT_FOUND;
            case BUFFER_FULL -> HttpStatus.SERVICE_UNAVAILABLE;
        };
        ResponseEntity<ProblemDetail> r = ProblemAdvice.problem(status, e.getMessage(), e.errors());
        ProblemDetail p = r.getBody();
        if (e.kind() == ArchiveRejected.Kind.NOT_FOUND) p.setType(URI.create("https://stagehand.dev/problems/no-such-file"));
        if (e.kind() == ArchiveRejected.Kind.BUFFER_FULL) {
            p.setType(URI.create("https://stagehand.dev/problems/buffer-full"));
            p.setTitle("Archive buffer at its high-water mark");
            return ResponseEntity.status(status).header(HttpHeaders.RETRY_AFTER, Long.toString(Math.max(1, e.retryAfter().toSeconds())))
                    .body(p);
        }
        return r;
    }
}
