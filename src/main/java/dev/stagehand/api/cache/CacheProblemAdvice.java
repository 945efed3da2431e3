package dev.stagehand.api.cache;

import dev.stagehand.api.requests.ProblemAdvice;
import org.springframework.web.bind.annotation.RestControllerAdvice;

/** The API's RFC 9457 problem documents for the cache admin API. */
@RestControllerAdvice(assignableTypes = CacheController.class)
class CacheProblemAdvice extends ProblemAdvice {}
