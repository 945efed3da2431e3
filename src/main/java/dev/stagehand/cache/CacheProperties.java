package dev.stagehand.cache;

import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.util.unit.DataSize;

/**
 * The disk cache ({@code stagehand.cache.*}).
 *
 * @param directories cache directories and their capacities; empty means one directory {@code var/cache}
 *                    of 50 GB. Several service instances may list the same directory: they share its
 *                    accounting through the database.
 * @param housekeepingInterval how often expired pins are purged
 * @param node        name of this service instance; reservations it holds are discarded when an instance
 *                    of the same name starts again (a crash left them half-written). Empty: the host name.
 */
@ConfigurationProperties("stagehand.cache")
public record CacheProperties(@DefaultValue List<Directory> directories, @DefaultValue("") String node,
                              @DefaultValue("1m") Duration housekeepingInterval) {

    /** With the default housekeeping interval. */
    public CacheProperties(List<Directory> directories, String node) {
        this(directories, node, Duration.ofMinutes(1));
    }

    /** One cache directory. */
    public record Directory(Path path, @DefaultValue("50GB") DataSize capacity) {
        public Directory {
            if (path == null || path.toString().isBlank()) {
                throw new IllegalArgumentException("stagehand.cache.directories[].path must be set");
            }
            if (capacity == null || capacity.toBytes() < 0) {
                throw new IllegalArgumentException("stagehand.cache.directories[].capacity must be >= 0 for " + path);
            }
            path = path.toAbsolutePath().normalize();
        }
    }

    @org.springframework.boot.context.properties.bind.ConstructorBinding
    public CacheProperties {
        if (directories == null || directories.isEmpty()) {
            directories = List.of(new Directory(Path.of("var/cache"), DataSize.ofGigabytes(50)));
        }
        var seen = new HashSet<Path>();
        for (Directory d : directories) {
            if (!seen.add(d.path())) throw new IllegalArgumentException("cache directory listed twice: " + d.path());
        }
        directories = List.copyOf(directories);
        node = node == null ? "" : node.strip();
        if (housekeepingInterval == null || housekeepingInterval.isNegative() || housekeepingInterval.isZero()) {
            throw new IllegalArgumentException("stagehand.cache.housekeeping-interval must be positive, got " + housekeepingInterval);
        }
    }
}
