package dev.stagehand.transfer;

import java.time.Instant;

/**
 * One row of the transfer queue, as callers see it. {@code notBefore}: a queued row is not claimed before then
 * (put back after an outage); {@code deferrals}: times it was put back; {@code wroteDestination}: a claim of the
 * row began writing at its destination (so what is there is the row's own, to resume, write over or clean up);
 * {@code overwrite}: its caller asked that a file there it did not write be written over (a replica's own place).
 */
public record TransferJob(long id, String correlation, String source, String destination, long sizeBytes, Long adler32,
                          String state, int attempts, String lastErrorClass, String lastError, long bytesMoved,
                          Double mbPerSecond, Instant createdAt, Instant startedAt, Instant finishedAt,
                          Instant notBefore, int deferrals, boolean wroteDestination, boolean overwrite) {

    /** A row whose caller did not ask to overwrite. */
    public TransferJob(long id, String correlation, String source, String destination, long sizeBytes, Long adler32,
                       String state, int attempts, String lastErrorClass, String lastError, long bytesMoved,
                       Double mbPerSecond, Instant createdAt, Instant startedAt, Instant finishedAt,
                       Instant notBefore, int deferrals, boolean wroteDestination) {
        this(id, correlation, source, destination, sizeBytes, adler32, state, attempts, lastErrorClass, lastError,
                bytesMoved, mbPerSecond, createdAt, startedAt, finishedAt, notBefore, deferrals, wroteDestination, false);
    }

    /** A row that has not written at its destination. */
    public TransferJob(long id, String correlation, String source, String destination, long sizeBytes, Long adler32,
                       String state, int attempts, String lastErrorClass, String lastError, long bytesMoved,
                       Double mbPerSecond, Instant createdAt, Instant startedAt, Instant finishedAt,
                       Instant notBefore, int deferrals) {
        this(id, correlation, source, destination, sizeBytes, adler32, state, attempts, lastErrorClass, lastError,
                bytesMoved, mbPerSecond, createdAt, startedAt, finishedAt, notBefore, deferrals, false, false);
    }

    public boolean finished() {
        return state.equals("done") || state.equals("failed") || state.equals("cancelled");
    }
}
