package dev.stagehand.cache;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.util.unit.DataSize;

/**
 * Health of the cache directories (contributor {@code cacheDirectories}, part of readiness), from the disk
 * itself and not the database (so a database outage shows as {@code db} only, at once; the out-of-service marks
 * are the cache's as it last read them from their rows, at most {@code stagehand.cache.health.refresh-interval} ago
 * while the database answers): each directory must exist, take
 * a new file, and its file system must have at least {@code min-free} space left; and the cache must not have taken
 * it out of service (its staged copies could not be forced to disk, {@link DiskCache#abortNotForced}). UP while at least one
 * directory is usable (the others are named in the details); DOWN when none is. A cache whose accounting
 * is full is not unhealthy: staging waits for space (backpressure), nothing fails.
 */
class CacheHealth implements HealthIndicator {

    private final CacheProperties props;
    private final DataSize minFree;
    /** Directories out of service, with why, as the cache last read them (never the database itself). */
    private final Supplier<Map<Path, String>> outOfService;

    CacheHealth(CacheProperties props, DataSize minFree) {
        this(props, minFree, Map::of);
    }

    CacheHealth(CacheProperties props, DataSize minFree, Supplier<Map<Path, String>> outOfService) {
        this.props = props;
        this.minFree = minFree;
        this.outOfService = outOfService;
    }

    @Override
    public Health health() {
        Map<String, Object> dirs = new LinkedHashMap<>();
        int usable = 0;
        Map<Path, String> out = outOfService.get();
        for (CacheProperties.Directory d : props.directories()) {
            Map<String, Object> detail = new LinkedHashMap<>();
            String problem = check(d.path(), detail);
            if (problem == null) problem = out.get(d.path());
            if (problem == null) usable++;
            else detail.put("problem", problem);
            detail.put("usable", problem == null);
            dirs.put(d.path().toString(), detail);
        }
        Health.Builder h = usable > 0 ? Health.up() : Health.down().withDetail("reason", "no usable cache directory");
        return h.withDetail("usableDirectories", usable).withDetail("minFreeBytes", minFree.toBytes())
                .withDetail("directories", dirs).build();
    }

    private String check(Path dir, Map<String, Object> detail) {
        if (!Files.isDirectory(dir)) return "missing or not a directory";
        try {
            long free = Files.getFileStore(dir).getUsableSpace();
            detail.put("freeBytes", free);
            Path probe = Files.createTempFile(dir, ".health-", ".probe");
            Files.delete(probe);
            if (free < minFree.toBytes()) return "file system full: " + free + " bytes free, below " + minFree.toBytes();
            return null;
        } catch (IOException | SecurityException e) {
            return "not writable: " + e.getMessage();
        }
    }
}
