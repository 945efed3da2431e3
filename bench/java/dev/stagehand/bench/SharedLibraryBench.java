package dev.stagehand.bench;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.stagehand.cache.CacheProperties;
import dev.stagehand.cache.DiskCache;
import dev.stagehand.platform.ScaledClock;
import dev.stagehand.recall.RecallProperties;
import dev.stagehand.recall.service.RecallService;
import dev.stagehand.tape.DriveStateStore;
import dev.stagehand.tape.DriveStatus;
import dev.stagehand.tape.LibraryEvents;
import dev.stagehand.tape.LibraryLayout;
import dev.stagehand.tape.LibraryStats;
import dev.stagehand.tape.ReadBatch;
import dev.stagehand.tape.ReadResult;
import dev.stagehand.tape.ScriptLibrary;
import dev.stagehand.tape.SegmentRead;
import dev.stagehand.tape.SharedDrives;
import dev.stagehand.tape.SimulatedContent;
import dev.stagehand.tape.SimulatedLibrary;
import dev.stagehand.tape.TapeFailure;
import dev.stagehand.tape.TapeModel;
import dev.stagehand.tape.TapeProperties;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.transaction.support.TransactionTemplate;
import org.springframework.util.FileSystemUtils;
import org.springframework.util.unit.DataSize;

/**
 * Two service instances sharing one tape library, as {@link SharedDrives} runs them (the script driver under drive
 * leases in PostgreSQL), each with its own recall scheduler and cache, on one bulk workload. The physical library is
 * one simulated LTO-9 library on a scaled real clock, behind the script protocol (a small HTTP bridge, curl in the
 * scripts): its accessors are really shared, and it counts their waits. Each round runs the same workload twice, in
 * alternating order: on two instances, and on one instance with every drive (the same driver under leases: what
 * sharing costs). Bytes are scaled down 1000x with the read rate and the rewind thresholds, the model's times
 * unchanged: a run writes megabytes, not terabytes. The instances poll every 2 s of model time (the default).
 * Reported per run, in model seconds: makespan (start to last file read), mounts, remounts (mounts beyond the volumes),
 * empty mounts (a volume mounted, then dismounted without a file read: the other instance had read its files), the
 * accessors' waits and utilization, the most mounts under way at once in the library (both instances'; the budget is
 * accessors x 4). Usage: SharedLibraryBench [volumes] [drives] [accessors] [rounds] [speed]; SHARED_BENCH_TRACE=1
 * prints every mount and dismount with the instance holding the drive.
 */
public final class SharedLibraryBench {

    /** LTO-9 with bytes / 1000: a 4 MB file reads as long as a 4 GB one. */
    static final TapeModel MODEL = new TapeModel(18_000_000_000L, 280, 70, 6.7, 17, 4.3, 6.7, 3.2, 5.2, 11.3, 60, 400e3,
            55, 5_000_000L, 110, 50_000_000L, 165, 30);

    record Result(double makespan, long mounts, int volumes, int emptyMounts, long dismounts, double accessorWait,
                  double accessorBusy, int mostMountsUnderWay, int failures) {}

    public static void main(String[] args) throws Exception {
        int volumes = args.length > 0 ? Integer.parseInt(args[0]) : 64;
        int drives = args.length > 1 ? Integer.parseInt(args[1]) : 8;
        int accessors = args.length > 2 ? Integer.parseInt(args[2]) : 1;
        int rounds = args.length > 3 ? Integer.parseInt(args[3]) : 3;
        double speed = args.length > 4 ? Double.parseDouble(args[4]) : 60;
        System.out.printf(Locale.ROOT, "two instances, one library: %d volumes, %d drives, %d accessor(s), %d exchanges per"
                + " accessor, clock x%.0f, %d rounds%n", volumes, drives, accessors, 4, speed, rounds);
        System.out.println("round variant              makespan_s mounts remounts empty_mounts dismounts accessor_wait_s wait/move_s accessor_util most_mounts_under_way failures");
        Map<Integer, List<Result>> all = new HashMap<>();
        try (ConfigurableApplicationContext ctx = BenchSupport.withoutRounds()) {
            JdbcTemplate jdbc = ctx.getBean(JdbcTemplate.class);
            JdbcClient db = ctx.getBean(JdbcClient.class);
            TransactionTemplate tx = ctx.getBean(TransactionTemplate.class);
            // the drive rows of earlier runs (drives left holding a cartridge): a library of the same name took them over
            jdbc.update("DELETE FROM tape_drive WHERE library LIKE 'shared-bench-%'");
            jdbc.update("DELETE FROM drive_lease WHERE library LIKE 'shared-bench-%'");
            for (int round = 1; round <= rounds; round++) {
                for (int instances : round % 2 == 1 ? new int[] {2, 1} : new int[] {1, 2}) {
                    BenchSupport.clean(jdbc);
                    Result r = new Run(jdbc, db, tx, "shared-bench-" + round + "-" + instances, volumes, drives,
                            accessors, speed, instances).run();
                    all.computeIfAbsent(instances, k -> new ArrayList<>()).add(r);
                    System.out.printf(Locale.ROOT, "%5d %-21s %10.0f %6d %8d %12d %9d %15.0f %11.1f %13.2f %21d %8d%n", round,
                            instances == 2 ? "two instances" : "one instance", r.makespan, r.mounts, r.mounts - r.volumes, r.emptyMounts, r.dismounts,
                            r.accessorWait, r.accessorWait / Math.max(1, r.mounts + r.dismounts),
                            r.accessorBusy / accessors / r.makespan, r.mostMountsUnderWay, r.failures);
                }
            }
        }
        List<Result> two = all.get(2), one = all.get(1);
        StringBuilder ratios = new StringBuilder();
        for (int i = 0; i < two.size(); i++)
            ratios.append(String.format(Locale.ROOT, " %.3f", two.get(i).makespan / one.get(i).makespan));
        System.out.printf(Locale.ROOT, "makespan, two instances / one, per round:%s; median %.0f s vs %.0f s%n", ratios,
                median(two, Result::makespan), median(one, Result::makespan));
        System.out.printf(Locale.ROOT, "median accessor wait %.0f s vs %.0f s; median remounts %.0f vs %.0f; median empty mounts %.0f vs %.0f%n",
                median(two, Result::accessorWait), median(one, Result::accessorWait), median(two, r -> r.mounts - r.volumes),
                median(one, r -> r.mounts - r.volumes), median(two, r -> r.emptyMounts), median(one, r -> r.emptyMounts));
        System.exit(0); // the scaled clocks' and the bridges' threads
    }

    static double median(List<Result> rs, java.util.function.ToDoubleFunction<Result> of) {
        double[] m = rs.stream().mapToDouble(of).sorted().toArray();
        return m.length % 2 == 1 ? m[m.length / 2] : (m[m.length / 2 - 1] + m[m.length / 2]) / 2;
    }

    /** One run: the library, its bridge, two instances' views of it and their schedulers, the workload. */
    static final class Run {
        final JdbcTemplate jdbc;
        final JdbcClient db;
        final TransactionTemplate tx;
        final String name;
        final int volumes, drives, accessors;
        final int instances;
        final ScaledClock clock;
        final Path work;
        final Object lock = new Object();
        int mountsUnderWay, mostMountsUnderWay, failures, emptyMounts;
        /** Per drive, files read since its mount; volumes mounted. */
        final Map<String, Integer> readSinceMount = new HashMap<>();
        final java.util.Set<String> mounted = new java.util.HashSet<>();
        final boolean trace = System.getenv("SHARED_BENCH_TRACE") != null;
        Instant lastRead, t0;
        List<String> driveNames;

        Run(JdbcTemplate jdbc, JdbcClient db, TransactionTemplate tx, String name, int volumes, int drives, int accessors,
            double speed, int instances) throws IOException {
            this.jdbc = jdbc;
            this.db = db;
            this.tx = tx;
            this.name = name;
            this.volumes = volumes;
            this.drives = drives;
            this.accessors = accessors;
            this.instances = instances;
            this.clock = new ScaledClock(speed);
            this.work = Path.of("target/bench/shared-library", name).toAbsolutePath();
            FileSystemUtils.deleteRecursively(work);
            Files.createDirectories(work);
        }

        Result run() throws Exception {
            List<UUID> requests = catalog();
            SimulatedLibrary sim = SimulatedLibrary.builder(clock).name(name).drives(drives).accessors(accessors).model(MODEL)
                    .root(work.resolve("tape")).mountTimeout(Duration.ofHours(2)).events(tracker()).build();
            driveNames = sim.layout().drives();
            HttpServer bridge = bridge(sim);
            Path script = work.resolve("simlib.sh");
            // the script protocol over the bridge: OK/ERR lines as the library reports them, its exit code last
            Files.writeString(script, """
                    #!/usr/bin/env bash
                    u="$1/$2?drive=$3&volume=${4:-}"
                    if [ -n "${5:-}" ]; then c=(curl -sS -N --data-binary @"$5" "$u"); else c=(curl -sS -N "$u"); fi
                    "${c[@]}" | { while IFS= read -r l; do case $l in "EXIT "*) exit "${l#EXIT }";; *) echo "$l";; esac; done; exit 3; }
                    """);
            String url = "http://127.0.0.1:" + bridge.getAddress().getPort();
            List<SharedDrives> views = new ArrayList<>();
            List<RecallService> services = new ArrayList<>();
            for (int i = 0; i < instances; i++) {
                String instance = (char) ('a' + i) + "-" + name;
                views.add(view(instance, script, url));
                services.add(service(instance, views.getLast()));
            }
            t0 = clock.now();
            services.forEach(RecallService::start);
            long until = System.nanoTime() + Duration.ofMinutes(30).toNanos();
            try {
                while (!allDone(requests)) {
                    if (System.nanoTime() > until) throw new IllegalStateException(name + ": requests not done within 30 minutes");
                    Thread.sleep(100);
                }
            } finally {
                services.forEach(RecallService::stop);
                views.forEach(SharedDrives::close);
            }
            LibraryStats s = sim.stats();
            Result r;
            synchronized (lock) {
                r = new Result(Duration.between(t0, lastRead).toNanos() / 1e9, s.mounts(), mounted.size(), emptyMounts, s.dismounts(), s.accessorWaitSeconds(),
                        s.accessorBusySeconds(), mostMountsUnderWay, failures + (int) s.segmentsFailed());
            }
            bridge.stop(0);
            sim.close();
            clock.close();
            FileSystemUtils.deleteRecursively(work);
            return r;
        }

        /** Volumes of 2-6 files of 1-8 MB (1-8 GB unscaled) at random places; four bulk requests of a quarter of them each. */
        List<UUID> catalog() {
            Random random = new Random(11);
            List<UUID> requests = new ArrayList<>();
            for (int k = 0; k < 4; k++) {
                UUID id = UUID.randomUUID();
                jdbc.update("INSERT INTO stage_request (id, owner, experiment, file_count) VALUES (?, 'bench', 'atlas', 1)", id); // counted below
                requests.add(id);
            }
            int[] counts = new int[4];
            for (int v = 0; v < volumes; v++) {
                long vol = jdbc.queryForObject("INSERT INTO volume (label, library) VALUES (?, ?) RETURNING id", Long.class,
                        String.format("SB%04d", v), name);
                int files = 2 + random.nextInt(5);
                long[] offsets = random.longs(files, 0, MODEL.capacityBytes() - 60_000_000L).sorted().toArray();
                for (int f = 0; f < files; f++) {
                    long size = 1_000_000L + random.nextLong(7_000_000L);
                    long at = f > 0 ? Math.max(offsets[f], offsets[f - 1] + 8_000_000L) : offsets[f];
                    offsets[f] = at;
                    String file = String.format("/bench/shared/v%04d/f%d", v, f);
                    long id = jdbc.queryForObject("INSERT INTO file (name, size_bytes, adler32, experiment) VALUES (?, ?, ?, 'atlas') RETURNING id",
                            Long.class, file, size, SimulatedContent.adler32Hex(file, size));
                    jdbc.update("INSERT INTO segment (file_id, volume_id, offset_bytes) VALUES (?, ?, ?)", id, vol, at);
                    jdbc.update("INSERT INTO stage_request_file (request_id, file_id, ordinal) VALUES (?, ?, ?)",
                            requests.get(v % 4), id, ++counts[v % 4]);
                }
            }
            for (int k = 0; k < 4; k++)
                jdbc.update("UPDATE stage_request SET file_count = ? WHERE id = ?", counts[k], requests.get(k));
            return requests;
        }

        boolean allDone(List<UUID> requests) {
            return jdbc.queryForObject("SELECT count(*) FROM stage_request WHERE id = ANY(?) AND state <> 'done'", Integer.class,
                    (Object) requests.toArray(UUID[]::new)) == 0;
        }

        /** Mounts under way in the physical library (both instances'), the last file read, failures. */
        LibraryEvents tracker() {
            return new LibraryEvents() {
                @Override
                public void mountStarted(String drive, String volume, Instant at) {
                    synchronized (lock) {
                        mostMountsUnderWay = Math.max(mostMountsUnderWay, ++mountsUnderWay);
                        readSinceMount.put(drive, 0);
                        mounted.add(volume);
                    }
                    trace("mount", drive, volume, at);
                }

                @Override
                public void mountFinished(String drive, String volume, Instant at, TapeFailure failure) {
                    synchronized (lock) {
                        mountsUnderWay--;
                        if (failure != null) failures++;
                    }
                }

                @Override
                public void segmentRead(String drive, ReadResult result) {
                    synchronized (lock) {
                        if (lastRead == null || result.finishedAt().isAfter(lastRead)) lastRead = result.finishedAt();
                        readSinceMount.merge(drive, 1, Integer::sum);
                    }
                }

                @Override
                public void dismounted(String drive, String volume, Instant at) {
                    synchronized (lock) {
                        if (readSinceMount.getOrDefault(drive, 0) == 0) emptyMounts++;
                        trace("dismounted after " + readSinceMount.get(drive) + " files", drive, volume, at);
                    }
                }
            };
        }

        void trace(String what, String drive, String volume, Instant at) {
            if (!trace) return;
            String holder = db.sql("SELECT instance FROM drive_lease WHERE library = ? AND drive = ?").params(name, drive)
                    .query(String.class).optional().orElse("-");
            System.out.printf(Locale.ROOT, "  %s %7.0f %s %s %s %s%n", name, Duration.between(t0, at).toMillis() / 1e3, holder, drive, volume, what);
        }

        /** One instance's view of the library: the script driver over the bridge, under drive leases. */
        SharedDrives view(String instance, Path script, String url) {
            DriveStateStore store = new DriveStateStore(db);
            Duration limit = Duration.ofHours(1);
            TapeProperties.Script cfg = new TapeProperties.Script(cmd(script, url, "mount"), cmd(script, url, "read"),
                    cmd(script, url, "write"), cmd(script, url, "dismount"), work.resolve("script-" + instance),
                    limit, limit, limit, limit, TapeProperties.WriteChecksum.TRUST_SOURCE);
            List<DriveStatus> rows = SharedDrives.rowsToRestore(db, name, instance, store.load(name));
            ScriptLibrary lib = new ScriptLibrary(new LibraryLayout(name, driveNames, accessors), cfg, store, rows);
            return new SharedDrives(lib, db, tx, store, instance, Duration.ofSeconds(10)).start();
        }

        static List<String> cmd(Path script, String url, String verb) {
            return List.of("bash", script.toString(), url, verb);
        }

        RecallService service(String instance, SharedDrives shared) {
            DiskCache cache = cache(instance);
            Duration poll = Duration.ofMillis(Math.max(10, Math.round(2000 / clock.factor())));
            RecallProperties props = new RecallProperties(true, "tape-aware", 20_000_000L, poll, Duration.ofMinutes(10), instance,
                    500_000_000L, 10_000, Duration.ofMinutes(5), Duration.ofHours(4), Duration.ofMinutes(5),
                    2_000_000_000L, 20_000, 4, Map.of(), Map.of());
            return new RecallService(jdbc, shared, clock, MODEL, props, cache);
        }

        DiskCache cache(String node) {
            Clock c = new Clock() {
                @Override public ZoneId getZone() { return ZoneOffset.UTC; }
                @Override public Clock withZone(ZoneId zone) { return this; }
                @Override public Instant instant() { return clock.now(); }
            };
            DiskCache cache = new DiskCache(db, tx, new CacheProperties(List.of(new CacheProperties.Directory(
                    work.resolve("cache-" + node), DataSize.ofGigabytes(100), true)), node), c, null);
            cache.start();
            return cache;
        }

        /** The script protocol's mount, read and dismount on the simulated library; the exit code as a last line. */
        HttpServer bridge(SimulatedLibrary sim) throws IOException {
            HttpServer s = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 64);
            s.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
            s.createContext("/mount", x -> answer(x, out -> exit(out, () -> sim.mount(q(x, "drive"), q(x, "volume")))));
            s.createContext("/dismount", x -> answer(x, out -> exit(out, () -> sim.dismount(q(x, "drive")))));
            s.createContext("/write", x -> answer(x, out -> line(out, "EXIT 3")));
            s.createContext("/read", x -> {
                String drive = q(x, "drive"), volume = q(x, "volume");
                List<SegmentRead> segs = new ArrayList<>();
                for (String l : new String(x.getRequestBody().readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
                    if (l.isBlank()) continue;
                    String[] f = l.split("\t");
                    segs.add(new SegmentRead(Long.parseLong(f[0]), f[4], volume, Long.parseLong(f[1]), Long.parseLong(f[2]), Path.of(f[3])));
                }
                answer(x, out -> {
                    ReadBatch batch;
                    try {
                        batch = sim.read(drive, segs);
                    } catch (RuntimeException e) {
                        line(out, "EXIT 3");
                        return;
                    }
                    List<CompletableFuture<?>> each = new ArrayList<>();
                    for (SegmentRead seg : segs)
                        each.add(batch.result(seg).handle((r, e) -> {
                            line(out, e == null ? "OK " + seg.fileId() + " " + SimulatedContent.hex(r.adler32())
                                    : "ERR " + seg.fileId() + " " + kind(e) + " " + e.getMessage());
                            return null;
                        }));
                    CompletableFuture.allOf(each.toArray(CompletableFuture[]::new)).join();
                    batch.done().handle((v, e) -> null).join();
                    line(out, "EXIT 0");
                });
            });
            s.start();
            return s;
        }

        interface Body {
            void write(OutputStream out) throws Exception;
        }

        static void answer(HttpExchange x, Body body) throws IOException {
            x.sendResponseHeaders(200, 0);
            try (OutputStream out = x.getResponseBody()) {
                body.write(out);
            } catch (Exception e) {
                throw new IOException(e);
            }
        }

        static void exit(OutputStream out, java.util.function.Supplier<CompletableFuture<Void>> op) throws InterruptedException {
            try {
                op.get().get();
                line(out, "EXIT 0");
            } catch (ExecutionException e) {
                line(out, "EXIT " + code(e.getCause()));
            } catch (RuntimeException e) {
                line(out, "EXIT 3");
            }
        }

        static String kind(Throwable e) {
            if (e instanceof CompletionException c && c.getCause() != null) e = c.getCause();
            return e instanceof TapeFailure f ? f.kind().name() : "MEDIA_ERROR";
        }

        static int code(Throwable e) {
            if (!(e instanceof TapeFailure f)) return 3;
            return switch (f.kind()) {
                case MEDIA_ERROR -> 2;
                case VOLUME_UNAVAILABLE -> 4;
                case TIMEOUT -> 5;
                default -> 3;
            };
        }

        static void line(OutputStream out, String l) {
            synchronized (out) {
                try {
                    out.write((l.replace('\n', ' ') + "\n").getBytes(StandardCharsets.UTF_8));
                    out.flush();
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            }
        }

        static String q(HttpExchange x, String key) {
            URI u = x.getRequestURI();
            for (String p : u.getRawQuery().split("&")) {
                int i = p.indexOf('=');
                if (p.substring(0, i).equals(key)) return URLDecoder.decode(p.substring(i + 1), StandardCharsets.UTF_8);
            }
            return "";
        }
    }
}
