package dev.stagehand.archive;

import dev.stagehand.platform.EntryError;
import java.time.Duration;
import java.util.List;

/** A registration refused; nothing was stored. {@code errors} names each offending entry. */
public final class ArchiveRejected extends RuntimeException {

    public enum Kind {
        /** the input is wrong (bad path, size or checksum mismatch, unknown storage class, ...) */
        INVALID,
        /** more files than one call may register ({@code stagehand.archive.max-files-per-call}) */
        TOO_LARGE,
        /** a file of that name is already in the catalog with other content */
        CONFLICT,
        /** accepting the files would take the buffer past its high-water mark: retry after {@link #retryAfter()} */
        BUFFER_FULL,
        /** no such file */
        NOT_FOUND
    }

    private final Kind kind;
    private final transient List<EntryError> errors;
    private final Duration retryAfter;

    public ArchiveRejected(Kind kind, String message, List<EntryError> errors, Duration retryAfter) {
        super(message);
        this.kind = kind;
        this.errors = List.copyOf(errors);
        this.retryAfter = retryAfter;
    }

    public ArchiveRejected(Kind kind, String message, List<EntryError> errors) {
        this(kind, message, errors, null);
    }

    public Kind kind() {
        return kind;
    }

    public List<EntryError> errors() {
        return errors;
    }

    /** For BUFFER_FULL: when a retry may succeed; otherwise null. */
    public Duration retryAfter() {
        return retryAfter;
    }
}
