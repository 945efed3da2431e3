package dev.stagehand.api.requests;

import dev.stagehand.platform.EntryError;
import java.util.List;
import org.apache.tomcat.util.http.InvalidParameterException;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.http.HttpStatus;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;
import org.springframework.web.method.annotation.MethodArgumentTypeMismatchException;

/**
 * URL parameters the API cannot read, as its problem documents. A query string Tomcat cannot decode (a bad %-escape)
 * fails when a controller reads a parameter: it was logged as an error and answered with Spring Boot's error body. A
 * query parameter Spring converts to a number ({@code ?limit=ten}) was answered by Spring Boot's handler, without the
 * {@code errors} array naming it; this advice comes before that one (order 0), and no other advice of the API handles
 * these exceptions. (The numeric ids in paths never get here: their controllers parse them, see {@link NumericIds}.)
 */
@RestControllerAdvice(basePackages = "dev.stagehand.api")
@Order(Ordered.HIGHEST_PRECEDENCE)
class QueryProblemAdvice {

    @ExceptionHandler(InvalidParameterException.class)
    ResponseEntity<ProblemDetail> unreadableQuery(InvalidParameterException e) {
        String why = "the query string cannot be read: a parameter holds a bad %-escape";
        return ProblemAdvice.problem(HttpStatus.BAD_REQUEST, why, List.of(EntryError.field("query", why)));
    }

    @ExceptionHandler(MethodArgumentTypeMismatchException.class)
    ResponseEntity<ProblemDetail> mistyped(MethodArgumentTypeMismatchException e) {
        String value = String.valueOf(e.getValue());
        String reason = "expected " + expected(e) + ", got '" + BadInput.shown(value) + "'";
        return ProblemAdvice.problem(HttpStatus.BAD_REQUEST, e.getName() + ": " + reason, List.of(EntryError.field(e.getName(), reason)));
    }

    private static String expected(MethodArgumentTypeMismatchException e) {
        Class<?> t = e.getRequiredType();
        if (t == int.class || t == Integer.class) return "an integer from " + Integer.MIN_VALUE + " to " + Integer.MAX_VALUE;
        if (t == long.class || t == Long.class) return "an integer from " + Long.MIN_VALUE + " to " + Long.MAX_VALUE;
        return t == null ? "another value" : "a " + t.getSimpleName();
    }
}
