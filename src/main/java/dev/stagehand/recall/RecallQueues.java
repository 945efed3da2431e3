package dev.stagehand.recall;

import java.time.Instant;
import java.util.List;

/**
 * Open recall work now, per volume and per experiment, for the console and the queue gauges. On an instance that
 * recalls, the queued files come from its scheduler's own model (which holds every open request) and the files
 * being read from the rows of the reads under way (a few per drive); elsewhere from a query of the whole open
 * queue (seconds at 10^6 files: callers throttle).
 */
public interface RecallQueues {

    Snapshot snapshot();

    /**
     * @param volume  null for queued files with no usable copy (they fail at the scheduler's next look)
     * @param queued  files waiting (each once: on the volume the scheduler plans to read it from, or without a
     *                scheduler here its first available copy by label)
     * @param staging files being read from this volume, by any instance
     * @param oldest  creation of the oldest open request waiting for one of the files
     * @param eta     the latest estimated completion of those requests (null before the first estimate)
     */
    record VolumeLoad(String volume, long queued, long staging, long bytes, Instant oldest, Instant eta) {}

    /** @param state queued or staging */
    record ExperimentLoad(String experiment, String state, long files, long bytes) {}

    /** @param fromScheduler whether queued files came from this instance's scheduler (else from the rows) */
    record Snapshot(List<VolumeLoad> volumes, List<ExperimentLoad> experiments, boolean fromScheduler, Instant asOf) {}
}
