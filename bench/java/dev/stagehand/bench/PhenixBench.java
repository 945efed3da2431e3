package dev.stagehand.bench;

import dev.stagehand.StagehandApplication;
import dev.stagehand.archive.ArchiveBuffer.BufferUsage;
import dev.stagehand.archive.ArchiveProperties;
import dev.stagehand.archive.EvictionHold;
import dev.stagehand.archive.internal.ArchiveFlusher;
import dev.stagehand.archive.internal.JdbcArchiveBuffer;
import dev.stagehand.platform.VirtualClock;
import dev.stagehand.replication.ReplicaHolds;
import dev.stagehand.replication.ReplicationEngine;
import dev.stagehand.replication.ReplicationRules;
import dev.stagehand.replication.ReplicationRules.NewRule;
import dev.stagehand.replication.Sites;
import dev.stagehand.tape.LibraryStats;
import dev.stagehand.tape.SimulatedLibrary;
import dev.stagehand.tape.TapeModel;
import dev.stagehand.transfer.GridFtpServer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;
import org.springframework.util.FileSystemUtils;

/**
 * The PHENIX scenario at a compressed clock: a DAQ writes at a steady rate into a bounded archive buffer
 * (ArchiveBench's producer, buffer and flusher: simulated LTO-9 library on a virtual clock, bytes scaled
 * down {@value ArchiveBench#SCALE}x) while a replication rule on each dataset copies every file to a remote
 * site (a loopback Globus GridFTP server) through the service's own replication engine and transfer queue,
 * in real time. A file leaves the buffer only when archived and replicated ({@link ReplicaHolds}).
 *
 * <p>The clock: the simulation advances {@value ArchiveBench#TICK_S} simulated seconds per round and is
 * paced so that {@code compression} simulated seconds pass per wall second; replication (real transfers)
 * runs meanwhile. Rates are per simulated second over the same window (while producing) for all three
 * stages. A round that overruns its wall budget gives replication more wall time per simulated second (in
 * its favour): the count of late rounds and the effective compression are printed with the figures.
 *
 * <p>Arguments: producer MB/s (unscaled), seconds, write drives, datasets, file GB, buffer GB, flush min GB,
 * compression (simulated seconds per wall second).
 */
public final class PhenixBench {

    static final double SCALE = ArchiveBench.SCALE;
    static final double TICK_S = ArchiveBench.TICK_S;

    public static void main(String[] args) throws Exception {
        double rate = ArchiveBench.arg(args, 0, 250) * 1e6 / SCALE; // scaled bytes per simulated second
        double seconds = ArchiveBench.arg(args, 1, 1800);
        int drives = (int) ArchiveBench.arg(args, 2, 2);
        int datasets = (int) ArchiveBench.arg(args, 3, 2);
        long fileBytes = (long) (ArchiveBench.arg(args, 4, 2) * 1e9 / SCALE);
        long bufferBytes = (long) (ArchiveBench.arg(args, 5, 500) * 1e9 / SCALE);
        long minBytes = (long) (ArchiveBench.arg(args, 6, 20) * 1e9 / SCALE);
        double compression = ArchiveBench.arg(args, 7, 20);
        if (!GridFtpServer.available()) throw new IllegalStateException("globus-gridftp-server is not installed");
        Path work = Files.createTempDirectory("stagehand-phenix-bench"); // under the temp root: openUp works there
        GridFtpServer.openUp(work);
        try (GridFtpServer server = GridFtpServer.anonymous(work.resolve("srv"));
             ConfigurableApplicationContext ctx = new SpringApplicationBuilder(StagehandApplication.class)
                     .web(WebApplicationType.NONE)
                     .properties("stagehand.db.local-dir=target/pg", "stagehand.db.local-database=" + BenchSupport.DATABASE,
                             "stagehand.recall.enabled=false", "stagehand.archive.enabled=false",
                             "stagehand.tape.sim.root=" + work.resolve("service-tape"),
                             "stagehand.cache.directories[0].path=" + work.resolve("cache"),
                             "stagehand.cache.directories[0].capacity=1GB",
                             "stagehand.cache.directories[0].create-missing=true",
                             "stagehand.replication.pass-interval=200ms", "stagehand.transfer.queue.poll-interval=100ms",
                             "stagehand.transfer.mover.backoff=100ms", "logging.level.root=WARN")
                     .run()) {
            JdbcTemplate jdbc = ctx.getBean(JdbcTemplate.class);
            TransactionTemplate tx = ctx.getBean(TransactionTemplate.class);
            BenchSupport.clean(jdbc);
            jdbc.update("DELETE FROM site");

            // the archive path as in ArchiveBench, its buffer held by the replication rules
            TapeModel model = ArchiveBench.scaled(TapeModel.lto9());
            VirtualClock clock = new VirtualClock();
            SimulatedLibrary lib = SimulatedLibrary.builder(clock).name("bench-phenix").drives(drives).accessors(1).model(model)
                    .root(work.resolve("tape")).build();
            Path landing = work.resolve("landing");
            ArchiveProperties props = ArchiveBench.props(landing, bufferBytes, minBytes, Map.of(), model, "PX");
            java.time.Clock simClock = ArchiveBench.simClock(clock);
            ReplicaHolds holds = ctx.getBean(ReplicaHolds.class);
            EvictionHold replicated = holds::evictable;
            JdbcArchiveBuffer buffer = new JdbcArchiveBuffer(jdbc, tx, props, model.capacityBytes(), List.of(replicated), simClock);
            ArchiveFlusher flusher = new ArchiveFlusher(jdbc, tx, lib, lib.layout().drives(), props, model.capacityBytes(), e -> {},
                    "bench", simClock);
            flusher.start();

            // the remote site and one rule per dataset (continuous: each new file is replicated as it comes)
            Path remote = work.resolve("remote");
            GridFtpServer.openUp(remote);
            ctx.getBean(Sites.class).put("REMOTE", Map.of("tier", "1"), List.of(server.url(remote)));
            ReplicationRules rules = ctx.getBean(ReplicationRules.class);
            for (int d = 0; d < datasets; d++) {
                jdbc.update("INSERT INTO dataset (name, experiment) VALUES (?, 'phenix')", "run-" + d);
                rules.create(new NewRule("run-" + d, 1, "REMOTE", null, null, null, "bench"));
            }
            ctx.getBean(ReplicationEngine.class).takeLead();

            System.out.printf("PHENIX bench: DAQ %.0f MB/s for %.0f s into a %.0f GB buffer (high-water 90 %%, low-water 70 %%);%n",
                    rate * SCALE / 1e6, seconds, bufferBytes * SCALE / 1e9);
            System.out.printf("  %d datasets, files of %.1f GB; %d write drives (LTO-9, %.0f MB/s together); a rule per dataset:"
                            + " 1 copy at REMOTE (loopback GridFTP);%n", datasets, fileBytes * SCALE / 1e9, drives,
                    drives * model.bytesPerSecond() * SCALE / 1e6);
            System.out.printf("  bytes scaled down %.0fx; clock compressed %.0fx (simulated seconds); files leave the buffer only when"
                    + " archived and replicated.%n", SCALE, compression);

            ArchiveBench.Producer producer = new ArchiveBench.Producer(rate, fileBytes, datasets, landing);
            long wall0 = System.nanoTime();
            double t = 0;
            long lateRounds = 0, rounds = 0;
            long writtenWhileProducing = -1, replicatedWhileProducing = -1;
            double producingWall = 0;
            long[] verified = {0, 0};
            while (true) {
                long roundStart = System.nanoTime();
                if (t < seconds) producer.land(TICK_S);
                producer.register(buffer);
                flusher.poll();
                buffer.evict();
                BufferUsage u = buffer.usage();
                producer.peak = Math.max(producer.peak, u.usedBytes());
                clock.advance(Duration.ofSeconds((long) TICK_S));
                t += TICK_S;
                rounds++;
                // pace: TICK_S simulated seconds take TICK_S / compression wall seconds; replication runs meanwhile
                long budget = (long) (TICK_S / compression * 1e9), spent = System.nanoTime() - roundStart;
                if (spent < budget) Thread.sleep((budget - spent) / 1_000_000, (int) ((budget - spent) % 1_000_000));
                else lateRounds++;
                jdbc.query("SELECT count(*), coalesce(sum(f.size_bytes), 0) FROM replica r JOIN file f ON f.id = r.file_id "
                        + "WHERE r.state = 'verified'", rs -> {
                    verified[0] = rs.getLong(1);
                    verified[1] = rs.getLong(2);
                });
                if (t >= seconds && writtenWhileProducing < 0) {
                    writtenWhileProducing = lib.stats().bytesWritten();
                    replicatedWhileProducing = verified[1];
                    producingWall = (System.nanoTime() - wall0) / 1e9;
                }
                long archived = u.bytes().getOrDefault("archived", 0L) + u.bytes().getOrDefault("evictable", 0L)
                        + u.bytes().getOrDefault("evicted", 0L);
                if (t >= seconds && producer.waiting.isEmpty() && archived >= producer.produced && verified[0] >= producer.registered)
                    break;
                if (t > seconds * 4 + 36_000) {
                    System.out.println("  gave up waiting for the flush and replication to finish");
                    break;
                }
            }
            // files evicted once replicated: one last round, so the end state shows it
            buffer.evict();
            BufferUsage u = buffer.usage();
            LibraryStats st = lib.stats();
            long files = producer.registered;
            long remoteFiles;
            try (var walk = Files.walk(remote)) {
                remoteFiles = walk.filter(Files::isRegularFile).count();
            }
            double producerMBs = producer.produced * SCALE / 1e6 / seconds;
            double flushMBs = writtenWhileProducing * SCALE / 1e6 / seconds;
            double replMBs = replicatedWhileProducing * SCALE / 1e6 / seconds;
            System.out.printf("%n  %-34s %10s %10s %12s%n", "while producing (" + (long) seconds + " s)", "producer", "tape flush",
                    "replication");
            System.out.printf("  %-34s %10.0f %10.0f %12.0f%n", "sustained rate, MB/s", producerMBs, flushMBs, replMBs);
            System.out.printf("  %-34s %10s %10.0f %12s%n", "nominal capacity, MB/s", "", drives * model.bytesPerSecond() * SCALE / 1e6,
                    "(loopback)");
            System.out.printf("%n  %-34s %10s %10s%n", "buffer", "peak", "high-water");
            System.out.printf("  %-34s %10.0f %10.0f   %s%n", "GB", producer.peak * SCALE / 1e9, props.highWaterBytes() * SCALE / 1e9,
                    producer.peak <= props.highWaterBytes() ? "stayed below" : "EXCEEDED");
            System.out.printf("  refusals (503) %d; the producer held up to %d landed files while refused; none was lost%n",
                    producer.refusals, producer.maxWaiting);
            System.out.printf("%n  end state after %.0f s: %d files registered; archived %d; replicas verified %d (%d files at REMOTE);"
                            + " evicted %d%n", t, files,
                    jdbc.queryForObject("SELECT count(*) FROM archive_file WHERE state IN ('archived', 'evictable', 'evicted')", Long.class),
                    verified[0], remoteFiles, u.files().getOrDefault("evicted", 0L));
            System.out.printf("  buffer files per state %s%n", u.files());
            System.out.printf("  %s%n", files > 0 && verified[0] == files && u.files().getOrDefault("evicted", 0L) + u.files()
                    .getOrDefault("evictable", 0L) + u.files().getOrDefault("archived", 0L) == files
                    ? "all archived and all replicated (verified)" : "NOT all archived and replicated");
            System.out.printf("  tape: mounts %d, drive time writing %.0f %%; clock: %d of %d rounds late on the %.0fx pace"
                            + " (production: %.0f simulated s in %.0f wall s); wall %.1f s%n",
                    st.mounts(), 100 * st.writeSeconds() / (drives * t), lateRounds, rounds, compression, seconds, producingWall,
                    (System.nanoTime() - wall0) / 1e9);
            lib.close();
        } finally {
            new ProcessBuilder("rm", "-rf", work.toString()).start().waitFor(); // files the anonymous account made too
            FileSystemUtils.deleteRecursively(work);
        }
    }
}
