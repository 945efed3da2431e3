package dev.stagehand.platform;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Forces a written file to stable storage before a database row says it is there. A closed file's bytes may
 * still be only in the page cache: a power cut then leaves the file empty or short while its row, committed,
 * says it is whole. Its name is in its directory, which a power cut may lose too unless the directory is forced
 * as well (PostgreSQL and dCache pools do the same: fsync the file, then its directory).
 *
 * <p>An interface so drivers can be given another one in tests (to see that a file is forced before it is
 * reported); {@link #FSYNC} is the real one. Takes from milliseconds to about a second per GB written: call it
 * in the thread that wrote the file, never under a lock other threads wait for.
 */
@FunctionalInterface
public interface Durable {

    /** Forces {@code file}'s bytes and its entry in its directory to disk. */
    void force(Path file) throws IOException;

    /** fsync(2) of the file, then of its directory. */
    Durable FSYNC = Durable::fsync;

    /**
     * A file written but not forced to disk: the disk it is on is at fault, not where its bytes came from. A tape
     * driver fails a segment read with it so that the disk cache can count such failures per directory and take a
     * directory whose fsync keeps failing out of service; every such file is otherwise read from tape again.
     */
    final class NotForced extends UncheckedIOException {
        private final Path file;

        public NotForced(Path file, IOException cause) {
            super("cannot force " + file + " to disk", cause);
            this.file = file;
        }

        public Path file() {
            return file;
        }
    }

    /** fsync(2) of the file, then of its directory. */
    static void fsync(Path file) throws IOException {
        // a read-only descriptor is enough: fsync forces the file's dirty pages whoever wrote them (the file
        // may belong to a site script's user and not be writable here)
        try (FileChannel c = FileChannel.open(file, StandardOpenOption.READ)) {
            c.force(true);
        }
        fsyncDirectory(file.toAbsolutePath().getParent());
    }

    /** fsync(2) of a directory: the names created or removed in it are on disk. */
    static void fsyncDirectory(Path dir) throws IOException {
        try (FileChannel c = FileChannel.open(dir, StandardOpenOption.READ)) {
            c.force(true);
        }
    }
}
