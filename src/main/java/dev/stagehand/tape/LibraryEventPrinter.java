package dev.stagehand.tape;

import java.io.PrintStream;
import java.time.Duration;
import java.time.Instant;

/**
 * Prints what a library does, one line per event, stamped with clock time since {@code start}: what the
 * demo shows (drives mounting, locating and reading on the scaled clock).
 */
public final class LibraryEventPrinter implements LibraryEvents {

    private final PrintStream out;
    private final Instant start;
    private final boolean driveStates;

    /** @param driveStates also print every drive state transition (locating, reading, ...) */
    public LibraryEventPrinter(PrintStream out, Instant start, boolean driveStates) {
        this.out = out;
        this.start = start;
        this.driveStates = driveStates;
    }

    private String t(Instant at) {
        long s = Math.max(0, Duration.between(start, at).toSeconds());
        return String.format("[%02d:%02d:%02d]", s / 3600, s / 60 % 60, s % 60);
    }

    @Override
    public void driveChanged(String library, DriveStatus s, Instant at) {
        if (driveStates) out.printf("%s %s %-12s %s%n", t(at), s.drive(), s.state(), s.volume() == null ? "" : s.volume());
    }

    @Override
    public void mountStarted(String drive, String volume, Instant at) {
        out.printf("%s %s mount %s requested%n", t(at), drive, volume);
    }

    @Override
    public void mountFinished(String drive, String volume, Instant at, TapeFailure failure) {
        if (failure == null) out.printf("%s %s mounted %s%n", t(at), drive, volume);
        else out.printf("%s %s mount %s FAILED: %s%n", t(at), drive, volume, failure.getMessage());
    }

    @Override
    public void segmentRead(String drive, ReadResult r) {
        out.printf("%s %s read %s (%.1f MB, locate %.1f s, adler32 %s)%n", t(r.finishedAt()), drive, r.segment().fileName(),
                r.segment().sizeBytes() / 1e6, r.locateSeconds(), SimulatedContent.hex(r.adler32()));
    }

    @Override
    public void segmentFailed(String drive, SegmentRead s, TapeFailure f, Instant at) {
        out.printf("%s %s read %s FAILED: %s%n", t(at), drive, s.fileName(), f.getMessage());
    }

    @Override
    public void fileWritten(String drive, WriteBatch.WrittenSegment w, Instant at) {
        out.printf("%s %s wrote %s to %s at %d%n", t(at), drive, w.file().fileName(), w.volume(), w.offsetBytes());
    }

    @Override
    public void dismounted(String drive, String volume, Instant at) {
        out.printf("%s %s dismounted %s%n", t(at), drive, volume);
    }
}
