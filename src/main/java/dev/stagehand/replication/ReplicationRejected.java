package dev.stagehand.replication;

/** A replication call refused; nothing was changed. */
public final class ReplicationRejected extends RuntimeException {

    public enum Kind { INVALID, NOT_FOUND, CONFLICT }

    private final Kind kind;
    private final String field;

    public ReplicationRejected(Kind kind, String field, String message) {
        super(message);
        this.kind = kind;
        this.field = field;
    }

    public static ReplicationRejected invalid(String field, String message) {
        return new ReplicationRejected(Kind.INVALID, field, message);
    }

    public static ReplicationRejected notFound(String field, String message) {
        return new ReplicationRejected(Kind.NOT_FOUND, field, message);
    }

    public static ReplicationRejected conflict(String field, String message) {
        return new ReplicationRejected(Kind.CONFLICT, field, message);
    }

    public Kind kind() {
        return kind;
    }

    /** The offending input field, or null. */
    public String field() {
        return field;
    }
}
