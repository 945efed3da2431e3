package dev.stagehand.tape;

/** What a drive is doing. Persisted, so a restart knows which tape is in which drive. */
public enum DriveState {
    EMPTY, MOUNTING, MOUNTED_IDLE, LOCATING, READING, WRITING, UNLOADING, FAILED, DISABLED,
    /**
     * In use by another service instance sharing the library ({@code stagehand.tape.shared-drives}): a view of
     * this instance's, never persisted. Nothing here mounts on it until its drive lease is free.
     */
    ELSEWHERE;

    /**
     * Whether a drive in this state has a cartridge in it or on its way in or out (mounting to unloading): an
     * operator's disable then takes it down once its current list ends, rather than at once.
     */
    public boolean holdsVolume() {
        return switch (this) {
            case MOUNTING, MOUNTED_IDLE, LOCATING, READING, WRITING, UNLOADING -> true;
            default -> false;
        };
    }
}
