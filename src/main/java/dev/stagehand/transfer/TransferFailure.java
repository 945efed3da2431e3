package dev.stagehand.transfer;

/** A typed transfer failure, so callers and the retry policy can tell transient trouble from final refusals. */
public final class TransferFailure extends RuntimeException {

    /**
     * What failed; {@link #retryable()} says whether another attempt can help, {@link #unreachable()} whether
     * the other end could not be reached or stopped answering (an outage: worth waiting out, not a bad file).
     */
    public enum Kind {
        /** Could not connect (refused, reset, host down). */
        CONNECTION(true, true),
        /** A command or transfer did not finish in time. */
        TIMEOUT(true, true),
        /** No bytes moved for the stall limit; the connection was closed by the watchdog. */
        STALL(true, true),
        /** The destination's Adler32 differs from the expected one (the local source's does not). */
        CHECKSUM_MISMATCH(true),
        /**
         * The local source's bytes do not have the expected Adler32 (a cached copy rotted on disk): sending
         * them again cannot help, so the file fails at once and its owner reads it anew.
         */
        SOURCE_CHECKSUM_MISMATCH(false),
        /** Any other server or protocol error (retried, as the server may be at fault). */
        PROTOCOL(true),
        /** Login or authorization refused (unknown DN, bad credential). */
        AUTHENTICATION(false),
        /** The server refused access to the path. */
        PERMISSION_DENIED(false),
        /** The destination directory (or the source) does not exist. */
        NO_SUCH_PATH(false),
        /** Quota exceeded or no space left on the destination. */
        QUOTA_EXCEEDED(false),
        /**
         * The other end lacks what the copy needs (a destination without ADLER32 checksums: CKSM answered "500
         * Unknown checksum algorithm requested."): another attempt gets the same answer, so the file fails at once.
         * Not the source's fault: a recall does not read the file from tape again for it.
         */
        UNSUPPORTED(false),
        /**
         * Another file is at the destination (not this transfer's: it had not written there), and overwriting is
         * not enabled for it ({@code stagehand.transfer.existing}): FTS3's "destination file exists and overwrite
         * is not enabled" (EEXIST). Another attempt finds the same file, so the transfer fails at once and the
         * file there is left as it is.
         */
        DESTINATION_EXISTS(false),
        /** The local source cannot be read, or the request is malformed. */
        BAD_REQUEST(false),
        /** Cancelled by the caller. */
        CANCELLED(false);

        private final boolean retryable;
        private final boolean unreachable;

        Kind(boolean retryable) {
            this(retryable, false);
        }

        Kind(boolean retryable, boolean unreachable) {
            this.retryable = retryable;
            this.unreachable = unreachable;
        }

        public boolean retryable() {
            return retryable;
        }

        public boolean unreachable() {
            return unreachable;
        }
    }

    private final Kind kind;
    private final String detail;
    private final int attempts;

    public TransferFailure(Kind kind, String message, int attempts, Throwable cause) {
        super(kind + ": " + message, cause);
        this.kind = kind;
        this.detail = message;
        this.attempts = attempts;
    }

    public TransferFailure(Kind kind, String message) {
        this(kind, message, 0, null);
    }

    public Kind kind() {
        return kind;
    }

    public boolean retryable() {
        return kind.retryable();
    }

    /** The same failure with {@code note} added to its message (what was done about it). */
    public TransferFailure withNote(String note) {
        return new TransferFailure(kind, detail + "; " + note, attempts, getCause());
    }

    /** Attempts made before giving up. */
    public int attempts() {
        return attempts;
    }
}
