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

/**
 * A query string Tomcat cannot decode (a bad %-escape) fails when a controller reads a parameter: it was logged as
 * an error and answered with Spring Boot's error body, not the API's problem document.
 */
@RestControllerAdvice(basePackages = "dev.stagehand.api")
@Order(Ordered.LOWEST_PRECEDENCE)
class QueryProblemAdvice {

    @ExceptionHandler(InvalidParameterException.class)
    ResponseEntity<ProblemDetail> unreadableQuery(InvalidParameterException e) {
        String why = "the query string cannot be read: a parameter holds a bad %-escape";
        return ProblemAdvice.problem(HttpStatus.BAD_REQUEST, why, List.of(EntryError.field("query", why)));
    }
}
