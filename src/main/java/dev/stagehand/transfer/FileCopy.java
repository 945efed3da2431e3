package dev.stagehand.transfer;

import java.net.URI;

/**
 * One file to move.
 *
 * @param id          caller's name for it (e.g. a catalog file id or a transfer_job id)
 * @param source      {@code file:} URI of a local file, or a {@code gsiftp://}/{@code ftp://} URI (third-party)
 * @param destination destination file URL; its authority may list several hosts, comma separated
 *                    ({@code gsiftp://a:2811,b:2811/data/f}), which the link balances across
 * @param sizeBytes   expected size
 * @param adler32     expected Adler32 (from the catalog); {@code null} computes it from a local source while
 *                    sending, or skips the check for a third-party source
 */
public record FileCopy(String id, URI source, URI destination, long sizeBytes, Long adler32) {}
