package dev.stagehand.bench;

import dev.stagehand.StagehandApplication;
import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;

/** Shared pieces of the benchmarks: a deterministic catalog dump, a clean benchmark database, the service without its rounds. */
final class BenchSupport {

    static final String DATABASE = "stagehand_bench";
    static final long LTO9_BYTES = 18_000_000_000_000L;

    private BenchSupport() {}

    /**
     * A catalog for requests of {@code files} files (a tenth more rows, seed 7), written on first use and kept
     * in target/bench for the next run.
     */
    static Path catalogFor(int files) throws IOException {
        Path dump = Path.of("target/bench/catalog-" + (files + files / 10) + "-7.csv");
        if (!Files.exists(dump)) writeCatalog(dump, files + files / 10, 7);
        return dump;
    }

    /**
     * Writes {@code rows} catalog rows: files of 20 datasets (sizes 10 MB-4 GB) written back to back on
     * LTO-9 volumes, a new volume when one is full; every 10th file has a second copy on another volume.
     * The same seed gives the same bytes.
     */
    static Path writeCatalog(Path file, int rows, long seed) throws IOException {
        Files.createDirectories(file.toAbsolutePath().getParent());
        Random random = new Random(seed);
        try (BufferedWriter w = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
            w.write("# stagehand bench catalog rows=" + rows + " seed=" + seed + "\n");
            w.write("file,volume,offset_bytes,size_bytes,experiment,dataset,adler32,fseq\n");
            int volume = 0, fseq = 0, copyVolume = 5000, copyFseq = 0;
            long offset = 0, copyOffset = 0;
            int written = 0;
            for (int i = 0; written < rows; i++) {
                int ds = i / Math.max(1, rows / 22);
                String experiment = ds % 3 == 0 ? "atlas" : ds % 3 == 1 ? "cms" : "lhcb";
                long size = 10_000_000L + (long) (random.nextDouble() * random.nextDouble() * 4_000_000_000L);
                if (offset + size > LTO9_BYTES) {
                    volume++;
                    offset = 0;
                    fseq = 0;
                }
                String name = String.format("/bench/%s/ds%02d/f%07d", experiment, ds, i);
                String adler = String.format("%08x", random.nextInt() & 0xffffffffL);
                line(w, name, volume, offset, size, experiment, ds, adler, ++fseq);
                written++;
                offset += size;
                if (i % 10 == 0 && written < rows) {
                    if (copyOffset + size > LTO9_BYTES) {
                        copyVolume++;
                        copyOffset = 0;
                        copyFseq = 0;
                    }
                    line(w, name, copyVolume, copyOffset, size, experiment, ds, adler, ++copyFseq);
                    written++;
                    copyOffset += size;
                }
            }
        }
        return file;
    }

    private static void line(BufferedWriter w, String name, int volume, long offset, long size, String experiment, int ds,
                             String adler, int fseq) throws IOException {
        w.write(name);
        w.write(String.format(",B%05d,%d,%d,%s,%s.ds%02d,%s,%d%n", volume, offset, size, experiment, experiment, ds, adler, fseq));
    }

    /** Empties the benchmark database (and only it) so every run measures the same work. */
    static void clean(JdbcTemplate jdbc) {
        String db = jdbc.queryForObject("SELECT current_database()", String.class);
        if (!DATABASE.equals(db)) throw new IllegalStateException("refusing to empty database " + db);
        // volume leases too: a killed run leaves its mounted volumes leased, and a later run of the same labels
        // would wait for those leases to lapse (minutes) as if another instance held the cartridges
        jdbc.execute("TRUNCATE stage_request, recall_file, segment, file, volume, dataset, volume_lease CASCADE"); // recall_file: no key to file (V31)
        jdbc.execute("VACUUM ANALYZE");
    }

    /** The service on the benchmark database with none of its rounds running: a bench drives what it times. */
    static ConfigurableApplicationContext withoutRounds() {
        return new SpringApplicationBuilder(StagehandApplication.class)
                .web(WebApplicationType.NONE)
                .properties("stagehand.db.local-dir=target/pg", "stagehand.db.local-database=" + DATABASE,
                        "stagehand.recall.enabled=false", "stagehand.archive.enabled=false",
                        "stagehand.replication.enabled=false", "stagehand.transfer.queue.enabled=false",
                        "stagehand.replication.deletion.enabled=false", "logging.level.root=WARN")
                .run();
    }

    static String[] springArgs(boolean web) {
        return web ? new String[] {"--server.port=0", "--stagehand.db.local-database=" + DATABASE, "--logging.level.root=WARN"}
                : new String[] {"--spring.main.web-application-type=none", "--stagehand.db.local-database=" + DATABASE,
                        "--logging.level.root=WARN", "--logging.level.dev.stagehand.catalog=INFO"};
    }

    /** Seconds {@code r} took. */
    static double seconds(Runnable r) {
        long t = System.nanoTime();
        r.run();
        return (System.nanoTime() - t) / 1e9;
    }

    /**
     * Seconds {@code sql} took with {@code trigger} on {@code table}, then again without it; the trigger is enabled
     * again after as it was (some are ENABLE ALWAYS).
     */
    static double[] withAndWithoutTrigger(JdbcTemplate jdbc, String table, String trigger, String sql) {
        String mode = jdbc.queryForObject("SELECT tgenabled FROM pg_trigger WHERE tgrelid = ?::regclass AND tgname = ?",
                String.class, table, trigger);
        double with = seconds(() -> jdbc.update(sql));
        jdbc.execute("ALTER TABLE " + table + " DISABLE TRIGGER " + trigger);
        try {
            return new double[] {with, seconds(() -> jdbc.update(sql))};
        } finally {
            String enable = switch (mode) { case "A" -> "ENABLE ALWAYS"; case "R" -> "ENABLE REPLICA"; default -> "ENABLE"; };
            jdbc.execute("ALTER TABLE " + table + " " + enable + " TRIGGER " + trigger);
        }
    }

    /** The median of five measurements. */
    static double median5(java.util.function.DoubleSupplier s) {
        double[] v = new double[5];
        for (int i = 0; i < v.length; i++) v[i] = s.getAsDouble();
        java.util.Arrays.sort(v);
        return v[v.length / 2];
    }
}
