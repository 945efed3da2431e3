package dev.stagehand.platform;

/**
 * One offending entry of a refused call: a file of the submitted list ({@code index} 0-based,
 * {@code path}) or a field of the call. Every module's refusals (stage requests, archive registrations,
 * replication rules, the Tape REST API) use this one type, so the API writes the same {@code errors}
 * array for all of them.
 */
public record EntryError(Integer index, String path, String field, String reason) {
    public static EntryError file(int index, String path, String reason) {
        return new EntryError(index, path, null, reason);
    }

    public static EntryError field(String field, String reason) {
        return new EntryError(null, null, field, reason);
    }
}
