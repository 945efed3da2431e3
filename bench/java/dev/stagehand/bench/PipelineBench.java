package dev.stagehand.bench;

import dev.stagehand.StagehandApplication;
import dev.stagehand.platform.EventClock;
import dev.stagehand.platform.ScaledClock;
import dev.stagehand.recall.StageRequests;
import dev.stagehand.tape.SimulatedContent;
import dev.stagehand.transfer.GridFtpServer;
import dev.stagehand.transfer.TransferJob;
import dev.stagehand.transfer.TransferQueue;
import java.io.InputStream;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.zip.Adler32;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.util.FileSystemUtils;

/**
 * Pipeline overlap with the real movers: the whole service (recall scheduler, PostgreSQL queues, disk cache
 * with reservations and pins, transfer queue, GridFTP movers) recalls files from the simulated LTO-9 library
 * on a scaled clock and sends them to a loopback Globus GridFTP server. Three runs, all wall-clock:
 * <ol>
 *   <li>tape stage alone: a recall without destination into a cache big enough for everything;</li>
 *   <li>transfer stage alone: those cached files through the transfer queue and movers to the server;</li>
 *   <li>the pipeline: another set of files (same layout) recalled with the server as destination into a
 *       cache holding only a fraction of them, so the movers' pace drives staging (backpressure).</li>
 * </ol>
 * End to end should be close to the slower stage, not to the sum. Every delivered file is read back and
 * its Adler32 compared with the catalog's.
 */
public final class PipelineBench {

    public static void main(String[] args) throws Exception {
        int volumes = args.length > 0 ? Integer.parseInt(args[0]) : 4;
        int perVolume = args.length > 1 ? Integer.parseInt(args[1]) : 20;
        long size = args.length > 2 ? Long.parseLong(args[2]) : 5_000_000L;
        int scale = args.length > 3 ? Integer.parseInt(args[3]) : 60;
        int cachePercent = args.length > 4 ? Integer.parseInt(args[4]) : 25;
        // bytes stand for this many times more on tape: the drive's rate is divided by it (1: LTO-9 as is, so the
        // tape stage is bound by this machine's disk and CPU; 1000: a 5 MB file reads like a 5 GB one)
        int byteScale = args.length > 5 ? Integer.parseInt(args[5]) : 1000;
        if (!GridFtpServer.available()) {
            System.err.println("pipeline bench: globus-gridftp-server not found (install globus-gridftp-server-progs)");
            System.exit(2);
        }
        int n = volumes * perVolume;
        long total = n * size;
        Path work = Path.of("target/bench-pipeline").toAbsolutePath();
        FileSystemUtils.deleteRecursively(work);
        System.out.printf("pipeline bench: %d files of %.0f MB (%.2f GB) on %d volumes, 2 drives; simulated LTO-9 on a x%d clock",
                n, size / 1e6, total / 1e9, volumes, scale);
        System.out.printf("%s (a drive reads %.0f MB per second of real time);%n",
                byteScale == 1 ? "" : ", drive rate divided by " + byteScale, 400.0 * scale / byteScale);
        System.out.printf("movers: the service's GridFTP movers (defaults of stagehand.transfer.mover) to a loopback globus-gridftp-server;%n");
        System.out.printf("load average at start: %s%n", Files.readString(Path.of("/proc/loadavg")).trim());
        Path dest = Files.createTempDirectory("stagehand-bench-pipeline-"); // deleted in the finally below
        try (GridFtpServer server = GridFtpServer.anonymous(dest.resolve("server"))) {
            double tape, transfer, fill, oneFile;
            int tapeMounts;
            Timeline alone;
            // runs 1 and 2: a cache that holds everything
            try (ConfigurableApplicationContext ctx = service(work, "big", total * 2, scale, byteScale, size)) {
                Bench b = new Bench(ctx, server, dest, volumes, perVolume, size);
                b.clean();
                List<String> names = b.catalog("A");
                Cpu cpu = Cpu.now();
                UUID id = b.submit(names, null);
                tape = b.waitForRequest(id);
                alone = b.timeline(id, "A", tape);
                fill = alone.firstOnDisk;
                tapeMounts = b.mounts("A");
                System.out.printf("  tape stage alone: %.1f s (%d mounts; first file on disk after %.1f s; %s)%n", tape, tapeMounts, fill, cpu.since(tape));
                cpu = Cpu.now();
                transfer = b.transferAlone(id);
                System.out.printf("  transfer stage alone: %.1f s (%s)%n", transfer, cpu.since(transfer));
                oneFile = b.oneFileAlone(id);
                System.out.printf("  one file sent alone: %.2f s (queued to delivered)%n", oneFile);
            }
            // run 3: the pipeline, with a cache of cachePercent of the data
            long capacity = Math.max(size * 2, total * cachePercent / 100);
            try (ConfigurableApplicationContext ctx = service(work, "small", capacity, scale, byteScale, size)) {
                Bench b = new Bench(ctx, server, dest, volumes, perVolume, size);
                b.clean();
                List<String> names = b.catalog("B");
                Path delivered = b.directoryFor("pipeline", names);
                Cpu cpu = Cpu.now();
                UUID id = b.submit(names, server.url(delivered));
                Peak peak = new Peak(b.jdbc, work.resolve("cache-small").toString());
                peak.request = id;
                peak.start();
                double end = b.waitForRequest(id);
                String cpuUse = cpu.since(end);
                peak.stop();
                Timeline piped = b.timeline(id, "B", end);
                long done = b.count(id, "done"), failed = b.count(id, "failed");
                int ok = b.verify(names, delivered);
                double slowest = Math.max(tape, transfer), sum = tape + transfer;
                // an ideal pipeline still waits for the first file's tape read before anything can be sent
                // (fill) and sends the last file after the last read (drain); nothing else need be serial
                double ideal = slowest + fill + oneFile;
                double tight = Math.max(tape + oneFile, fill + transfer);
                System.out.printf("%n%-66s %9s%n", "", "seconds");
                System.out.printf("%-66s %9.1f%n", "tape stage alone (recall to a cache holding everything)", tape);
                System.out.printf("%-66s %9.1f%n", "transfer stage alone (those cached files to GridFTP)", transfer);
                System.out.printf("%-66s %9.1f%n", "slowest stage alone", slowest);
                System.out.printf("%-66s %9.1f%n", "  fill: the first file's tape time (tape alone)", fill);
                System.out.printf("%-66s %9.1f%n", "  drain: one file's transfer alone", oneFile);
                System.out.printf("%-66s %9.1f%n", "ideal pipeline bound: slowest + fill + drain", ideal);
                System.out.printf("%-66s %9.1f%n", "  (tighter: max(tape + drain, fill + transfer))", tight);
                System.out.printf("%-66s %9.1f%n", "sum of the stages (stage everything, then transfer)", sum);
                System.out.printf("%-66s %9.1f%n", "Stagehand pipeline, cache of " + cachePercent + " % of the data (end to end)", end);
                System.out.printf("  end to end / slowest stage = %.2f; / ideal bound = %.2f; / sum of the stages = %.2f%n",
                        end / slowest, end / ideal, end / sum);
                System.out.printf("%nwhere the pipeline's time goes (%s):%n", cpuUse);
                piped.print(alone);
                System.out.printf("  cache peak %.0f MB of %.0f MB; %d mounts (tape alone: %d); %d done, %d failed; "
                                + "%d of %d delivered files match the catalog's Adler32%n",
                        peak.max / 1e6, capacity / 1e6, b.mounts("B"), tapeMounts, done, failed, ok, n);
                System.out.printf("load average at end: %s%n", Files.readString(Path.of("/proc/loadavg")).trim());
            }
        } finally {
            FileSystemUtils.deleteRecursively(dest);
            FileSystemUtils.deleteRecursively(work);
        }
        System.exit(0); // the embedded PostgreSQL is stopped by the context's shutdown; nothing else to wait for
    }

    static ConfigurableApplicationContext service(Path work, String tag, long cacheBytes, int scale, int byteScale, long size) {
        return new SpringApplicationBuilder(StagehandApplication.class).web(WebApplicationType.NONE)
                .properties("stagehand.db.local-dir=target/pg", "stagehand.db.local-database=" + BenchSupport.DATABASE,
                        "logging.level.root=WARN",
                        "stagehand.tape.clock=scaled", "stagehand.tape.scale=" + scale, "stagehand.tape.drives=2",
                        // both drives read (by default the last one is kept for archive writes, which this bench has none of)
                        "stagehand.tape.roles.write-drives=0",
                        "stagehand.tape.persist-drives=false", "stagehand.tape.sim.model.bytes-per-second=" + 400_000_000L / byteScale, "stagehand.tape.sim.root=" + work.resolve("lib-" + tag),
                        "stagehand.cache.directories[0].path=" + work.resolve("cache-" + tag),
                        "stagehand.cache.directories[0].capacity=" + cacheBytes + "B",
                        "stagehand.cache.directories[0].create-missing=true",
                        // the recall and transfer queues poll at their defaults (2 s, 1 s): hand-offs and claims
                        // are woken by the service itself; -Dstagehand.recall.poll-interval=... overrides
                        "stagehand.recall.min-mount-age=0s",
                        "stagehand.recall.cache-batch-bytes=" + 4 * size)
                .run();
    }

    /** Samples the cache directory's used + reserved bytes every 100 ms. */
    static final class Peak {
        final JdbcTemplate jdbc;
        final String dir;
        volatile long max;
        volatile UUID request;
        int ticks;
        final long t0 = System.nanoTime();
        volatile boolean running = true;
        Thread thread;

        Peak(JdbcTemplate jdbc, String dir) {
            this.jdbc = jdbc;
            this.dir = dir;
        }

        void start() {
            thread = Thread.ofVirtual().start(() -> {
                while (running) {
                    Long v = jdbc.queryForObject("SELECT used_bytes + reserved_bytes FROM cache_directory WHERE path = ?", Long.class, dir);
                    if (v != null) max = Math.max(max, v);
                    if (request != null && ++ticks % 20 == 0) progress(v == null ? 0 : v);
                    try {
                        Thread.sleep(100);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            });
        }

        /** Every 2 s: files read from tape, waiting on disk, being sent, delivered; the cache's fill. */
        void progress(long cacheBytes) {
            Map<String, Object> c = jdbc.queryForMap("""
                    SELECT count(*) FILTER (WHERE state IN ('on_disk', 'transferring', 'done')) AS tape,
                           count(*) FILTER (WHERE state = 'on_disk') AS waiting, count(*) FILTER (WHERE state = 'transferring') AS sending,
                           count(*) FILTER (WHERE state = 'done') AS done, count(*) AS total
                      FROM stage_request_file WHERE request_id = ?""", request);
            System.out.printf("    +%5.1fs  read from tape %3d/%d | on disk, waiting %3d | sending %3d | delivered %3d | cache %4.0f MB%n",
                    (System.nanoTime() - t0) / 1e9, c.get("tape"), c.get("total"), c.get("waiting"), c.get("sending"), c.get("done"), cacheBytes / 1e6);
            if (Boolean.getBoolean("bench.debug")) { // where a stall sits: the request's recall rows, the cache's copies
                System.out.println("      " + jdbc.queryForList("""
                        SELECT rf.state, rf.claimed_by IS NOT NULL AS claimed, count(*) FROM stage_request_file x JOIN recall_file rf ON rf.file_id = x.file_id
                         WHERE x.request_id = ? GROUP BY 1, 2""", request));
                System.out.println("      " + jdbc.queryForList("""
                        SELECT cf.state, count(*), count(*) FILTER (WHERE EXISTS (SELECT 1 FROM cache_pin p WHERE p.file_id = cf.file_id)) AS pinned
                          FROM cache_file cf WHERE cf.path LIKE ? GROUP BY 1""", dir + "%"));
            }
        }

        void stop() throws InterruptedException {
            running = false;
            thread.join();
        }
    }

    /** CPU used between two points: this JVM's and the whole machine's (from /proc/stat; other users included). */
    record Cpu(long jvmNanos, long busy, long total) {
        static Cpu now() {
            long jvm = ((com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
            try {
                String[] f = Files.readAllLines(Path.of("/proc/stat")).getFirst().trim().split("\\s+");
                long total = 0, idle = Long.parseLong(f[4]) + Long.parseLong(f[5]);
                for (int i = 1; i < f.length; i++) total += Long.parseLong(f[i]);
                return new Cpu(jvm, total - idle, total);
            } catch (Exception e) {
                return new Cpu(jvm, 0, 0);
            }
        }

        String since(double seconds) {
            Cpu n = now();
            double pct = n.total == total ? 0 : 100.0 * (n.busy - busy) / (n.total - total);
            return String.format("service JVM %.1f CPU-s = %.2f cores; machine %.0f %% busy of %d cores",
                    (n.jvmNanos - jvmNanos) / 1e9, (n.jvmNanos - jvmNanos) / 1e9 / seconds, pct, Runtime.getRuntime().availableProcessors());
        }
    }

    /**
     * One request's run from its rows, seconds from submission: per file when its copy was reserved and
     * verified in the cache (the tape read), queued for transfer (hand-off), claimed by the drainer, delivered,
     * and ended (the request's file done, pin released); per mount when requested, mounted and dismounted.
     */
    static final class Timeline {
        record File(String volume, double reserved, double verified, double queued, double claimed, double delivered, double ended) {}

        record Mount(String drive, String volume, double requested, double mounted, double dismounted) {}

        final List<File> files = new ArrayList<>();
        final List<Mount> mounts = new ArrayList<>();
        double firstOnDisk, lastOnDisk, end;

        void print(Timeline alone) {
            boolean piped = files.stream().anyMatch(f -> !Double.isNaN(f.queued));
            System.out.printf("  %-64s %9.1f%n", "fill: first file verified in the cache", firstOnDisk);
            System.out.printf("  %-64s %9.1f   (tape alone: %.1f)%n", "tape stage within the pipeline: last file verified", lastOnDisk, alone.lastOnDisk);
            System.out.printf("  %-64s %9.1f%n", "drain: last file verified -> request done", end - lastOnDisk);
            System.out.printf("  %-64s %9.1f   (tape alone: %.1f)%n", "mounted drives idle between read lists (drive-seconds)", idleBetweenLists(), alone.idleBetweenLists());
            System.out.printf("  %-64s %9.1f   (tape alone: %.1f)%n", "drive-seconds spent mounting, reading, unloading (all mounts)", driveSeconds(), alone.driveSeconds());
            for (Mount m : mounts) System.out.printf("    %s %s: mount asked %.1f, mounted %.1f, dismounted %.1f%n",
                    m.drive, m.volume, m.requested, m.mounted, m.dismounted);
            if (!piped) return;
            stat("per file: verified on disk -> queued for transfer (hand-off)", File::verified, File::queued);
            stat("per file: queued -> claimed by the drainer", File::queued, File::claimed);
            stat("per file: claimed -> delivered (mover queue + sending + checksum)", File::claimed, File::delivered);
            stat("per file: delivered -> file done, pin released (collect)", File::delivered, File::ended);
            double lastEnded = files.stream().mapToDouble(File::ended).max().orElse(Double.NaN);
            File last = files.stream().max(java.util.Comparator.comparingDouble(File::verified)).orElseThrow();
            System.out.printf("  last file read: hand-off %.2f, claim %.2f, transfer %.2f, collect %.2f; last file done -> request seen done %.2f%n",
                    last.queued - last.verified, last.claimed - last.queued, last.delivered - last.claimed, last.ended - last.delivered, end - lastEnded);
        }

        private void stat(String what, java.util.function.ToDoubleFunction<File> from, java.util.function.ToDoubleFunction<File> to) {
            double[] d = files.stream().mapToDouble(f -> to.applyAsDouble(f) - from.applyAsDouble(f)).filter(x -> !Double.isNaN(x)).sorted().toArray();
            if (d.length == 0) return;
            System.out.printf("  %-64s mean %.2f, median %.2f, max %.2f s%n", what, java.util.Arrays.stream(d).average().orElse(0), d[d.length / 2], d[d.length - 1]);
        }

        /** Per volume, the gaps between one read list's last file and the next list's reservation. */
        double idleBetweenLists() {
            double idle = 0;
            Map<String, List<File>> byVolume = new java.util.TreeMap<>();
            for (File f : files) if (f.volume != null) byVolume.computeIfAbsent(f.volume, k -> new ArrayList<>()).add(f);
            for (List<File> fs : byVolume.values()) {
                // a read list = the copies reserved together
                Map<Double, Double> lists = new java.util.TreeMap<>();
                for (File f : fs) lists.merge(Math.round(f.reserved * 100) / 100.0, f.verified, Math::max);
                double prevEnd = Double.NaN;
                for (var e : lists.entrySet()) {
                    if (!Double.isNaN(prevEnd) && e.getKey() > prevEnd) idle += e.getKey() - prevEnd;
                    prevEnd = Double.isNaN(prevEnd) ? e.getValue() : Math.max(prevEnd, e.getValue());
                }
            }
            return idle;
        }

        double driveSeconds() {
            return mounts.stream().mapToDouble(m -> (Double.isNaN(m.dismounted) ? end : m.dismounted) - m.requested).sum();
        }
    }

    static final class Bench {
        final JdbcTemplate jdbc;
        final StageRequests requests;
        final TransferQueue queue;
        final GridFtpServer server;
        final Path dest;
        final int volumes, perVolume;
        final long size;
        final EventClock clock;
        final double factor;
        double submittedWall, submittedSim;

        Bench(ConfigurableApplicationContext ctx, GridFtpServer server, Path dest, int volumes, int perVolume, long size) {
            this.jdbc = ctx.getBean(JdbcTemplate.class);
            this.clock = ctx.getBeanProvider(EventClock.class).getIfAvailable();
            this.factor = clock instanceof ScaledClock sc ? sc.factor() : 1.0;
            this.requests = ctx.getBean(StageRequests.class);
            this.queue = ctx.getBean(TransferQueue.class);
            this.server = server;
            this.dest = dest;
            this.volumes = volumes;
            this.perVolume = perVolume;
            this.size = size;
        }

        /** Files written back to back from a few GB into each volume, so each volume starts with a locate. */
        List<String> catalog(String tag) {
            List<String> names = new ArrayList<>();
            for (int v = 0; v < volumes; v++) {
                long vol = jdbc.queryForObject("INSERT INTO volume (label) VALUES (?) RETURNING id", Long.class, "PB" + tag + v);
                for (int k = 0; k < perVolume; k++) {
                    String name = "/bench/pipeline/" + tag + "/v" + v + "/f" + k;
                    long id = jdbc.queryForObject("INSERT INTO file (name, size_bytes, adler32, experiment) VALUES (?, ?, ?, 'atlas') RETURNING id",
                            Long.class, name, size, SimulatedContent.adler32Hex(name, size));
                    jdbc.update("INSERT INTO segment (file_id, volume_id, offset_bytes) VALUES (?, ?, ?)", id, vol,
                            (v + 1) * 700_000_000_000L + k * size);
                    names.add(name);
                }
            }
            return names;
        }

        UUID submit(List<String> names, String destination) {
            submittedWall = System.currentTimeMillis() / 1e3;
            submittedSim = clock == null ? submittedWall : clock.now().toEpochMilli() / 1e3;
            return requests.submit("bench", new StageRequests.NewStageRequest(null, names, null, 86_400L, destination, "atlas"))
                    .request().id();
        }

        /** Seconds from now until the request ends (polled every 50 ms). */
        double waitForRequest(UUID id) throws InterruptedException {
            long t0 = System.nanoTime();
            while (true) {
                String state = jdbc.queryForObject("SELECT state FROM stage_request WHERE id = ?", String.class, id);
                if (!state.equals("submitted") && !state.equals("active")) {
                    if (!state.equals("done")) throw new IllegalStateException("request ended " + state);
                    return (System.nanoTime() - t0) / 1e9;
                }
                if (System.nanoTime() - t0 > Duration.ofMinutes(30).toNanos()) throw new IllegalStateException("request still " + state);
                Thread.sleep(50);
            }
        }

        /** The request's cached files through the service's transfer queue and movers; seconds until all ended. */
        double transferAlone(UUID id) throws Exception {
            List<Map<String, Object>> rows = jdbc.queryForList("""
                    SELECT f.name, cf.path, f.size_bytes, f.adler32 FROM stage_request_file x JOIN file f ON f.id = x.file_id
                      JOIN cache_file cf ON cf.file_id = f.id AND cf.state = 'verified' WHERE x.request_id = ?""", id);
            List<String> names = rows.stream().map(r -> (String) r.get("name")).toList();
            Path out = directoryFor("alone", names);
            String correlation = "bench-alone:" + id;
            List<TransferQueue.Request> copies = rows.stream().map(r -> new TransferQueue.Request(correlation,
                    Path.of((String) r.get("path")).toUri(), URI.create(server.url(out) + r.get("name")),
                    ((Number) r.get("size_bytes")).longValue(), Long.parseLong(((String) r.get("adler32")).trim(), 16))).toList();
            long t0 = System.nanoTime();
            queue.enqueue(copies);
            List<TransferJob> jobs;
            while (!(jobs = queue.byCorrelation(correlation)).stream().allMatch(TransferJob::finished)) Thread.sleep(50);
            double seconds = (System.nanoTime() - t0) / 1e9;
            long bad = jobs.stream().filter(j -> !j.state().equals("done")).count();
            if (bad > 0) throw new IllegalStateException(bad + " transfers failed, e.g. " + jobs.stream()
                    .filter(j -> !j.state().equals("done")).findFirst().orElseThrow().lastError());
            int ok = verify(names, out);
            if (ok != names.size()) throw new IllegalStateException((names.size() - ok) + " delivered files differ from the catalog");
            return seconds;
        }

        /** Seconds from enqueueing one cached file of the request alone until it is delivered (the movers idle). */
        double oneFileAlone(UUID id) throws Exception {
            Map<String, Object> r = jdbc.queryForMap("""
                    SELECT f.name, cf.path, f.size_bytes, f.adler32 FROM stage_request_file x JOIN file f ON f.id = x.file_id
                      JOIN cache_file cf ON cf.file_id = f.id AND cf.state = 'verified' WHERE x.request_id = ? ORDER BY f.id LIMIT 1""", id);
            String name = (String) r.get("name");
            Path out = directoryFor("one", List.of(name));
            String correlation = "bench-one:" + id;
            long t0 = System.nanoTime();
            queue.enqueue(List.of(new TransferQueue.Request(correlation, Path.of((String) r.get("path")).toUri(),
                    URI.create(server.url(out) + name), ((Number) r.get("size_bytes")).longValue(),
                    Long.parseLong(((String) r.get("adler32")).trim(), 16))));
            List<TransferJob> jobs;
            while (!(jobs = queue.byCorrelation(correlation)).getFirst().finished()) Thread.sleep(5);
            double seconds = (System.nanoTime() - t0) / 1e9;
            if (!jobs.getFirst().state().equals("done")) throw new IllegalStateException("one file: " + jobs.getFirst().lastError());
            if (verify(List.of(name), out) != 1) throw new IllegalStateException("one file: delivered copy differs");
            return seconds;
        }

        /** Per-file and per-drive times of a request's run, in seconds from its submission (see {@link Timeline}). */
        Timeline timeline(UUID id, String tag, double end) {
            Timeline t = new Timeline();
            t.end = end;
            double wall0 = submittedWall, sim0 = submittedSim;
            jdbc.query("""
                    SELECT extract(epoch FROM c.created_at) AS reserved, extract(epoch FROM c.verified_at) AS verified, c.volume,
                           extract(epoch FROM j.created_at) AS queued, extract(epoch FROM j.started_at) AS claimed,
                           extract(epoch FROM j.finished_at) AS delivered,
                           CASE WHEN x.state = 'done' AND j.id IS NOT NULL THEN extract(epoch FROM x.finished_at) END AS ended
                      FROM stage_request_file x
                      LEFT JOIN LATERAL (SELECT cf.created_at, cf.verified_at, v.label AS volume FROM cache_file cf
                                           JOIN segment s ON s.file_id = cf.file_id JOIN volume v ON v.id = s.volume_id
                                          WHERE cf.file_id = x.file_id AND cf.verified_at IS NOT NULL
                                          ORDER BY cf.verified_at DESC LIMIT 1) c ON true
                      LEFT JOIN transfer_job j ON j.correlation = 'stage:' || x.request_id::text || ':' || x.file_id
                     WHERE x.request_id = ?""", rs -> {
                // the cache stamps copies on the library's scaled clock; the rest is PostgreSQL's wall clock
                double reserved = (rs.getDouble("reserved") - sim0) / factor, verified = (rs.getDouble("verified") - sim0) / factor;
                t.files.add(new Timeline.File(rs.getString("volume"), reserved, verified,
                        at(rs, "queued", wall0), at(rs, "claimed", wall0), at(rs, "delivered", wall0), at(rs, "ended", wall0)));
            }, id);
            jdbc.query("""
                    SELECT drive, volume_label, extract(epoch FROM requested_at) AS requested, extract(epoch FROM mounted_at) AS mounted,
                           extract(epoch FROM dismounted_at) AS dismounted
                      FROM tape_mount_log WHERE volume_label LIKE ? ORDER BY requested_at""", rs -> {
                t.mounts.add(new Timeline.Mount(rs.getString("drive"), rs.getString("volume_label"), at(rs, "requested", wall0),
                        at(rs, "mounted", wall0), at(rs, "dismounted", wall0)));
            }, "PB" + tag + "%");
            t.firstOnDisk = t.files.stream().mapToDouble(Timeline.File::verified).min().orElse(Double.NaN);
            t.lastOnDisk = t.files.stream().mapToDouble(Timeline.File::verified).max().orElse(Double.NaN);
            return t;
        }

        private static double at(java.sql.ResultSet rs, String column, double wall0) throws java.sql.SQLException {
            double v = rs.getDouble(column);
            return rs.wasNull() ? Double.NaN : v - wall0;
        }

        /** A destination directory with the names' parent directories made (the movers do not create them). */
        Path directoryFor(String tag, List<String> names) throws Exception {
            Path root = dest.resolve(tag);
            for (String name : names) GridFtpServer.openUp(root.resolve(name.substring(1)).getParent());
            return root;
        }

        /** Reads each delivered file back; counts those whose size and Adler32 match the catalog; deletes them. */
        int verify(List<String> names, Path root) throws Exception {
            int ok = 0;
            for (String name : names) {
                Path p = root.resolve(name.substring(1));
                if (!Files.isRegularFile(p)) continue;
                Adler32 sum = new Adler32();
                try (InputStream in = Files.newInputStream(p)) {
                    byte[] buf = new byte[1 << 20];
                    for (int r; (r = in.read(buf)) > 0; ) sum.update(buf, 0, r);
                }
                if (Files.size(p) == size && String.format("%08x", sum.getValue()).equals(SimulatedContent.adler32Hex(name, size))) ok++;
                Files.delete(p);
            }
            return ok;
        }

        long count(UUID id, String state) {
            return jdbc.queryForObject("SELECT count(*) FROM stage_request_file WHERE request_id = ? AND state = ?", Long.class, id, state);
        }

        int mounts(String tag) {
            return jdbc.queryForObject("SELECT count(*) FROM tape_mount_log WHERE mounted_at IS NOT NULL AND volume_label LIKE ?",
                    Integer.class, "PB" + tag + "%");
        }

        /** An empty bench database: no catalog, requests, cached copies, transfers or mount history of earlier runs. */
        void clean() {
            BenchSupport.clean(jdbc);
            jdbc.execute("TRUNCATE recall_file, cache_pin, cache_reservation, cache_file, transfer_job, tape_mount_log CASCADE");
            jdbc.update("UPDATE cache_directory SET used_bytes = 0, reserved_bytes = 0");
        }
    }
}
