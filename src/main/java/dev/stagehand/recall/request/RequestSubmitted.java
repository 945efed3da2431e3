package dev.stagehand.recall.request;

import java.util.UUID;

/**
 * A stage request was committed in this instance. A hint for the recall scheduler here to take it at once;
 * the request's rows are what every instance's intake reads, hint or not.
 */
public record RequestSubmitted(UUID request) {}
