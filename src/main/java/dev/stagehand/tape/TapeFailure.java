package dev.stagehand.tape;

/**
 * A typed tape failure, so callers can choose: retry, read another copy, or disable a drive or volume.
 */
public final class TapeFailure extends RuntimeException {

    /** What failed. */
    public enum Kind {
        /** The medium could not deliver one segment (bad block); another copy may be good. */
        MEDIA_ERROR,
        /** The drive failed; the volume may be fine in another drive. Disable the drive. */
        DRIVE_FAILURE,
        /** The volume cannot be mounted (missing from the library, broken, disabled). */
        VOLUME_UNAVAILABLE,
        /** An operation did not finish in its time limit. */
        TIMEOUT,
        /**
         * A list refused, not started, because an operator is taking the drive down ({@link DriveStatus#downRequested()}):
         * nothing is wrong with the drive, the volume or the files. They go back to their queue; the drive is unloaded.
         */
        DRIVE_DOWN
    }

    private final Kind kind;
    private final String drive;
    private final String volume;

    public TapeFailure(Kind kind, String drive, String volume, String message) {
        super(kind + (drive != null ? " on drive " + drive : "") + (volume != null ? " volume " + volume : "")
                + ": " + message);
        this.kind = kind;
        this.drive = drive;
        this.volume = volume;
    }

    public Kind kind() {
        return kind;
    }

    public String drive() {
        return drive;
    }

    public String volume() {
        return volume;
    }
}
