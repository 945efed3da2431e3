package dev.stagehand.transfer;

import java.time.Instant;

/** One row of the transfer queue, as callers see it. */
public record TransferJob(long id, String correlation, String source, String destination, long sizeBytes, Long adler32,
                          String state, int attempts, String lastErrorClass, String lastError, long bytesMoved,
                          Double mbPerSecond, Instant createdAt, Instant startedAt, Instant finishedAt) {

    public boolean finished() {
        return state.equals("done") || state.equals("failed") || state.equals("cancelled");
    }
}
