package dev.stagehand.recall;

import dev.stagehand.platform.EntryError;
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
