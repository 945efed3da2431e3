package dev.stagehand.archive;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.util.unit.DataSize;

/**
 * {@code stagehand.archive.*}: the archive (write) path. Documented in config/application.yml.
 *
 * @param enabled             run flushing, eviction and the watcher in this instance (registration always works)
 * @param landing             the landing area: registered files must lie inside it; it is the buffer
 * @param bufferCapacity      size of the buffer
 * @param highWater           fraction of the capacity beyond which registrations are refused (back-pressure)
 * @param lowWater            fraction down to which evictable files are deleted, oldest first; above it
 *                            every family is flushed at once, whatever its size
 * @param retryAfter          what a refused producer is told to wait
 * @param maxFilesPerCall     files per registration call
 * @param defaultExperiment   experiment of a new dataset registered without one
 * @param storageClasses      storage class -> tape copies (1 or 2)
 * @param defaultStorageClass class of files registered without one
 * @param families            file families grouping several datasets: family -> dataset name patterns
 *                            ({@code *} matches any characters); other datasets are their own family
 * @param volumeCapacity      bytes per volume; 0: the tape model's capacity
 * @param pool                blank volumes added to the pool at start-up
 * @param flush               when and how families are flushed to tape
 * @param watch               the landing-directory watcher
 * @param evictInterval       how often archived files are offered to the eviction holds and the buffer trimmed
 * @param instanceId          names this instance's claims; empty: host name and process id
 */
@ConfigurationProperties("stagehand.archive")
public record ArchiveProperties(
        @DefaultValue("true") boolean enabled,
        @DefaultValue("var/archive/landing") Path landing,
        @DefaultValue("100GB") DataSize bufferCapacity,
        @DefaultValue("0.9") double highWater,
        @DefaultValue("0.7") double lowWater,
        @DefaultValue("60s") Duration retryAfter,
        @DefaultValue("10000") int maxFilesPerCall,
        @DefaultValue("default") String defaultExperiment,
        Map<String, Integer> storageClasses,
        @DefaultValue("single") String defaultStorageClass,
        Map<String, List<String>> families,
        @DefaultValue("0B") DataSize volumeCapacity,
        @DefaultValue Pool pool,
        @DefaultValue Flush flush,
        @DefaultValue Watch watch,
        @DefaultValue("30s") Duration evictInterval,
        @DefaultValue("") String instanceId) {

    public ArchiveProperties {
        storageClasses = storageClasses == null || storageClasses.isEmpty() ? Map.of("single", 1, "dual", 2) : Map.copyOf(storageClasses);
        families = families == null ? Map.of() : Map.copyOf(families);
        if (!(lowWater > 0 && lowWater <= highWater && highWater <= 1))
            throw new IllegalArgumentException("stagehand.archive: need 0 < low-water <= high-water <= 1, got "
                    + lowWater + " and " + highWater);
        storageClasses.forEach((k, v) -> {
            if (v == null || v < 1 || v > 2)
                throw new IllegalArgumentException("stagehand.archive.storage-classes." + k + ": copies must be 1 or 2, was " + v);
        });
        if (!storageClasses.containsKey(defaultStorageClass))
            throw new IllegalArgumentException("stagehand.archive.default-storage-class '" + defaultStorageClass
                    + "' is not one of " + storageClasses.keySet());
    }

    public long capacityBytes() {
        return bufferCapacity.toBytes();
    }

    public long highWaterBytes() {
        return (long) (bufferCapacity.toBytes() * highWater);
    }

    public long lowWaterBytes() {
        return (long) (bufferCapacity.toBytes() * lowWater);
    }

    /**
     * @param prefix  labels are prefix + 4 digits (ARC0001, ...)
     * @param count   how many such volumes the pool holds
     * @param volumes further labels
     */
    public record Pool(@DefaultValue("ARC") String prefix, @DefaultValue("0") int count, @DefaultValue List<String> volumes) {
        public List<String> labels() {
            List<String> all = new java.util.ArrayList<>();
            for (int i = 1; i <= count; i++) all.add(String.format("%s%04d", prefix, i));
            all.addAll(volumes);
            return all;
        }
    }

    /**
     * @param pollInterval   how often the flusher looks for work (0: tests call it)
     * @param minBytes       a family is flushed once it holds this many queued bytes ...
     * @param maxAge         ... or its oldest queued file waited this long (or the buffer is above low-water)
     * @param maxBatchBytes  bytes per write list (a mounted volume keeps taking the family's next list)
     * @param maxBatchFiles  files per write list
     * @param lease          a claim lapses unless renewed within this
     * @param retryBackoff   a failed copy waits this long before it is tried again
     * @param idleDismount   a write drive with nothing to write keeps its volume this long, then dismounts it
     */
    public record Flush(
            @DefaultValue("5s") Duration pollInterval,
            @DefaultValue("20GB") DataSize minBytes,
            @DefaultValue("10m") Duration maxAge,
            @DefaultValue("200GB") DataSize maxBatchBytes,
            @DefaultValue("5000") int maxBatchFiles,
            @DefaultValue("10m") Duration lease,
            @DefaultValue("1m") Duration retryBackoff,
            @DefaultValue("2m") Duration idleDismount) {}

    /**
     * @param enabled  watch the landing area
     * @param interval how often it is scanned
     */
    public record Watch(@DefaultValue("false") boolean enabled, @DefaultValue("10s") Duration interval) {}
}
