package dev.stagehand.tape;

/**
 * One drive's state.
 *
 * @param drive        drive name
 * @param state        what it is doing
 * @param volume       label of the volume in it (mounted, mounting or unloading), or null
 * @param bytesMoved   bytes read or written since the current volume was mounted (sets the rewind time)
 */
public record DriveStatus(String drive, DriveState state, String volume, long bytesMoved) {}
