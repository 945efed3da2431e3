package dev.stagehand.tape;

/**
 * One drive's state.
 *
 * @param drive         drive name
 * @param state         what it is doing
 * @param volume        label of the volume in it (mounted, mounting or unloading), or null
 * @param bytesMoved    bytes read or written since the current volume was mounted (sets the rewind time)
 * @param downRequested an operator disabled it while it held a volume: it takes no new work, is unloaded once its
 *                      current list ends and is then DISABLED (CTA's drive "down")
 */
public record DriveStatus(String drive, DriveState state, String volume, long bytesMoved, boolean downRequested) {

    /** A drive no operator has asked to take down. */
    public DriveStatus(String drive, DriveState state, String volume, long bytesMoved) {
        this(drive, state, volume, bytesMoved, false);
    }
}
