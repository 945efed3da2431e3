package dev.stagehand.tape;

import java.util.Collection;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The driver SPI: one tape library, shaped for bulk work in the spirit of dCache's nearline-storage SPI.
 * A volume is mounted on a drive; a whole ordered list of its segments is then read (or files written) in
 * one call; the drive is dismounted. Every operation is asynchronous, every request cancellable, and
 * failures arrive typed as {@link TapeFailure} so the caller can retry, try another copy, or disable a
 * drive or volume.
 *
 * <p>Implementations: the simulated library (the embedded default, on an {@code EventClock}) and the
 * script driver that calls site-provided executables for a real HSM.
 */
public interface TapeLibrary {

    /** Drives, accessors and the library's name. */
    LibraryLayout layout();

    /** Current state of every drive. */
    List<DriveStatus> drives();

    /**
     * Moves {@code volume} into {@code drive} and loads it (waiting for a free accessor first). Completes
     * when the volume is ready to read at BOT; fails with {@link TapeFailure}. Cancelling the future
     * abandons the mount; the library brings the drive back to a consistent state by itself.
     */
    CompletableFuture<Void> mount(String drive, String volume);

    /**
     * Reads {@code segments} from the volume mounted on {@code drive}, in the order given, each into its
     * target file. Each segment completes or fails on its own; see {@link ReadBatch}. A read or write asked
     * while a list is still under way on the drive is queued behind it.
     */
    ReadBatch read(String drive, List<SegmentRead> segments);

    /**
     * Whether {@link #read} accepts segments without a target: their bytes are streamed past and dropped.
     * The recall scheduler uses such segments to read through a small gap between two wanted files when
     * that is quicker than a locate. Off unless the driver says so.
     */
    default boolean readsWithoutTarget() {
        return false;
    }

    /**
     * Whether {@link ReadBatch#cancel} really drops a segment not yet started (the drive skips it). A site's
     * script reads its whole list whatever is cancelled, so cutting a list short there would read the dropped
     * files twice; the recall scheduler only cuts lists where this holds. Off unless the driver says so.
     */
    default boolean dropsCancelledReads() {
        return false;
    }

    /**
     * Mounts and dismounts under way in the library besides those on {@code drives} (the caller's own, which it
     * counts itself): those of other service instances sharing the library ({@link SharedDrives}, from their drive
     * leases) and of this instance's other users of it there. They take the same accessors: a scheduler limiting the
     * exchanges it starts counts them with its own. 0 unless the driver knows.
     */
    default int exchangesUnderWayBesides(Collection<String> drives) {
        return 0;
    }

    /**
     * Takes one of the accessors' exchanges for a mount about to start on {@code drive} ({@link #mount} follows at
     * once): true, and the mount noted under way, when fewer than {@code budget} are under way besides those on
     * {@code drives} ({@link #exchangesUnderWayBesides}); the count and the note are one step, so two users of the
     * library deciding at the same instant do not both take the last one. False: the caller starts no exchange now
     * and tries again later. True unless the driver knows of other users.
     */
    default boolean reserveMount(String drive, Collection<String> drives, int budget) {
        return true;
    }

    /** Appends {@code files} to the volume mounted on {@code drive}, in order (the archive path). */
    WriteBatch write(String drive, List<FileWrite> files);

    /** Unloads the mounted volume and returns it to its slot. */
    CompletableFuture<Void> dismount(String drive);

    /**
     * Operator action: takes an empty drive out of service (DISABLED) or puts a disabled one back (EMPTY). A drive
     * holding a volume is marked down instead ({@link DriveStatus#downRequested()}, CTA's "down"): the schedulers give
     * it no new work from their next round and unload it once its current list ends; the library then has it
     * DISABLED. A list asked of it meanwhile (before a scheduler's round saw the down) is refused, not started:
     * its items fail with {@link TapeFailure.Kind#DRIVE_DOWN}. Enabling it before then cancels that. Refused (IllegalStateException) for a failed drive.
     */
    void setEnabled(String drive, boolean enabled);

    /**
     * Operator action after a repair: a FAILED drive is EMPTY again, its stuck cartridge (if any) back in its
     * slot. Completes when done; the schedulers use the drive again at their next round. Refused
     * (IllegalStateException) for a drive that is not FAILED.
     */
    CompletableFuture<Void> recover(String drive);
}
