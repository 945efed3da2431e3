package dev.stagehand.recall.service;

import dev.stagehand.cache.CacheEntry;
import dev.stagehand.cache.CommitResult;
import dev.stagehand.cache.DiskCache;
import dev.stagehand.cache.ReserveResult;
import dev.stagehand.cache.SpaceRequest;
import dev.stagehand.recall.request.RecallMetrics;
import dev.stagehand.platform.DatabaseRetry;
import dev.stagehand.recall.scheduler.FileWork;
import dev.stagehand.recall.scheduler.Staging;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The service's staging: reads land in space reserved in the {@link DiskCache}; a copy counts only once the
 * cache verified its Adler32 against the catalog. A refused copy marks its tape segment suspect, so neither
 * this nor a later recall reads that copy again.
 */
final class CacheStaging implements Staging {

    private static final Logger log = LoggerFactory.getLogger(CacheStaging.class);

    private final DiskCache cache;
    private final JdbcTemplate jdbc;
    private final long usefulBatchBytes;
    private final RecallMetrics metrics;
    private final Consumer<List<Long>> pin;

    /**
     * @param pin pins files for every request that holds them; called with a read list's files before their
     *            space is reserved, so a copy is held for its requests from before it can be verified (eviction
     *            never takes a copy between its commit and the pin of its landing)
     */
    CacheStaging(DiskCache cache, JdbcTemplate jdbc, long usefulBatchBytes, RecallMetrics metrics, Consumer<List<Long>> pin) {
        this.cache = cache;
        this.jdbc = jdbc;
        this.usefulBatchBytes = usefulBatchBytes;
        this.metrics = metrics;
        this.pin = pin;
    }

    @Override
    public List<Slot> reserve(String volume, List<FileWork> files) {
        // the requests' pins of files not yet on disk are taken here, a read list at a time, not at intake (a
        // 10^6-file request's pins cost 24-28 s before its first mount); pinning again only renews
        List<Long> ids = new ArrayList<>(files.size());
        for (FileWork f : files) ids.add(f.id());
        DatabaseRetry.run("pins of a read list", () -> pin.accept(ids));
        List<SpaceRequest> want = new ArrayList<>(files.size());
        for (FileWork f : files) want.add(new SpaceRequest(f.id(), f.sizeBytes()));
        List<ReserveResult> got = new ArrayList<>(DatabaseRetry.call("cache reservation", () -> cache.reserve(want, "recall " + volume)));
        // Only this node's engine reserves here, and never for a file it is reading: a reservation of this node
        // for one of these files is nobody's. It is left by a reservation whose reply was lost as the database
        // went away (the retry found it written); joining it would wait for ever. Given up and reserved again.
        List<Integer> orphaned = new ArrayList<>();
        for (int i = 0; i < got.size(); i++) {
            ReserveResult r = got.get(i);
            if (r.outcome() == ReserveResult.Outcome.IN_FLIGHT && r.reservation() != null
                    && cache.node().equals(r.reservation().node())) {
                DatabaseRetry.run("cache abort", () -> cache.abort(r.reservation().id(), "orphaned by a lost database reply"));
                orphaned.add(i);
            }
        }
        if (!orphaned.isEmpty()) {
            List<SpaceRequest> again = new ArrayList<>(orphaned.size());
            for (int i : orphaned) again.add(want.get(i));
            log.warn("{} cache reservation(s) of this node orphaned by a lost database reply given up; reserving again",
                    orphaned.size());
            List<ReserveResult> retried = DatabaseRetry.call("cache reservation", () -> cache.reserve(again, "recall " + volume));
            for (int k = 0; k < orphaned.size(); k++) got.set(orphaned.get(k), retried.get(k));
        }
        List<Slot> out = new ArrayList<>(got.size());
        for (ReserveResult r : got) {
            out.add(switch (r.outcome()) {
                case RESERVED -> {
                    DatabaseRetry.run("cache write start", () -> cache.startWriting(r.reservation().id()));
                    yield Slot.read(r.reservation().path(), r.reservation().id());
                }
                case CACHED -> Slot.cached(r.cached().path(), r.cached().adler32());
                // another stage of the file is being written (joined through recall_file) or no space now
                case IN_FLIGHT, NO_SPACE -> Slot.waiting();
                case TOO_LARGE -> Slot.fail("larger than every cache directory: it can never be staged here");
                case UNKNOWN_FILE -> Slot.fail("no longer in the catalog");
            });
        }
        return out;
    }

    @Override
    public long reservableBytes() {
        return DatabaseRetry.call("cache space", cache::reservableBytes);
    }

    @Override
    public long reservableBytes(long wanted) {
        return DatabaseRetry.call("cache space", () -> cache.reservableBytes(wanted));
    }

    @Override
    public long usefulBatchBytes() {
        return usefulBatchBytes;
    }

    @Override
    public Committed commit(FileWork file, String volume, Slot slot, long adler32) {
        CommitResult r = DatabaseRetry.call("cache commit", () -> cache.commit(slot.handle(), String.format("%08x", adler32)));
        if (r.verified() || committedBeforeReplyLost(file, slot, r)) {
            metrics.staged(file.sizeBytes());
            // a copy written without a checksum from the library (V53) is confirmed now: its bytes read back match
            DatabaseRetry.call("segment verified", () -> jdbc.update("""
                    UPDATE segment s SET verified = true FROM volume v
                     WHERE v.id = s.volume_id AND v.label = ? AND s.file_id = ? AND NOT s.verified""", volume, file.id()));
            return Committed.KEPT;
        }
        metrics.stageFailed(r.outcome() == CommitResult.Outcome.CORRUPT ? "checksum" : "lost");
        if (r.outcome() == CommitResult.Outcome.CORRUPT) {
            List<Boolean> verified = DatabaseRetry.call("segment suspect", () -> jdbc.queryForList("""
                    UPDATE segment s SET state = 'suspect' FROM volume v
                     WHERE v.id = s.volume_id AND v.label = ? AND s.file_id = ? AND s.state = 'ok' RETURNING s.verified""",
                    Boolean.class, volume, file.id()));
            // a copy never confirmed from the volume most likely never held the file's bytes: say so, the operator
            // looks at the write (the archive writes it again from the buffer while the file is still there)
            String why = verified.contains(Boolean.FALSE)
                    ? "; this copy was written without a checksum from the library and never confirmed from the volume" : "";
            log.warn("file {}: copy on {} refused ({}); {} segment(s) marked suspect{}", file.name(), volume, r.reason(),
                    verified.size(), why);
            return Committed.refused("checksum mismatch reading " + volume + ": " + r.reason() + " (segment marked suspect" + why + ")");
        }
        // its reservation was given up under it: another instance took the file's lapsed claim while the
        // database was away from this one, or recovery discarded it. The tape copy is not to blame.
        return Committed.lost("staged copy lost before it was verified: " + r.reason());
    }

    /**
     * A commit retried after the database went away finds its reservation gone when the first attempt had
     * committed and only its reply was lost: the copy is then the file's verified one, at the slot's path.
     */
    private boolean committedBeforeReplyLost(FileWork file, Slot slot, CommitResult r) {
        if (r.outcome() != CommitResult.Outcome.UNKNOWN_RESERVATION || slot.target() == null) return false;
        CacheEntry e = DatabaseRetry.call("cache lookup", () -> cache.lookup(List.of(file.id())).get(file.id()));
        return e != null && e.cached() && slot.target().equals(e.path());
    }

    @Override
    public void abort(FileWork file, Slot slot, String reason) {
        if (slot.handle() >= 0) DatabaseRetry.run("cache abort", () -> cache.abort(slot.handle(), reason));
    }

    @Override
    public void notForced(FileWork file, Slot slot, String reason) {
        if (slot.handle() >= 0) DatabaseRetry.run("cache abort", () -> cache.abortNotForced(slot.handle(), reason));
    }
}
