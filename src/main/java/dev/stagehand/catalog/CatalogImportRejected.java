package dev.stagehand.catalog;

import java.util.List;

/**
 * A catalog dump that was not imported because some rows are malformed or contradict each other (or the
 * catalog). Nothing from the dump was committed.
 *
 * @param errors     the first errors, in line order (at most {@link CatalogImporter#MAX_REPORTED_ERRORS})
 * @param errorCount how many errors were found in all (at least errors.size())
 */
public final class CatalogImportRejected extends RuntimeException {

    /** A problem with one line of the dump; line numbers count every physical line from 1. */
    public record RowError(long line, String reason) {
        @Override
        public String toString() {
            return line > 0 ? "line " + line + ": " + reason : reason;
        }
    }

    private final transient List<RowError> errors;
    private final long errorCount;

    public CatalogImportRejected(String source, List<RowError> errors, long errorCount) {
        super(source + ": " + errorCount + " error(s), nothing imported; first: " + errors.getFirst());
        this.errors = List.copyOf(errors);
        this.errorCount = errorCount;
    }

    public List<RowError> errors() {
        return errors;
    }

    public long errorCount() {
        return errorCount;
    }
}
