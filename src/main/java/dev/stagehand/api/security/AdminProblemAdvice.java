package dev.stagehand.api.security;

import dev.stagehand.api.requests.ProblemAdvice;
import org.springframework.web.bind.annotation.RestControllerAdvice;

/** The API's RFC 9457 problem documents for the accounts and tokens API. */
@RestControllerAdvice(assignableTypes = AdminController.class)
class AdminProblemAdvice extends ProblemAdvice {}
