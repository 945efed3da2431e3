package dev.stagehand.transfer;

import java.time.Duration;

/**
 * A file moved and verified.
 *
 * @param copy     what was asked
 * @param bytes    the file's size (bytes resent by retries or resumes are not counted: see the listener)
 * @param elapsed  time from the first attempt's start to verification
 * @param attempts attempts used (1 when nothing went wrong; 0: the same file was at the destination already and
 *                 nothing was sent, see {@link FileCopy.Existing})
 * @param host     the destination host that took it
 * @param adler32  the Adler32 the destination reported (equal to the expected one), or -1 when unverified
 */
public record CopyResult(FileCopy copy, long bytes, Duration elapsed, int attempts, String host, long adler32) {}
