package dev.stagehand.recall.scheduler;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Where the engine's reads land: the disk cache in the service (space reserved before a read, the copy
 * verified before it counts), nothing at all in a simulation ({@link #NONE}). The engine asks it before a
 * volume is mounted (is there room for a useful batch?), before a read list starts (reserve), and after
 * each segment (commit or abort).
 */
public interface Staging {

    enum Kind {
        /** Space is held: read the segment into {@code target}. */
        READ,
        /** A verified copy is on disk already: the file is done without a tape read. */
        CACHED,
        /** Not now (no space, or another stage of it is being written): it stays queued. */
        WAIT,
        /** It can never be staged here: {@code reason} says why. */
        FAIL
    }

    /**
     * One file's place.
     *
     * @param handle  the reservation (what commit and abort take), for READ
     * @param adler32 the verified checksum, for CACHED
     */
    record Slot(Kind kind, Path target, long handle, String adler32, String reason) {
        public static Slot read(Path target, long handle) { return new Slot(Kind.READ, target, handle, null, null); }
        public static Slot cached(Path path, String adler32) { return new Slot(Kind.CACHED, path, -1, adler32, null); }
        public static Slot waiting() { return new Slot(Kind.WAIT, null, -1, null, null); }
        public static Slot fail(String reason) { return new Slot(Kind.FAIL, null, -1, null, reason); }
    }

    /** What became of a copy handed to {@link #commit}. */
    enum Verdict {
        /** Verified: it may be handed on. */
        KEPT,
        /** Refused (checksum or size mismatch): the copy is gone and the tape copy is to blame. */
        REFUSED,
        /** Lost before it was verified (its space was given up under it): the tape copy is not to blame. */
        LOST
    }

    /** A {@link Verdict} with the reason for REFUSED and LOST. */
    record Committed(Verdict verdict, String reason) {
        public static final Committed KEPT = new Committed(Verdict.KEPT, null);
        public static Committed refused(String reason) { return new Committed(Verdict.REFUSED, reason); }
        public static Committed lost(String reason) { return new Committed(Verdict.LOST, reason); }
    }

    /** Places for {@code files} (in read order) about to be read from {@code volume}; one slot per file. */
    List<Slot> reserve(String volume, List<FileWork> files);

    /** Bytes that could be reserved now; {@link Long#MAX_VALUE} when unbounded. */
    long reservableBytes();

    /**
     * As {@link #reservableBytes()}, but the count may stop once {@code wanted} bytes are found: the answer is
     * exact below {@code wanted}, else some figure at least {@code wanted}. The scheduler asks at its passes and
     * needs no more; a large cache counts its evictable copies only as far as that.
     */
    default long reservableBytes(long wanted) {
        return reservableBytes();
    }

    /** A volume is mounted only when this many bytes (or its whole queue, if less) can be reserved. */
    long usefulBatchBytes();

    /**
     * Ends a read that delivered bytes with this Adler32 (-1: no bytes were kept).
     *
     * @return KEPT if the copy is good and may be handed on; else why it is gone
     */
    Committed commit(FileWork file, String volume, Slot slot, long adler32);

    /** Gives the slot up: the read failed or was cancelled. */
    void abort(FileWork file, Slot slot, String reason);

    /**
     * Gives the slot up because its copy could not be forced to disk ({@link dev.stagehand.platform.Durable.NotForced}):
     * the disk it was on is at fault, not the tape. The cache counts it against the slot's directory (and takes a
     * directory whose fsync keeps failing out of service, so the file is read again into another one).
     */
    default void notForced(FileWork file, Slot slot, String reason) {
        abort(file, slot, reason);
    }

    /** No bytes kept, unbounded: the simulation. Checksums are compared when the library delivered any. */
    Staging NONE = new Staging() {
        @Override
        public List<Slot> reserve(String volume, List<FileWork> files) {
            List<Slot> out = new ArrayList<>(files.size());
            for (int i = 0; i < files.size(); i++) out.add(Slot.read(null, -1));
            return out;
        }

        @Override public long reservableBytes() { return Long.MAX_VALUE; }
        @Override public long usefulBatchBytes() { return 0; }

        @Override
        public Committed commit(FileWork f, String volume, Slot slot, long adler32) {
            if (adler32 < 0 || f.adler32() == null || f.adler32().equalsIgnoreCase(String.format("%08x", adler32))) return Committed.KEPT;
            return Committed.refused("checksum mismatch on " + volume + ": catalog " + f.adler32() + ", read " + String.format("%08x", adler32));
        }

        @Override public void abort(FileWork f, Slot slot, String reason) { }
    };
}
