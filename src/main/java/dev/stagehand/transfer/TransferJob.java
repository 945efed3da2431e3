package dev.stagehand.transfer;

import java.time.Instant;

/**
 * One row of the transfer queue, as callers see it. {@code notBefore}: a queued row is not claimed before then
 * (put back after an outage); {@code deferrals}: times it was put back.
 */
public record TransferJob(long id, String correlation, String source, String destination, long sizeBytes, Long adler32,
                          String state, int attempts, String lastErrorClass, String lastError, long bytesMoved,
                          Double mbPerSecond, Instant createdAt, Instant startedAt, Instant finishedAt,
                          Instant notBefore, int deferrals) {

    public boolean finished() {
        return state.equals("done") || state.equals("failed") || state.equals("cancelled");
    }
}
