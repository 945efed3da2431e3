package dev.stagehand.api.tape;

/** The service holds as much open stage work as it admits: try again after {@code retryAfterSeconds}. */
final class TooManyRequests extends RuntimeException {
    final long retryAfterSeconds;

    TooManyRequests(String message, long retryAfterSeconds) {
        super(message);
        this.retryAfterSeconds = retryAfterSeconds;
    }
}
