package dev.stagehand.recall;

import java.util.Locale;

/**
 * What a simulated recall achieved, with the metrics of shared/docs/tape-model.md.
 *
 * @param policy              decision policy
 * @param files               distinct files read
 * @param bytes               bytes read
 * @param requests            requests in the workload
 * @param mounts              mounts
 * @param volumes             distinct volumes read
 * @param makespanSeconds     time the last file was on disk, from time 0
 * @param lowerBoundSeconds   the lower bound on the makespan
 * @param efficiency          lower bound / makespan
 * @param driveUtilization    reading time / (drives x makespan)
 * @param accessorUtilization accessor busy time within the makespan / (accessors x makespan)
 * @param locateSecondsTotal  positioning time
 * @param bytesPerMount       bytes / mounts
 * @param latencyMean         request latency (last file on disk - arrival), seconds
 * @param latencyP50          median
 * @param latencyP95          95th percentile (nearest rank)
 * @param latencyMax          maximum
 * @param failedFiles         files that could not be read
 * @param wallSeconds         real time the simulation took
 * @param tourBoundSeconds    a tighter valid bound: each tape's exact minimum locate tour instead of the model's
 *                            4.3 s per run ({@code LowerBound.tight}); not part of the JSON of the issue
 * @param eta                 how well the ETAs the API shows matched; not part of the JSON of the issue
 */
public record SimulationReport(String policy, long files, long bytes, long requests, long mounts, long volumes,
                               double makespanSeconds, double lowerBoundSeconds, double efficiency,
                               double driveUtilization, double accessorUtilization, double locateSecondsTotal,
                               double bytesPerMount, double latencyMean, double latencyP50, double latencyP95,
                               double latencyMax, long failedFiles, double wallSeconds,
                               double tourBoundSeconds, EtaAccuracy eta) {

    /**
     * The ETA each request had two minutes after it arrived against when it completed, for requests that
     * took at least ten minutes: |ETA - completion| / latency, median and 90th percentile.
     */
    public record EtaAccuracy(int requests, double errorP50, double errorP90) {}

    /** Exactly the JSON object {@code simulate --json} prints (keys of the issue, in its order). */
    public String toJson() {
        return String.format(Locale.ROOT,
                "{\"policy\":\"%s\",\"files\":%d,\"bytes\":%d,\"requests\":%d,\"mounts\":%d,\"volumes\":%d,"
                        + "\"makespan_s\":%s,\"lower_bound_s\":%s,\"efficiency\":%s,\"drive_utilization\":%s,"
                        + "\"accessor_utilization\":%s,\"locate_s_total\":%s,\"bytes_per_mount\":%s,"
                        + "\"latency_s\":{\"mean\":%s,\"p50\":%s,\"p95\":%s,\"max\":%s}}",
                policy, files, bytes, requests, mounts, volumes, num(makespanSeconds), num(lowerBoundSeconds),
                num(efficiency), num(driveUtilization), num(accessorUtilization), num(locateSecondsTotal),
                num(bytesPerMount), num(latencyMean), num(latencyP50), num(latencyP95), num(latencyMax));
    }

    private static String num(double d) {
        if (Double.isNaN(d) || Double.isInfinite(d)) return "null";
        return String.format(Locale.ROOT, "%.4f", d);
    }

    /** A readable summary. */
    public String summary() {
        return String.format(Locale.ROOT, """
                policy              %s
                requests            %d
                files / bytes       %d / %.2f TB%s
                mounts / volumes    %d / %d  (%.1f GB per mount)
                makespan            %.0f s  (%.2f h)
                lower bound         %.0f s  -> efficiency %.3f
                with exact tours    %.0f s  -> %.3f (each tape's minimum locate tour instead of 4.3 s per run)
                drive utilization   %.3f   accessor utilization %.3f
                locate time total   %.0f s
                request latency     mean %.0f s, p50 %.0f s, p95 %.0f s, max %.0f s
                ETA error           %s
                wall time           %.1f s""",
                policy, requests, files, bytes / 1e12, failedFiles > 0 ? "  (" + failedFiles + " failed)" : "",
                mounts, volumes, bytesPerMount / 1e9, makespanSeconds, makespanSeconds / 3600,
                lowerBoundSeconds, efficiency, tourBoundSeconds,
                makespanSeconds > 0 ? tourBoundSeconds / makespanSeconds : 1.0, driveUtilization, accessorUtilization, locateSecondsTotal,
                latencyMean, latencyP50, latencyP95, latencyMax,
                eta.requests() == 0 ? "no request took 10 min or more"
                        : String.format(Locale.ROOT, "p50 %.0f %%, p90 %.0f %% of the latency (%d requests of 10 min or more; ETA taken 2 min after arrival)",
                                eta.errorP50() * 100, eta.errorP90() * 100, eta.requests()),
                wallSeconds);
    }
}
