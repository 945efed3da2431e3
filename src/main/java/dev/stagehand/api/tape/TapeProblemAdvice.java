package dev.stagehand.api.tape;

import dev.stagehand.api.requests.ProblemAdvice;
import dev.stagehand.platform.EntryError;
import java.util.List;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;

/** The native API's RFC 9457 problem documents for the WLCG Tape REST API, plus 429 with Retry-After. */
@RestControllerAdvice(assignableTypes = TapeRestController.class)
class TapeProblemAdvice extends ProblemAdvice {

    @ExceptionHandler(TooManyRequests.class)
    ResponseEntity<ProblemDetail> tooMany(TooManyRequests e) {
        ResponseEntity<ProblemDetail> p = problem(HttpStatus.TOO_MANY_REQUESTS, e.getMessage(),
                List.of(EntryError.field("files", e.getMessage())));
        return ResponseEntity.status(p.getStatusCode()).header(HttpHeaders.RETRY_AFTER, Long.toString(e.retryAfterSeconds))
                .body(p.getBody());
    }
}
