package dev.stagehand.tape;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * The tape library ({@code stagehand.tape.*}; documented in config/application.yml).
 *
 * @param driver        {@code simulated} (the embedded default) or {@code script} (a real HSM via site scripts)
 * @param clock         time of the simulated library: {@code scaled} (real time times {@code scale}),
 *                      {@code virtual} (discrete events, driven by a simulation) or {@code real}
 * @param scale         speed-up of the scaled clock (60: an hour of tape work in a minute)
 * @param library       library name (volumes name their library in the catalogue)
 * @param drives        number of drives (named drive01, drive02, ...)
 * @param accessors     robot accessors: at most this many cartridge moves at once
 * @param persistDrives write drive state to PostgreSQL and restore it on start-up
 * @param sim           the simulated library
 * @param script        the script driver
 * @param drivePrefix   drive names are this plus 01, 02, ... (instances simulating their own drives on one
 *                      database need different prefixes: drive state rows are keyed by library and drive)
 */
@ConfigurationProperties("stagehand.tape")
public record TapeProperties(
        @DefaultValue("simulated") Driver driver,
        @DefaultValue("real") ClockKind clock,
        @DefaultValue("60") double scale,
        @DefaultValue("sim") String library,
        @DefaultValue("4") int drives,
        @DefaultValue("1") int accessors,
        @DefaultValue("true") boolean persistDrives,
        @DefaultValue Sim sim,
        @DefaultValue Script script,
        @DefaultValue("drive") String drivePrefix) {

    public enum Driver { SIMULATED, SCRIPT }

    public enum ClockKind { SCALED, VIRTUAL, REAL }

    /**
     * @param root         where written files are kept, one directory per volume
     * @param mountTimeout a mount not finished by then fails with TIMEOUT
     * @param model        the timing model (LTO-9 by default)
     * @param faults       faults to inject from the start
     * @param readLog      when set, one line per segment read or failed is appended to this file (counts reads
     *                     per file across restarts; fault-injection tests use it)
     */
    public record Sim(
            @DefaultValue("var/tape") Path root,
            @DefaultValue("15m") Duration mountTimeout,
            @DefaultValue TapeModel model,
            @DefaultValue Faults faults,
            Path readLog) {}

    /**
     * @param badSegments   {@code VOLUME:file-name} pairs whose read fails with MEDIA_ERROR
     * @param failingDrives drives that fail half-way through their next transfer
     * @param hangingMounts volumes whose next mount never completes
     * @param missingVolumes volumes not in the library
     * @param corruptSegments {@code VOLUME:file-name} pairs whose reads deliver one byte altered (silent corruption);
     *                        {@code *:file-name}: the copy of the file that is read first, whichever volume that is
     */
    public record Faults(
            @DefaultValue List<String> badSegments,
            @DefaultValue List<String> failingDrives,
            @DefaultValue List<String> hangingMounts,
            @DefaultValue List<String> missingVolumes,
            @DefaultValue List<String> corruptSegments) {

        FaultPlan plan() {
            FaultPlan p = FaultPlan.of(badSegments, failingDrives, hangingMounts, missingVolumes);
            for (String s : corruptSegments) {
                int i = s.indexOf(':');
                if (i <= 0 || i == s.length() - 1)
                    throw new IllegalArgumentException("corrupt segment must be VOLUME:file-name, was '" + s + "'");
                if (s.substring(0, i).equals("*")) p.corruptFirstCopy(s.substring(i + 1));
                else p.corruptSegment(s.substring(0, i), s.substring(i + 1));
            }
            return p;
        }
    }

    /**
     * Commands of the script driver: each is the executable and leading arguments; the driver appends its
     * own (see config/examples/script-driver/README.md).
     *
     * @param mount           called as {@code <mount...> DRIVE VOLUME}
     * @param readList        called as {@code <read-list...> DRIVE VOLUME LIST-FILE}
     * @param write           called as {@code <write...> DRIVE VOLUME LIST-FILE}
     * @param dismount        called as {@code <dismount...> DRIVE VOLUME}
     * @param workDir         where list files and script error output are kept
     * @param mountTimeout    limit of one mount call
     * @param readTimeout     limit of one read-list call
     * @param writeTimeout    limit of one write call
     * @param dismountTimeout limit of one dismount call
     * @param writeChecksum   what a write report without an Adler32 means: {@code trust-source} (the default) takes
     *                        the buffer file's sum for the tape copy's, logged as not confirmed from the volume;
     *                        {@code required} fails the file, for HSMs that report what they wrote
     */
    public record Script(
            @DefaultValue List<String> mount,
            @DefaultValue List<String> readList,
            @DefaultValue List<String> write,
            @DefaultValue List<String> dismount,
            @DefaultValue("var/tape-script") Path workDir,
            @DefaultValue("30m") Duration mountTimeout,
            @DefaultValue("12h") Duration readTimeout,
            @DefaultValue("12h") Duration writeTimeout,
            @DefaultValue("30m") Duration dismountTimeout,
            @DefaultValue("trust-source") WriteChecksum writeChecksum) {}

    /**
     * Whether a write report must carry the Adler32 of what reached the volume. Without one nothing here can
     * read the copy back: {@code TRUST_SOURCE} takes the source's sum (unverified), {@code REQUIRED} refuses it.
     */
    public enum WriteChecksum { REQUIRED, TRUST_SOURCE }
}
