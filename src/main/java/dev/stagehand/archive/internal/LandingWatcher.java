package dev.stagehand.archive.internal;

import dev.stagehand.archive.ArchiveRejected;
import dev.stagehand.archive.NewArchiveFile;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Registers files that land in the landing area without an API call. The layout is
 * {@code <landing>/<experiment>/<dataset>/.../<file>}; a file counts as landed once its producer has
 * written a marker {@code <file>.done} next to it (empty, or holding the file's Adler32 as hex, which is
 * then checked). A marker is explicit where a "size unchanged for N seconds" rule would guess, and it
 * survives restarts. The marker is removed once the file is registered; a file that is refused keeps its
 * bytes and gets its marker renamed to {@code <file>.rejected} with the reason inside. When a chunk would take
 * the buffer past its high-water mark, the longest run of its first files that fits is registered and the scan
 * stops until the next round (the rest wait for eviction, in landing order). Eviction is told the size of the
 * file that waits, so a file bigger than high-water minus low-water gets its room too.
 */
public final class LandingWatcher {

    private static final Logger log = LoggerFactory.getLogger(LandingWatcher.class);
    static final String MARKER = ".done";
    private static final int CHUNK = 500;

    private final JdbcArchiveBuffer buffer;
    /** Set by {@link #submit} when the buffer took all it could: the scan stops. */
    private boolean full;

    public LandingWatcher(JdbcArchiveBuffer buffer) {
        this.buffer = buffer;
    }

    /** One scan; returns how many files were registered. */
    public int scan() {
        Path landing = buffer.landing();
        List<Path> markers;
        try (Stream<Path> s = Files.walk(landing)) {
            markers = s.filter(p -> p.getFileName().toString().endsWith(MARKER) && Files.isRegularFile(p)).toList();
        } catch (IOException | java.io.UncheckedIOException e) {
            log.warn("archive watcher: cannot scan {}: {}", landing, e.toString());
            return 0;
        }
        // first landed first: a file lands when its marker appears (in path order alone, a dataset sorting first that
        // kept landing would keep the others out of a full buffer); the path orders markers of the same moment
        Map<Path, FileTime> landedAt = new HashMap<>();
        for (Path m : markers) {
            try {
                landedAt.put(m, Files.getLastModifiedTime(m));
            } catch (IOException e) {
                landedAt.put(m, FileTime.fromMillis(Long.MAX_VALUE)); // gone meanwhile: handled below like any other
            }
        }
        markers = markers.stream().sorted(Comparator.comparing((Path m) -> landedAt.get(m)).thenComparing(Comparator.<Path>naturalOrder())).toList();
        List<Path> batchMarkers = new ArrayList<>();
        List<NewArchiveFile> batch = new ArrayList<>();
        int registered = 0;
        full = false;
        buffer.waitingFor(0);
        for (Path m : markers) {
            String n = m.getFileName().toString();
            Path file = m.resolveSibling(n.substring(0, n.length() - MARKER.length()));
            Path rel = landing.relativize(m);
            if (rel.getNameCount() < 3) {
                reject(m, "expected <landing>/<experiment>/<dataset>/.../<file>" + MARKER);
                continue;
            }
            if (!Files.isRegularFile(file)) {
                reject(m, "marker without its file " + file.getFileName());
                continue;
            }
            String sum;
            long size;
            try {
                sum = Files.readString(m, StandardCharsets.US_ASCII).strip();
                size = Files.size(file);
            } catch (IOException e) {
                log.warn("archive watcher: cannot read {}: {}", m, e.toString());
                continue;
            }
            batch.add(new NewArchiveFile(file.toString(), size, sum.isEmpty() ? null : sum, rel.getName(1).toString(),
                    rel.getName(0).toString(), null, null));
            batchMarkers.add(m);
            if (batch.size() == CHUNK) {
                registered += submit(batch, batchMarkers);
                if (full) return registered;
                batch.clear();
                batchMarkers.clear();
            }
        }
        if (!batch.isEmpty()) registered += submit(batch, batchMarkers);
        return registered;
    }

    /** Registers a chunk (one by one when the chunk is refused); sets {@link #full} when the buffer took all it can. */
    private int submit(List<NewArchiveFile> files, List<Path> markers) {
        try {
            buffer.register(files);
            markers.forEach(LandingWatcher::delete);
            return files.size();
        } catch (ArchiveRejected e) {
            if (e.kind() == ArchiveRejected.Kind.BUFFER_FULL) {
                // a registration is all or none, and eviction frees at most high-water minus low-water: a backlog
                // bigger than that would never go in whole, so its first files that fit go now
                long room = buffer.headroom(), sum = 0;
                int fit = 0;
                while (fit < files.size() && sum + files.get(fit).sizeBytes() <= room) sum += files.get(fit++).sizeBytes();
                int n = fit > 0 && fit < files.size() ? submit(files.subList(0, fit), markers.subList(0, fit)) : 0;
                if (!full) {
                    log.info("archive watcher: {} bytes left below the buffer's high-water mark; the next landed file "
                            + "({} bytes) waits for eviction", Math.max(0, buffer.headroom()), files.get(n).sizeBytes());
                    buffer.waitingFor(files.get(n).sizeBytes()); // eviction makes room for it even below low water
                }
                full = true;
                return n;
            }
            if (files.size() == 1) {
                reject(markers.get(0), e.errors().isEmpty() ? e.getMessage() : e.errors().get(0).reason());
                return 0;
            }
        }
        int n = 0;
        for (int i = 0; i < files.size() && !full; i++) n += submit(List.of(files.get(i)), List.of(markers.get(i)));
        return n;
    }

    private static void reject(Path marker, String reason) {
        String n = marker.getFileName().toString();
        Path to = marker.resolveSibling(n.substring(0, n.length() - MARKER.length()) + ".rejected");
        log.warn("archive watcher: {} refused: {}", marker, reason);
        try {
            Files.writeString(to, reason + "\n", StandardCharsets.UTF_8);
            Files.deleteIfExists(marker);
        } catch (IOException e) {
            log.warn("archive watcher: cannot mark {} rejected: {}", marker, e.toString());
        }
    }

    private static void delete(Path marker) {
        try {
            Files.deleteIfExists(marker);
        } catch (IOException e) {
            log.warn("archive watcher: cannot remove marker {}: {}", marker, e.toString());
        }
    }
}
