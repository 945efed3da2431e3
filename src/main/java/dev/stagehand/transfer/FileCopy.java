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
 * @param existing    what the mover does about a file already at the destination before it first writes there
 * @param writing     run by the mover once per file, before its first write at the destination (after the look
 *                    {@code existing} asks for): the transfer queue records there that the row has written
 *                    there, so that only then is the destination its to resume or clean up. A throw (a
 *                    {@link TransferFailure} or any other) fails the attempt before anything is written
 */
public record FileCopy(String id, URI source, URI destination, long sizeBytes, Long adler32, Existing existing,
                       Runnable writing) {

    /** Written over whatever the destination holds, without looking first (the mover's callers before the queue's). */
    public FileCopy(String id, URI source, URI destination, long sizeBytes, Long adler32) {
        this(id, source, destination, sizeBytes, adler32, Existing.WRITE, () -> {});
    }

    public FileCopy {
        if (existing == null) existing = Existing.WRITE;
        if (writing == null) writing = () -> {};
    }

    /** What a mover does about a file already at the destination, before it first writes there. */
    public enum Existing {
        /** Writes over it without looking (a file this transfer began writing itself, to resume). */
        WRITE,
        /**
         * Looks first (SIZE, then CKSM ADLER32): the same file (size and Adler32) is done without sending it, any
         * other fails the copy with {@link TransferFailure.Kind#DESTINATION_EXISTS} and is left alone (FTS3's default).
         */
        KEEP,
        /** Looks first: the same file is done without sending it; any other is overwritten (FTS3's overwrite). */
        REPLACE
    }
}
