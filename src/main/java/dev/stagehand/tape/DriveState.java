package dev.stagehand.tape;

/** What a drive is doing. Persisted, so a restart knows which tape is in which drive. */
public enum DriveState {
    EMPTY, MOUNTING, MOUNTED_IDLE, LOCATING, READING, WRITING, UNLOADING, FAILED, DISABLED
}
