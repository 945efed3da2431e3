package dev.stagehand.recall;

import java.util.List;

/**
 * A call of {@link StageRequests} that was refused; nothing was stored or changed. {@code errors} names each
 * offending entry: the index and path of a file in the submitted list, or a field of the request.
 */
public final class StageRequestRejected extends RuntimeException {

    public enum Kind {
        /** the input is wrong (unknown or duplicate files, bad paths, bad fields) */
        INVALID,
        /** more files than {@link StageRequests#MAX_FILES} */
        TOO_LARGE,
        /** no such request */
        NOT_FOUND,
        /** the request is finished, or a client request id is reused with other content */
        CONFLICT
    }

    /** One offending entry: a file ({@code index} 0-based, {@code path}) or a request field. */
    public record EntryError(Integer index, String path, String field, String reason) {
        public static EntryError file(int index, String path, String reason) {
            return new EntryError(index, path, null, reason);
        }

        public static EntryError field(String field, String reason) {
            return new EntryError(null, null, field, reason);
        }
    }

    private final Kind kind;
    private final transient List<EntryError> errors;

    public StageRequestRejected(Kind kind, String message, List<EntryError> errors) {
        super(message);
        this.kind = kind;
        this.errors = List.copyOf(errors);
    }

    public Kind kind() {
        return kind;
    }

    public List<EntryError> errors() {
        return errors;
    }
}
