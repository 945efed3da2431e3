package dev.stagehand.bench;

import dev.stagehand.StagehandApplication;
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
            double tape, transfer;
            int tapeMounts;
            // runs 1 and 2: a cache that holds everything
            try (ConfigurableApplicationContext ctx = service(work, "big", total * 2, scale, byteScale, size)) {
                Bench b = new Bench(ctx, server, dest, volumes, perVolume, size);
                b.clean();
                List<String> names = b.catalog("A");
                UUID id = b.submit(names, null);
                tape = b.waitForRequest(id);
                tapeMounts = b.mounts("A");
                System.out.printf("  tape stage alone: %.1f s (%d mounts)%n", tape, tapeMounts);
                transfer = b.transferAlone(id);
                System.out.printf("  transfer stage alone: %.1f s%n", transfer);
            }
            // run 3: the pipeline, with a cache of cachePercent of the data
            long capacity = Math.max(size * 2, total * cachePercent / 100);
            try (ConfigurableApplicationContext ctx = service(work, "small", capacity, scale, byteScale, size)) {
                Bench b = new Bench(ctx, server, dest, volumes, perVolume, size);
                b.clean();
                List<String> names = b.catalog("B");
                Path delivered = b.directoryFor("pipeline", names);
                UUID id = b.submit(names, server.url(delivered));
                Peak peak = new Peak(b.jdbc, work.resolve("cache-small").toString());
                peak.request = id;
                peak.start();
                double end = b.waitForRequest(id);
                peak.stop();
                long done = b.count(id, "done"), failed = b.count(id, "failed");
                int ok = b.verify(names, delivered);
                double slowest = Math.max(tape, transfer), sum = tape + transfer;
                System.out.printf("%n%-66s %9s%n", "", "seconds");
                System.out.printf("%-66s %9.1f%n", "tape stage alone (recall to a cache holding everything)", tape);
                System.out.printf("%-66s %9.1f%n", "transfer stage alone (those cached files to GridFTP)", transfer);
                System.out.printf("%-66s %9.1f%n", "slowest stage alone", slowest);
                System.out.printf("%-66s %9.1f%n", "sum of the stages (stage everything, then transfer)", sum);
                System.out.printf("%-66s %9.1f%n", "Stagehand pipeline, cache of " + cachePercent + " % of the data (end to end)", end);
                System.out.printf("  end to end / slowest stage = %.2f; end to end / sum of the stages = %.2f%n", end / slowest, end / sum);
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
                        "stagehand.tape.persist-drives=false", "stagehand.tape.sim.model.bytes-per-second=" + 400_000_000L / byteScale, "stagehand.tape.sim.root=" + work.resolve("lib-" + tag),
                        "stagehand.cache.directories[0].path=" + work.resolve("cache-" + tag),
                        "stagehand.cache.directories[0].capacity=" + cacheBytes + "B",
                        "stagehand.recall.poll-interval=250ms", "stagehand.recall.min-mount-age=0s",
                        "stagehand.recall.cache-batch-bytes=" + 4 * size,
                        "stagehand.transfer.queue.poll-interval=100ms")
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
        }

        void stop() throws InterruptedException {
            running = false;
            thread.join();
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

        Bench(ConfigurableApplicationContext ctx, GridFtpServer server, Path dest, int volumes, int perVolume, long size) {
            this.jdbc = ctx.getBean(JdbcTemplate.class);
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
