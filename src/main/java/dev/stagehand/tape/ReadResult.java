package dev.stagehand.tape;

import java.time.Instant;

/**
 * A segment read to disk.
 *
 * @param segment   what was read
 * @param adler32   Adler32 of the bytes written to the target (computed while streaming)
 * @param locateSeconds time spent positioning before this segment (0 when streaming on)
 * @param startedAt when positioning for this segment began
 * @param finishedAt when its last byte was on disk
 */
public record ReadResult(SegmentRead segment, long adler32, double locateSeconds, Instant startedAt, Instant finishedAt) {}
