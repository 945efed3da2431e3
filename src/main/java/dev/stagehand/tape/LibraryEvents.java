package dev.stagehand.tape;

import java.time.Instant;
import java.util.List;

/**
 * What a library tells its observers: every drive state transition (persisted, so a restart knows which
 * tape is in which drive), mounts, segments read or failed, files written, dismounts. The demo prints
 * them; the console shows them. Called after the library's own state has changed, outside its lock, in
 * order; listeners must be quick (or hand work to another thread).
 */
public interface LibraryEvents {

    /** Listens to nothing: the pure simulation runs without a database. */
    LibraryEvents NONE = new LibraryEvents() {};

    /** A drive changed state or volume. */
    default void driveChanged(String library, DriveStatus status, Instant at) {}

    /** A mount was requested (the drive is now MOUNTING; it may still wait for an accessor). */
    default void mountStarted(String drive, String volume, Instant at) {}

    /** A mount finished: {@code failure} is null when the volume is loaded and ready at BOT. */
    default void mountFinished(String drive, String volume, Instant at, TapeFailure failure) {}

    /** A segment's bytes are in its target. */
    default void segmentRead(String drive, ReadResult result) {}

    /** A segment could not be read. */
    default void segmentFailed(String drive, SegmentRead segment, TapeFailure failure, Instant at) {}

    /** A file was appended to the mounted volume. */
    default void fileWritten(String drive, WriteBatch.WrittenSegment written, Instant at) {}

    /** A volume is back in its slot and the drive is empty. */
    default void dismounted(String drive, String volume, Instant at) {}

    /** Tells each of {@code listeners}, in order. */
    static LibraryEvents all(List<LibraryEvents> listeners) {
        List<LibraryEvents> copy = List.copyOf(listeners);
        if (copy.isEmpty()) return NONE;
        if (copy.size() == 1) return copy.get(0);
        return new LibraryEvents() {
            @Override
            public void driveChanged(String library, DriveStatus status, Instant at) {
                for (LibraryEvents l : copy) l.driveChanged(library, status, at);
            }

            @Override
            public void mountStarted(String drive, String volume, Instant at) {
                for (LibraryEvents l : copy) l.mountStarted(drive, volume, at);
            }

            @Override
            public void mountFinished(String drive, String volume, Instant at, TapeFailure failure) {
                for (LibraryEvents l : copy) l.mountFinished(drive, volume, at, failure);
            }

            @Override
            public void segmentRead(String drive, ReadResult result) {
                for (LibraryEvents l : copy) l.segmentRead(drive, result);
            }

            @Override
            public void segmentFailed(String drive, SegmentRead segment, TapeFailure failure, Instant at) {
                for (LibraryEvents l : copy) l.segmentFailed(drive, segment, failure, at);
            }

            @Override
            public void fileWritten(String drive, WriteBatch.WrittenSegment written, Instant at) {
                for (LibraryEvents l : copy) l.fileWritten(drive, written, at);
            }

            @Override
            public void dismounted(String drive, String volume, Instant at) {
                for (LibraryEvents l : copy) l.dismounted(drive, volume, at);
            }
        };
    }
}
