package dev.stagehand.api.replication;

import dev.stagehand.api.requests.BadInput;
import dev.stagehand.api.requests.ProblemAdvice;
import dev.stagehand.platform.EntryError;
import dev.stagehand.replication.ReplicationRejected;
import java.util.List;
import org.springframework.http.HttpStatus;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;

/** RFC 9457 problem documents for the replication API: 400 invalid input, 404 unknown name, 409 conflict. */
@RestControllerAdvice(assignableTypes = ReplicationController.class)
public class ReplicationProblemAdvice {

    @ExceptionHandler(BadInput.class)
    public ResponseEntity<ProblemDetail> badInput(BadInput e) {
        return ProblemAdvice.problem(e.status(), e.getMessage(), e.errors());
    }

    @ExceptionHandler(ReplicationRejected.class)
    public ResponseEntity<ProblemDetail> rejected(ReplicationRejected e) {
        HttpStatus status = switch (e.kind()) {
            case INVALID -> HttpStatus.BAD_REQUEST;
            case NOT_FOUND -> HttpStatus.NOT_FOUND;
            case CONFLICT -> HttpStatus.CONFLICT;
        };
        return ProblemAdvice.problem(status, e.getMessage(),
                List.of(e.field() == null ? EntryError.field("request", e.getMessage()) : EntryError.field(e.field(), e.getMessage())));
    }
}
