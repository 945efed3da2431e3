package dev.stagehand.recall.scheduler;

import java.util.Map;
import java.util.TreeMap;

/** Queued files of open requests as one engine plans them ({@link RecallEngine#backlog}): per volume and per experiment. */
public final class Backlog {

    /**
     * Files and bytes; per volume also the oldest open request's arrival and the latest ETA of the requests waiting
     * for it (seconds on the engine's time line).
     */
    public static final class Totals {
        long files, bytes;
        double oldestArrival = Double.POSITIVE_INFINITY;
        /** -inf: no estimate yet. */
        double latestEta = Double.NEGATIVE_INFINITY;

        Totals() {}

        Totals(long files, long bytes) {
            this.files = files;
            this.bytes = bytes;
        }

        void add(long n, long size) {
            files += n;
            bytes += size;
        }

        /** An open request waits for files here: it arrived at {@code arrival}, is estimated to end at {@code eta}. */
        void waiting(double arrival, double eta) {
            oldestArrival = Math.min(oldestArrival, arrival);
            if (!Double.isNaN(eta)) latestEta = Math.max(latestEta, eta);
        }

        public long files() { return files; }
        public long bytes() { return bytes; }
        public double oldestArrival() { return oldestArrival; }
        /** NaN when none of the requests has an estimate yet. */
        public double latestEta() { return latestEta == Double.NEGATIVE_INFINITY ? Double.NaN : latestEta; }
    }

    final Map<String, Totals> perVolume = new TreeMap<>();
    final Map<String, Totals> perExperiment = new TreeMap<>();

    /** By volume label: only volumes with queued files. */
    public Map<String, Totals> perVolume() { return perVolume; }

    /** By the files' experiment ("" when the catalog names none). */
    public Map<String, Totals> perExperiment() { return perExperiment; }
}
