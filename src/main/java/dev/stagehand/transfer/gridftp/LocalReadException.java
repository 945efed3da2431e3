package dev.stagehand.transfer.gridftp;

import java.io.IOException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * A read of a put's local source failed (the file shrank while it was sent, a disk error): the source's
 * fault, not the destination's or the network's. A channel closed under the read is not one: the put was
 * being torn down for another reason (the destination refused it, the watchdog closed it).
 */
final class LocalReadException extends IOException {

    LocalReadException(String message, Throwable cause) {
        super(message, cause);
    }

    /** {@code e}, a failure of reading the local file, as the source's (as it is when a close cut the read off). */
    static IOException of(IOException e) {
        if (e instanceof LocalReadException || e instanceof ClosedChannelException) return e;
        return new LocalReadException(String.valueOf(e), e);
    }

    /** Opens the local file for reading; a failure (gone, unreadable since it was checked) is the source's. */
    static FileChannel open(Opener opener, Path file) throws IOException {
        try {
            return opener.open(file);
        } catch (IOException e) {
            throw of(e);
        }
    }

    /** How a put's local file is opened: {@link #READ}; tests give the mover a double (a file whose reads hang). */
    interface Opener {
        FileChannel open(Path file) throws IOException;
    }

    static final Opener READ = file -> FileChannel.open(file, StandardOpenOption.READ);

    /** The local file ended before the bytes expected of it ({@code offset}: where). */
    static LocalReadException shrank(String doing, long offset) {
        return new LocalReadException("file shrank while " + doing + " (at offset " + offset + ")", null);
    }
}
