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
 *                    of the same name starts again (a crash left them half-written). Held for the instance's
 *                    life (a PostgreSQL advisory lock): a name another running instance holds is refused.
 *                    Empty: the host name, or host-2, host-3, ... while other instances on the host hold it.
 * @param nodeWait    how long a start waits for a configured node name held by another session to be freed
 *                    (a dead host's session ends within about a minute) before it refuses to start
 */
@ConfigurationProperties("stagehand.cache")
public record CacheProperties(@DefaultValue List<Directory> directories, @DefaultValue("") String node,
                              @DefaultValue("1m") Duration housekeepingInterval,
                              @DefaultValue("90s") Duration nodeWait) {

    /** With the default housekeeping interval; a held node name is refused at once. */
    public CacheProperties(List<Directory> directories, String node) {
        this(directories, node, Duration.ofMinutes(1), Duration.ZERO);
    }

    /**
     * One cache directory.
     *
     * @param createMissing create the directory at start when it does not exist. Off by default: a missing cache
     *                      directory is most often a disk that is not mounted, and creating it would stage files
     *                      onto the file system under the mount point (the root file system) until it is full. The
     *                      embedded default directory ({@code var/cache}) is created.
     * @param requireMount  the directory must be a mount point (on another device than its parent directory), at
     *                      start and whenever a fan-out subdirectory is made in it: a disk that is not mounted
     *                      leaves its mount point there, empty, on the root file system, and staged files would
     *                      fill that instead. Off by default; set it when the directory is the disk's mount point.
     */
    public record Directory(Path path, @DefaultValue("50GB") DataSize capacity, @DefaultValue("false") boolean createMissing,
                            @DefaultValue("false") boolean requireMount) {

        /** A directory that must exist at start. */
        public Directory(Path path, DataSize capacity) {
            this(path, capacity, false);
        }

        /** A directory that need not be a mount point. */
        public Directory(Path path, DataSize capacity, boolean createMissing) {
            this(path, capacity, createMissing, false);
        }

        @org.springframework.boot.context.properties.bind.ConstructorBinding
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
            directories = List.of(new Directory(Path.of("var/cache"), DataSize.ofGigabytes(50), true));
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
        if (nodeWait == null || nodeWait.isNegative()) {
            throw new IllegalArgumentException("stagehand.cache.node-wait must be >= 0, got " + nodeWait);
        }
    }
}
