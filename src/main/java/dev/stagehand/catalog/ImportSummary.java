package dev.stagehand.catalog;

import java.util.List;

/**
 * What one catalog import did. "Distinct" counts are what the dump describes; "new" counts are the rows
 * this import added (zero for all of them when the same dump is imported again).
 */
public record ImportSummary(
        String source,
        long rows,
        long files, long newFiles,
        long segments, long newSegments,
        long volumes, long newVolumes,
        long datasets, long newDatasets,
        List<String> ignoredColumns,
        double seconds) {

    /** One line for people. */
    public String describe() {
        return String.format("imported %s: %d rows -> %d files (%d new), %d segments (%d new), %d volumes (%d new), "
                        + "%d datasets (%d new) in %.1f s (%.0f rows/s)%s",
                source, rows, files, newFiles, segments, newSegments, volumes, newVolumes, datasets, newDatasets,
                seconds, seconds > 0 ? rows / seconds : 0.0,
                ignoredColumns.isEmpty() ? "" : "; ignored columns " + ignoredColumns);
    }
}
