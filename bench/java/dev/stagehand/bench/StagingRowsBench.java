package dev.stagehand.bench;

import dev.stagehand.StagehandApplication;
import dev.stagehand.recall.StageRequests;
import dev.stagehand.tape.SimulatedContent;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.util.FileSystemUtils;

/**
 * The recall path's per-file database work with the tape out of the way: many small files recalled from the
 * simulated library on a fast clock into a cache holding everything, so each staged file's round trips (cache
 * commit, segment confirmation, the recall rows, drive state) set the pace. Prints files staged per second,
 * the time other threads spent blocked on the recall engine's monitor (JFR monitor-enter events, no threshold),
 * and, in the same run, the round-trip time of the two per-row statements in question.
 */
public final class StagingRowsBench {

    public static void main(String[] args) throws Exception {
        int volumes = args.length > 0 ? Integer.parseInt(args[0]) : 4;
        int perVolume = args.length > 1 ? Integer.parseInt(args[1]) : 1000;
        long size = args.length > 2 ? Long.parseLong(args[2]) : 4096;
        long gap = args.length > 3 ? Long.parseLong(args[3]) : 100_000_000L; // between files: each read starts with a locate
        int rounds = args.length > 4 ? Integer.parseInt(args[4]) : 3;
        Path work = Path.of("target/bench-staging-rows").toAbsolutePath();
        FileSystemUtils.deleteRecursively(work);
        System.out.printf("staging rows bench: %d files of %d bytes on %d volumes, %d bytes apart, 2 drives, %d rounds%n",
                volumes * perVolume, size, volumes, gap, rounds);
        try (ConfigurableApplicationContext ctx = new SpringApplicationBuilder(StagehandApplication.class).web(WebApplicationType.NONE)
                .properties("stagehand.db.local-dir=target/pg", "stagehand.db.local-database=" + BenchSupport.DATABASE,
                        "logging.level.root=WARN", "stagehand.tape.clock=scaled", "stagehand.tape.scale=10000",
                        "stagehand.tape.sim.mount-timeout=100000h", "stagehand.recall.idle-dismount=100000h",
                        "stagehand.tape.drives=2", "stagehand.tape.drive-prefix=rows" + ProcessHandle.current().pid() + "-", "stagehand.tape.roles.write-drives=0", "stagehand.tape.persist-drives=true",
                        "stagehand.tape.sim.root=" + work.resolve("lib"),
                        "stagehand.cache.directories[0].path=" + work.resolve("cache"),
                        "stagehand.cache.directories[0].capacity=" + 4L * volumes * perVolume * size + "B",
                        "stagehand.cache.directories[0].create-missing=true",
                        "stagehand.recall.min-mount-age=0s", "stagehand.archive.enabled=false",
                        "stagehand.replication.enabled=false", "stagehand.transfer.queue.enabled=false")
                .run()) {
            JdbcTemplate jdbc = ctx.getBean(JdbcTemplate.class);
            StageRequests requests = ctx.getBean(StageRequests.class);
            String engineClass = "dev.stagehand.recall.scheduler.RecallEngine";
            for (int round = 1; round <= rounds; round++) {
                BenchSupport.clean(jdbc);
                jdbc.execute("TRUNCATE recall_file, cache_pin, cache_reservation, cache_file, tape_mount_log CASCADE");
                jdbc.update("UPDATE cache_directory SET used_bytes = 0, reserved_bytes = 0");
                List<String> names = catalog(jdbc, "R" + round + "_", volumes, perVolume, size, gap);
                long driveWrites0 = tapeDriveWrites(jdbc);
                Path jfr = work.resolve("round" + round + ".jfr");
                double seconds;
                try (Recording rec = new Recording()) {
                    rec.enable("jdk.JavaMonitorEnter").withThreshold(Duration.ZERO).withStackTrace();
                    rec.enable("jdk.SocketRead").withThreshold(Duration.ZERO).withStackTrace();
                    rec.enable("jdk.FileForce").withThreshold(Duration.ZERO).withStackTrace();
                    rec.start();
                    long t0 = System.nanoTime();
                    UUID id = requests.submit("bench", new StageRequests.NewStageRequest(null, names, null, 86_400L, null, "atlas"))
                            .request().id();
                    waitDone(jdbc, id);
                    seconds = (System.nanoTime() - t0) / 1e9;
                    rec.stop();
                    rec.dump(jfr);
                }
                long driveWrites = tapeDriveWrites(jdbc) - driveWrites0;
                double[] blocked = blockedOn(jfr, engineClass);
                int n = names.size();
                // the two statements as the code sends them, here with nothing to change (as nearly always)
                double verifiedUs = perCallMicros(jdbc, 2000, i -> jdbc.update("""
                        UPDATE segment s SET verified = true FROM volume v
                         WHERE v.id = s.volume_id AND v.label = ? AND s.file_id = ? AND NOT s.verified""",
                        "R1_0", -1L - i));
                double clearUs = perCallMicros(jdbc, 2000, i -> jdbc.update("""
                        UPDATE tape_drive SET volume_label = NULL, updated_at = now(),
                            state = CASE WHEN state IN ('failed', 'disabled') THEN state ELSE 'empty' END
                         WHERE library = ? AND volume_label = ? AND name <> ?""", "sim", "R1_0", "drive01"));
                System.out.printf("round %d: %d files in %.2f s = %.0f files/s (%.2f ms a file); threads blocked on the engine's monitor: "
                                + "%.0f times, %.2f s in all (%.2f ms a file); tape_drive rows written %d (%.2f a file); "
                                + "round trip: segment-verified UPDATE %.0f us, drive-clear UPDATE %.0f us; load %s%n",
                        round, n, seconds, n / seconds, 1000 * seconds / n, blocked[0], blocked[1], 1000 * blocked[1] / n,
                        driveWrites, (double) driveWrites / n, verifiedUs, clearUs,
                        java.nio.file.Files.readString(Path.of("/proc/loadavg")).trim());
                waits(jfr, n);
            }
        } finally {
            FileSystemUtils.deleteRecursively(work);
        }
        System.exit(0);
    }

    static List<String> catalog(JdbcTemplate jdbc, String tag, int volumes, int perVolume, long size, long gap) {
        List<String> names = new ArrayList<>();
        for (int v = 0; v < volumes; v++) {
            long vol = jdbc.queryForObject("INSERT INTO volume (label) VALUES (?) RETURNING id", Long.class, tag + v);
            List<Object[]> files = new ArrayList<>();
            for (int k = 0; k < perVolume; k++) {
                String name = "/bench/rows/" + tag + "/v" + v + "/f" + k;
                names.add(name);
                files.add(new Object[] {name, size, SimulatedContent.adler32Hex(name, size)});
            }
            jdbc.batchUpdate("INSERT INTO file (name, size_bytes, adler32, experiment) VALUES (?, ?, ?, 'atlas')", files);
            jdbc.update("""
                    INSERT INTO segment (file_id, volume_id, offset_bytes)
                    SELECT f.id, ?, 1000000000 + (row_number() OVER (ORDER BY f.id) - 1) * ? FROM file f WHERE f.name LIKE ?""",
                    vol, size + gap, "/bench/rows/" + tag + "/v" + v + "/%");
        }
        jdbc.execute("ANALYZE");
        return names;
    }

    static long tapeDriveWrites(JdbcTemplate jdbc) {
        jdbc.execute("SELECT pg_stat_clear_snapshot()");
        Long n = jdbc.queryForObject("SELECT coalesce(n_tup_upd + n_tup_ins, 0) FROM pg_stat_user_tables WHERE relname = 'tape_drive'", Long.class);
        return n == null ? 0 : n;
    }

    static void waitDone(JdbcTemplate jdbc, UUID id) throws InterruptedException {
        long t0 = System.nanoTime();
        while (true) {
            String state = jdbc.queryForObject("SELECT state FROM stage_request WHERE id = ?", String.class, id);
            if (!state.equals("submitted") && !state.equals("active")) {
                if (!state.equals("done")) throw new IllegalStateException("request ended " + state);
                return;
            }
            if (System.nanoTime() - t0 > Duration.ofMinutes(30).toNanos()) throw new IllegalStateException("request still " + state);
            Thread.sleep(20);
        }
    }

    /** Count and seconds of monitor-enter waits on instances of {@code monitorClass}. */
    static double[] blockedOn(Path jfr, String monitorClass) throws Exception {
        double count = 0, seconds = 0;
        for (RecordedEvent e : RecordingFile.readAllEvents(jfr)) {
            if (e.getEventType().getName().equals("jdk.JavaMonitorEnter") && e.getClass("monitorClass") != null && monitorClass.equals(e.getClass("monitorClass").getName())) {
                count++;
                seconds += e.getDuration().toNanos() / 1e9;
            }
        }
        return new double[] {count, seconds};
    }

    /**
     * Where the threads waited on the database (socket reads) and on fsync (file forces), per file, by the first
     * Stagehand methods on the stack.
     */
    static void waits(Path jfr, int files) throws Exception {
        java.util.Map<String, double[]> by = new java.util.TreeMap<>();
        for (RecordedEvent e : RecordingFile.readAllEvents(jfr)) {
            String type = e.getEventType().getName();
            if (!type.equals("jdk.SocketRead") && !type.equals("jdk.FileForce") || e.getStackTrace() == null) continue;
            List<String> frames = new ArrayList<>();
            for (var f : e.getStackTrace().getFrames()) {
                String c = f.getMethod().getType().getName();
                if (c.startsWith("dev.stagehand.") && frames.size() < 3) frames.add(c.substring(c.lastIndexOf('.') + 1) + "." + f.getMethod().getName() + ":" + f.getLineNumber());
            }
            double[] v = by.computeIfAbsent(type.substring(4) + " " + String.join(" < ", frames), k -> new double[2]);
            v[0]++;
            v[1] += e.getDuration().toNanos() / 1e6;
        }
        by.entrySet().stream().sorted((a, b) -> Double.compare(b.getValue()[1], a.getValue()[1])).limit(40).forEach(en ->
                System.out.printf("    %7.3f ms a file, %5.2f calls a file: %s%n", en.getValue()[1] / files, en.getValue()[0] / files, en.getKey()));
    }

    /** Median over 5 batches of the microseconds one call takes. */
    static double perCallMicros(JdbcTemplate jdbc, int calls, java.util.function.IntConsumer call) {
        double[] v = new double[5];
        for (int b = 0; b < v.length; b++) {
            long t = System.nanoTime();
            for (int i = 0; i < calls; i++) call.accept(i);
            v[b] = (System.nanoTime() - t) / 1e3 / calls;
        }
        Arrays.sort(v);
        return v[2];
    }
}
