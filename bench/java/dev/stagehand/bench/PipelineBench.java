package dev.stagehand.bench;

import dev.stagehand.StagehandApplication;
import dev.stagehand.cache.CacheProperties;
import dev.stagehand.cache.DiskCache;
import dev.stagehand.platform.VirtualClock;
import dev.stagehand.recall.RecallProperties;
import dev.stagehand.recall.StageRequests;
import dev.stagehand.recall.service.RecallService;
import dev.stagehand.tape.SimulatedContent;
import dev.stagehand.tape.SimulatedLibrary;
import dev.stagehand.tape.TapeModel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.transaction.support.TransactionTemplate;
import org.springframework.util.FileSystemUtils;
import org.springframework.util.unit.DataSize;

/**
 * Pipeline overlap: tape reads into the disk cache while a downstream drain empties it. The real recall
 * service (scheduler, PostgreSQL queue, disk cache with reservations, pins and eviction) runs on the
 * simulated library on a virtual clock. Byte sizes are scaled down 1000x (a 5 MB file stands for 5 GB; the
 * tape rate is 400 kB/s for LTO-9's 400 MB/s; mount, locate and rewind times are LTO-9's), so the disk I/O
 * stays small; all times are simulated seconds.
 *
 * <p>The drain stands in for the GridFTP movers (not wired yet): a consumer that copies each verified file
 * out of the cache at a configured rate and then releases it through {@link StageRequests#release}.
 */
public final class PipelineBench {

    static final double SCALE = 1000;

    public static void main(String[] args) throws Exception {
        int volumes = args.length > 0 ? Integer.parseInt(args[0]) : 4;
        int perVolume = args.length > 1 ? Integer.parseInt(args[1]) : 20;
        long size = args.length > 2 ? Long.parseLong(args[2]) : 5_000_000L;
        double drainRate = args.length > 3 ? Double.parseDouble(args[3]) : 300_000; // bytes/s, scaled
        int cacheFiles = args.length > 4 ? Integer.parseInt(args[4]) : volumes * perVolume / 4;
        Path work = Path.of("target/bench-pipeline").toAbsolutePath();
        FileSystemUtils.deleteRecursively(work);
        try (ConfigurableApplicationContext ctx = new SpringApplicationBuilder(StagehandApplication.class)
                .web(WebApplicationType.NONE)
                .properties("stagehand.db.local-dir=target/pg", "stagehand.db.local-database=" + BenchSupport.DATABASE,
                        "stagehand.recall.enabled=false", "stagehand.cache.directories[0].path=" + work.resolve("default"),
                        "logging.level.root=WARN")
                .run()) {
            Bench b = new Bench(ctx, work, volumes, perVolume, size, drainRate);
            BenchSupport.clean(b.jdbc);
            int n = volumes * perVolume;
            System.out.printf("pipeline bench: %d files of %s (stands for %s) on %d volumes, 2 drives (LTO-9 timings, bytes / %.0f);%n",
                    n, mb(size), gb(size * SCALE), volumes, SCALE);
            System.out.printf("drain: ONE consumer copying verified files out of the cache at %s/s (stands for %s/s) and releasing them --%n",
                    kb(drainRate), mb(drainRate * SCALE));
            System.out.println("       a stand-in for the GridFTP movers, which are not wired to the cache yet. Times are simulated seconds.");

            Run tape = b.run("tape", n * size * 2, false);
            double drainAlone = b.drainAlone(tape);
            Run pipe = b.run("pipe", (long) cacheFiles * size + size / 2, true);
            double slowest = Math.max(tape.tapeSeconds, drainAlone);
            double sum = tape.tapeSeconds + drainAlone;
            System.out.printf("%n%-62s %10s%n", "", "seconds");
            System.out.printf("%-62s %10.0f%n", "tape stage alone (all files to an unbounded cache, no drain)", tape.tapeSeconds);
            System.out.printf("%-62s %10.0f%n", "drain stage alone (all files already cached)", drainAlone);
            System.out.printf("%-62s %10.0f%n", "sum of stages (stage all, then transfer: the serial baseline)", sum);
            System.out.printf("%-62s %10.0f%n", "Stagehand pipeline, cache of " + cacheFiles + " files (" + (100 * cacheFiles / n) + " % of the data)",
                    pipe.endSeconds);
            System.out.printf("  end-to-end / slowest stage = %.2f; end-to-end / sum of stages = %.2f%n", pipe.endSeconds / slowest, pipe.endSeconds / sum);
            System.out.printf("  cache never over capacity: peak held %s of %s; %d mounts (tape alone: %d); no file failed: %s%n",
                    mb(pipe.peakHeld), mb(pipe.capacity), pipe.mounts, tape.mounts, pipe.failed == 0);
        }
    }

    static String mb(double b) { return String.format("%.1f MB", b / 1e6); }
    static String gb(double b) { return String.format("%.1f GB", b / 1e9); }
    static String kb(double b) { return String.format("%.0f kB", b / 1e3); }

    record Run(double tapeSeconds, double endSeconds, long peakHeld, long capacity, int mounts, long failed, UUID request,
               DiskCache cache, VirtualClock clock) {}

    static final class Bench {
        final JdbcTemplate jdbc;
        final JdbcClient db;
        final TransactionTemplate tx;
        final StageRequests requests;
        final Path work;
        final int volumes, perVolume;
        final long size;
        final double drainRate;
        final TapeModel model = scaled(TapeModel.lto9());

        Bench(ConfigurableApplicationContext ctx, Path work, int volumes, int perVolume, long size, double drainRate) {
            this.jdbc = ctx.getBean(JdbcTemplate.class);
            this.db = ctx.getBean(JdbcClient.class);
            this.tx = ctx.getBean(TransactionTemplate.class);
            this.requests = ctx.getBean(StageRequests.class);
            this.work = work;
            this.volumes = volumes;
            this.perVolume = perVolume;
            this.size = size;
            this.drainRate = drainRate;
        }

        /** LTO-9 with byte quantities divided by SCALE: times per file are those of files SCALE times larger. */
        static TapeModel scaled(TapeModel m) {
            return new TapeModel((long) (m.capacityBytes() / SCALE), m.wraps(), m.wrapsPerBand(), m.accessorMoveSeconds(),
                    m.loadSeconds(), m.locateBaseSeconds(), m.wrapChangeSeconds(), m.bandChangeSeconds(),
                    m.directionChangeSeconds(), m.backwardSeconds(), m.fullLengthSeconds(), m.bytesPerSecond() / SCALE,
                    m.rewindShortSeconds(), (long) (m.rewindShortBelowBytes() / SCALE), m.rewindMediumSeconds(),
                    (long) (m.rewindMediumBelowBytes() / SCALE), m.rewindLongSeconds(), m.unthreadSeconds());
        }

        List<String> catalog(String tag) {
            List<String> names = new ArrayList<>();
            for (int v = 0; v < volumes; v++) {
                String label = "PB" + tag + v;
                long vol = jdbc.queryForObject("INSERT INTO volume (label) VALUES (?) RETURNING id", Long.class, label);
                for (int k = 0; k < perVolume; k++) {
                    String name = "/bench/pipeline/" + tag + "/v" + v + "/f" + k;
                    long id = jdbc.queryForObject("INSERT INTO file (name, size_bytes, adler32, experiment) VALUES (?, ?, ?, 'atlas') RETURNING id",
                            Long.class, name, size, SimulatedContent.adler32Hex(name, size));
                    jdbc.update("INSERT INTO segment (file_id, volume_id, offset_bytes) VALUES (?, ?, ?)", id, vol, k * size);
                    names.add(name);
                }
            }
            return names;
        }

        DiskCache cache(String tag, long capacity, VirtualClock clock) {
            DiskCache c = new DiskCache(db, tx, new CacheProperties(List.of(new CacheProperties.Directory(work.resolve("cache-" + tag),
                    DataSize.ofBytes(capacity))), "bench-" + tag), new Clock() {
                        @Override public ZoneId getZone() { return ZoneOffset.UTC; }
                        @Override public Clock withZone(ZoneId zone) { return this; }
                        @Override public Instant instant() { return clock.now(); }
                    }, null);
            c.start();
            return c;
        }

        /** One recall of every file; with {@code drain}, the drain runs alongside and the run ends when all are drained. */
        Run run(String tag, long capacity, boolean drain) throws Exception {
            VirtualClock clock = new VirtualClock();
            List<String> names = catalog(tag);
            DiskCache cache = cache(tag, capacity, clock);
            int[] mounts = {0};
            SimulatedLibrary lib = SimulatedLibrary.builder(clock).name("bench-" + tag).drives(2).accessors(1).model(model)
                    .root(work.resolve("lib-" + tag)).build();
            dev.stagehand.tape.TapeLibrary counting = new dev.stagehand.tape.TapeLibrary() {
                public dev.stagehand.tape.LibraryLayout layout() { return lib.layout(); }
                public List<dev.stagehand.tape.DriveStatus> drives() { return lib.drives(); }
                public java.util.concurrent.CompletableFuture<Void> mount(String d, String v) { mounts[0]++; return lib.mount(d, v); }
                public dev.stagehand.tape.ReadBatch read(String d, List<dev.stagehand.tape.SegmentRead> s) { return lib.read(d, s); }
                public dev.stagehand.tape.WriteBatch write(String d, List<dev.stagehand.tape.FileWrite> f) { return lib.write(d, f); }
                public java.util.concurrent.CompletableFuture<Void> dismount(String d) { return lib.dismount(d); }
            };
            RecallProperties props = new RecallProperties(true, "tape-aware", 4 * size, Duration.ZERO, Duration.ofMinutes(10),
                    "bench-" + tag, 500_000_000_000L, 10_000, Duration.ofMinutes(5), Duration.ofHours(4), Duration.ofMinutes(5),
                    2_000_000_000_000L, 20_000, 4, Map.of(), Map.of());
            RecallService service = new RecallService(jdbc, counting, clock, TapeModel.lto9(), props, cache);
            service.start();
            UUID id = requests.submit("bench", new StageRequests.NewStageRequest(null, names, null, 7L * 86_400, null, "atlas"))
                    .request().id();
            Instant t0 = clock.now();
            Drain d = drain ? new Drain(clock, id, work.resolve("out-" + tag)) : null;
            double tapeDone = Double.NaN;
            long peak = 0;
            String dir = work.resolve("cache-" + tag).toString();
            for (int step = 0; step < 20_000; step++) {
                service.poll();
                if (d != null) d.tick();
                clock.advance(Duration.ofSeconds(2));
                peak = Math.max(peak, jdbc.queryForObject("SELECT used_bytes + reserved_bytes FROM cache_directory WHERE path = ?", Long.class, dir));
                String state = jdbc.queryForObject("SELECT state FROM stage_request WHERE id = ?", String.class, id);
                if (Double.isNaN(tapeDone) && !state.equals("active") && !state.equals("submitted")) {
                    tapeDone = secondsSince(t0, clock);
                }
                if (!Double.isNaN(tapeDone) && (d == null || d.drained == names.size())) break;
            }
            service.stop();
            lib.close();
            long failed = jdbc.queryForObject("SELECT count(*) FROM stage_request_file WHERE request_id = ? AND state = 'failed'", Long.class, id);
            double end = d == null ? tapeDone : Duration.between(t0, d.last).toNanos() / 1e9;
            return new Run(tapeDone, end, peak, capacity, mounts[0], failed, id, cache, clock);
        }

        /** The drain over a finished tape run's cached files: how long the drain stage takes on its own. */
        double drainAlone(Run tape) throws Exception {
            Drain d = new Drain(tape.clock(), tape.request(), work.resolve("out-alone"));
            Instant t0 = tape.clock().now();
            int n = volumes * perVolume;
            for (int step = 0; step < 100_000 && d.drained < n; step++) {
                d.tick();
                tape.clock().advance(Duration.ofSeconds(2));
            }
            return Duration.between(t0, d.last).toNanos() / 1e9;
        }

        static double secondsSince(Instant t0, VirtualClock clock) {
            return Duration.between(t0, clock.now()).toNanos() / 1e9;
        }

        /** One consumer: takes verified files in the order they landed, copies each at drainRate, then releases it. */
        final class Drain {
            final VirtualClock clock;
            final UUID request;
            final Path out;
            final Set<Long> taken = new HashSet<>();
            boolean busy;
            int drained;
            Instant last;

            Drain(VirtualClock clock, UUID request, Path out) throws Exception {
                this.clock = clock;
                this.request = request;
                this.out = Files.createDirectories(out);
            }

            void tick() {
                if (busy) return;
                List<Map<String, Object>> next = jdbc.queryForList("""
                        SELECT f.id, f.name, cf.path FROM stage_request_file x JOIN file f ON f.id = x.file_id
                          JOIN cache_file cf ON cf.file_id = x.file_id AND cf.state = 'verified'
                         WHERE x.request_id = ? AND x.state = 'on_disk' AND NOT x.released
                         ORDER BY x.finished_at, f.id LIMIT 50""", request);
                for (Map<String, Object> row : next) {
                    long id = ((Number) row.get("id")).longValue();
                    if (taken.contains(id)) continue;
                    taken.add(id);
                    busy = true;
                    String name = (String) row.get("name");
                    Path from = Path.of((String) row.get("path"));
                    clock.schedule(Duration.ofNanos((long) (size / drainRate * 1e9)), () -> {
                        try {
                            Path to = out.resolve(id + ".dat");
                            Files.copy(from, to, StandardCopyOption.REPLACE_EXISTING);
                            Files.delete(to); // the bytes went on; keep the bench's disk use small
                        } catch (Exception e) {
                            throw new IllegalStateException("drain could not copy " + from, e);
                        }
                        requests.release(request, List.of(name));
                        drained++;
                        last = clock.now();
                        busy = false;
                        tick();
                    });
                    return;
                }
            }
        }
    }
}
