package dev.stagehand.cache;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.nio.file.Path;
import java.util.List;
import java.util.function.ToDoubleFunction;

/**
 * Gauges per cache directory ({@code stagehand.cache.*}, tag {@code directory}). One usage query serves all
 * gauges of a scrape: {@link DiskCache#recentUsage} shares one snapshot, reused for 5 s or ten times what it took.
 */
class CacheMetrics implements MeterBinder {

    private final DiskCache cache;
    private final List<Path> directories;

    CacheMetrics(DiskCache cache, CacheProperties props) {
        this.cache = cache;
        this.directories = props.directories().stream().map(CacheProperties.Directory::path).toList();
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        for (Path dir : directories) {
            gauge(registry, dir, "stagehand.cache.capacity", "bytes", "configured capacity", DirectoryUsage::capacityBytes);
            gauge(registry, dir, "stagehand.cache.used", "bytes", "verified copies", DirectoryUsage::usedBytes);
            gauge(registry, dir, "stagehand.cache.reserved", "bytes", "space reserved for copies being written", DirectoryUsage::reservedBytes);
            gauge(registry, dir, "stagehand.cache.pinned", "bytes", "copies held by unexpired pins", DirectoryUsage::pinnedBytes);
            gauge(registry, dir, "stagehand.cache.evictable", "bytes", "verified unpinned copies", DirectoryUsage::evictableBytes);
            gauge(registry, dir, "stagehand.cache.files.cached", "files", "verified copies", DirectoryUsage::cachedFiles);
            gauge(registry, dir, "stagehand.cache.files.staging", "files", "copies being written", DirectoryUsage::stagingFiles);
        }
    }

    private void gauge(MeterRegistry registry, Path dir, String name, String unit, String help,
                       ToDoubleFunction<DirectoryUsage> value) {
        Gauge.builder(name, this, m -> m.read(dir, value)).baseUnit(unit).description(help)
                .tag("directory", dir.toString()).register(registry);
    }

    private double read(Path dir, ToDoubleFunction<DirectoryUsage> value) {
        List<DirectoryUsage> usage = current();
        for (DirectoryUsage u : usage) if (u.path().equals(dir)) return value.applyAsDouble(u);
        return Double.NaN;
    }

    private List<DirectoryUsage> current() {
        try {
            return cache.recentUsage();
        } catch (RuntimeException e) {
            return List.of(); // not started yet, or the database is away: report NaN, not an error
        }
    }
}
