package dev.stagehand.bench;

import dev.stagehand.StagehandApplication;
import dev.stagehand.archive.ArchiveBuffer.BufferUsage;
import dev.stagehand.archive.ArchiveProperties;
import dev.stagehand.archive.ArchiveRejected;
import dev.stagehand.archive.NewArchiveFile;
import dev.stagehand.archive.internal.ArchiveFlusher;
import dev.stagehand.archive.internal.JdbcArchiveBuffer;
import dev.stagehand.platform.VirtualClock;
import dev.stagehand.tape.LibraryStats;
import dev.stagehand.tape.SimulatedLibrary;
import dev.stagehand.tape.TapeModel;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;
import org.springframework.util.FileSystemUtils;
import org.springframework.util.unit.DataSize;

/**
 * The archive path alone under a steady producer: a DAQ lands files of several datasets into a bounded
 * buffer at a fixed rate, they are registered (Adler32, catalog), flushed to tape by file family on the
 * write drives and evicted once archived. Reports whether the buffer stayed below its high-water mark,
 * how often the producer was told to wait (503), and the sustained flush rate beside the producer's rate
 * and the drives' nominal write rate. Real PostgreSQL and files; the simulated library on a virtual
 * clock with byte quantities scaled down {@value #SCALE}x (LTO-9 timings: a 200 kB file stands for 2 GB
 * and writes in 5 s). Times are simulated seconds.
 *
 * <p>Arguments: producer MB/s (unscaled), seconds, write drives, datasets, file GB, buffer GB, flush min GB,
 * file families the datasets are grouped into (0: one per dataset).
 */
public final class ArchiveBench {

    static final double SCALE = 10_000;
    static final double TICK_S = 10;

    public static void main(String[] args) throws Exception {
        double rate = arg(args, 0, 600) * 1e6 / SCALE;      // scaled bytes per simulated second
        double seconds = arg(args, 1, 3600);
        int drives = (int) arg(args, 2, 2);
        int datasets = (int) arg(args, 3, 4);
        long fileBytes = (long) (arg(args, 4, 2) * 1e9 / SCALE);
        long bufferBytes = (long) (arg(args, 5, 1000) * 1e9 / SCALE);
        long minBytes = (long) (arg(args, 6, 20) * 1e9 / SCALE);
        int groups = (int) arg(args, 7, 0); // 0: each dataset is its own file family
        Map<String, List<String>> families = new java.util.HashMap<>();
        for (int d = 0; groups > 0 && d < datasets; d++)
            families.computeIfAbsent("group-" + (d % groups), k -> new ArrayList<>()).add("run-" + d);
        Path work = Path.of("target/bench-archive").toAbsolutePath();
        FileSystemUtils.deleteRecursively(work);
        try (ConfigurableApplicationContext ctx = new SpringApplicationBuilder(StagehandApplication.class)
                .web(WebApplicationType.NONE)
                .properties("stagehand.db.local-dir=target/pg", "stagehand.db.local-database=" + BenchSupport.DATABASE,
                        "stagehand.recall.enabled=false", "stagehand.archive.enabled=false", "stagehand.transfer.queue.enabled=false",
                        "logging.level.root=WARN")
                .run()) {
            JdbcTemplate jdbc = ctx.getBean(JdbcTemplate.class);
            TransactionTemplate tx = ctx.getBean(TransactionTemplate.class);
            BenchSupport.clean(jdbc);
            TapeModel model = scaled(TapeModel.lto9());
            VirtualClock clock = new VirtualClock();
            SimulatedLibrary lib = SimulatedLibrary.builder(clock).name("bench-archive").drives(drives).accessors(1).model(model)
                    .root(work.resolve("tape")).build();
            Path landing = work.resolve("landing");
            ArchiveProperties props = props(landing, bufferBytes, minBytes, families, model, "BA");
            java.time.Clock simClock = simClock(clock);
            JdbcArchiveBuffer buffer = new JdbcArchiveBuffer(jdbc, tx, props, model.capacityBytes(), List.of(), simClock);
            List<String> all = lib.layout().drives();
            ArchiveFlusher flusher = new ArchiveFlusher(jdbc, tx, lib, all, props, model.capacityBytes(), e -> {}, "bench",
                    simClock);
            flusher.start();

            System.out.printf("archive bench: producer %.0f MB/s for %.0f s into a %.0f GB buffer (high-water 90 %%, low-water 70 %%);%n",
                    rate * SCALE / 1e6, seconds, bufferBytes * SCALE / 1e9);
            System.out.printf("  %d datasets interleaved in %d file families, files of %.1f GB; %d write drives (LTO-9, %.0f MB/s each: %.0f MB/s together);%n",
                    datasets, groups > 0 ? Math.min(groups, datasets) : datasets, fileBytes * SCALE / 1e9, drives, model.bytesPerSecond() * SCALE / 1e6, drives * model.bytesPerSecond() * SCALE / 1e6);
            System.out.printf("  a family is flushed from %.0f GB queued (or 10 min, or buffer above low-water); bytes scaled down %.0fx on disk;"
                    + " simulated seconds.%n", minBytes * SCALE / 1e9, SCALE);

            Producer producer = new Producer(rate, fileBytes, datasets, landing);
            long wall0 = System.nanoTime();
            double t = 0;
            long writtenWhileProducing = -1, backlogAtEnd = 0;
            while (true) {
                if (t < seconds) producer.land(TICK_S);
                producer.register(buffer);
                flusher.poll();
                buffer.evict();
                if (System.getenv("ARCHIVE_BENCH_TRACE") != null && ((long) t) % 60 == 0)
                    System.out.printf("t=%5.0f %s used=%d queued=%d%n", t, lib.drives(), buffer.usage().usedBytes() / 100_000,
                            buffer.usage().bytes().get("queued") / 100_000);
                BufferUsage u = buffer.usage();
                producer.peak = Math.max(producer.peak, u.usedBytes());
                clock.advance(Duration.ofSeconds((long) TICK_S));
                t += TICK_S;
                if (t >= seconds && writtenWhileProducing < 0) {
                    writtenWhileProducing = lib.stats().bytesWritten();
                    backlogAtEnd = u.bytes().getOrDefault("queued", 0L) + u.bytes().getOrDefault("writing", 0L);
                }
                long archived = u.bytes().getOrDefault("archived", 0L) + u.bytes().getOrDefault("evictable", 0L)
                        + u.bytes().getOrDefault("evicted", 0L);
                if (t >= seconds && producer.waiting.isEmpty() && archived >= producer.produced) break;
                if (System.getenv("ARCHIVE_BENCH_TRACE") != null && t > seconds + 3000) {
                    System.out.println("busy=" + flusher.busy());
                    System.out.println(jdbc.queryForList("SELECT c.family, c.copy_no, c.state, c.attempts, c.error, c.not_before, c.volume_id FROM archive_copy c WHERE state <> 'done'"));
                    System.out.println(jdbc.queryForList("SELECT * FROM archive_volume WHERE state <> 'blank'"));
                    break;
                }
                if (t > seconds * 4 + 36_000) {
                    System.out.println("  gave up waiting for the flush to finish");
                    break;
                }
            }
            BufferUsage u = buffer.usage();
            LibraryStats st = lib.stats();
            double flushRate = st.bytesWritten() / t;
            System.out.printf("%n  produced %.0f GB in %.0f s (%.0f MB/s); registered %d files; all archived after %.0f s%n",
                    producer.produced * SCALE / 1e9, seconds, producer.produced * SCALE / 1e6 / seconds, producer.registered, t);
            System.out.printf("  buffer peak %.0f GB of %.0f GB; high-water %.0f GB: %s; refusals (503) %d%n",
                    producer.peak * SCALE / 1e9, bufferBytes * SCALE / 1e9, props.highWaterBytes() * SCALE / 1e9,
                    producer.peak <= props.highWaterBytes() ? "stayed below" : "EXCEEDED", producer.refusals);
            if (producer.refusals > 0) System.out.printf("  the producer held up to %d landed files (%.0f GB) while refused; none was lost%n",
                    producer.maxWaiting, producer.maxWaiting * fileBytes * SCALE / 1e9);
            System.out.printf("  sustained flush rate while producing %.0f MB/s (backlog not yet on tape when production stopped: %.0f GB)%n",
                    writtenWhileProducing * SCALE / 1e6 / seconds, backlogAtEnd * SCALE / 1e9);
            System.out.printf("    vs producer %.0f MB/s vs drives' nominal write rate %.0f MB/s; overall (incl. the tail) %.0f MB/s%n",
                    rate * SCALE / 1e6, drives * model.bytesPerSecond() * SCALE / 1e6, flushRate * SCALE / 1e6);
            System.out.printf("  drive time writing %.0f %%; mounts %d; volumes used %d; write seconds %.0f%n",
                    100 * st.writeSeconds() / (drives * t), st.mounts(),
                    jdbc.queryForObject("SELECT count(*) FROM archive_volume WHERE state <> 'blank'", Long.class), st.writeSeconds());
            System.out.printf("  files per state at the end %s; wall %.1f s%n", u.files(), (System.nanoTime() - wall0) / 1e9);
            lib.close();
        }
    }

    /** The buffer's settings: high-water 90 %, low-water 70 %, volumes of the model's capacity, pool labels prefix + 4 digits. */
    static ArchiveProperties props(Path landing, long bufferBytes, long minBytes, Map<String, List<String>> families, TapeModel model,
                                   String poolPrefix) {
        List<String> pool = new ArrayList<>();
        for (int i = 1; i <= 200; i++) pool.add(String.format("%s%04d", poolPrefix, i));
        return new ArchiveProperties(true, landing, DataSize.ofBytes(bufferBytes), 0.9, 0.7, Duration.ofSeconds(60),
                10_000, "phenix", Map.of("single", 1, "dual", 2), "single", families, DataSize.ofBytes(model.capacityBytes()),
                new ArchiveProperties.Pool(poolPrefix, 0, pool),
                new ArchiveProperties.Flush(Duration.ZERO, DataSize.ofBytes(minBytes), Duration.ofMinutes(10),
                        DataSize.ofBytes((long) (200e9 / SCALE)), 5000, Duration.ofMinutes(10), Duration.ofMinutes(1), Duration.ofMinutes(2)),
                new ArchiveProperties.Watch(false, Duration.ofSeconds(10)), Duration.ofSeconds(30), "bench");
    }

    /** The virtual clock as a {@link java.time.Clock} (the buffer's and flusher's time stamps are simulated). */
    static java.time.Clock simClock(VirtualClock clock) {
        return new java.time.Clock() {
            @Override public java.time.ZoneId getZone() { return java.time.ZoneOffset.UTC; }
            @Override public java.time.Clock withZone(java.time.ZoneId zone) { return this; }
            @Override public java.time.Instant instant() { return clock.now(); }
        };
    }

    /**
     * The DAQ: lands files of its datasets (interleaved, run-0, run-1, ...) at a steady rate and registers
     * them, oldest first, a few per call; told to wait (503), it keeps the rest landed and tries again at
     * its next round. Counts what it produced, registered and was refused, and the buffer's peak.
     */
    static final class Producer {
        final ArrayDeque<NewArchiveFile> waiting = new ArrayDeque<>();
        final double rate;
        final long fileBytes;
        final int datasets;
        final Path landing;
        final byte[] chunk = new byte[64 * 1024];
        double owed;
        long produced, refusals, peak, registered, maxWaiting;
        int seq;

        Producer(double rate, long fileBytes, int datasets, Path landing) {
            this.rate = rate;
            this.fileBytes = fileBytes;
            this.datasets = datasets;
            this.landing = landing;
        }

        /** Lands what {@code seconds} at the rate owe (whole files; the remainder carries over). */
        void land(double seconds) throws java.io.IOException {
            owed += rate * seconds;
            while (owed >= fileBytes) {
                owed -= fileBytes;
                String ds = "run-" + (seq % datasets);
                Path p = landing.resolve("phenix").resolve(ds).resolve(String.format("f%06d", seq));
                Files.createDirectories(p.getParent());
                try (OutputStream out = Files.newOutputStream(p)) {
                    ByteBuffer.wrap(chunk).putInt(0, seq);
                    for (long left = fileBytes; left > 0; left -= chunk.length) out.write(chunk, 0, (int) Math.min(chunk.length, left));
                }
                waiting.add(new NewArchiveFile(p.toString(), fileBytes, null, ds, "phenix", null, null));
                produced += fileBytes;
                seq++;
            }
        }

        /** Registers the landed files, 10 per call, until done or refused (503). */
        void register(JdbcArchiveBuffer buffer) {
            while (!waiting.isEmpty()) {
                List<NewArchiveFile> call = new ArrayList<>();
                for (NewArchiveFile f : waiting) {
                    if (call.size() == 10) break;
                    call.add(f);
                }
                try {
                    buffer.register(call);
                    registered += call.size();
                    for (int k = 0; k < call.size(); k++) waiting.poll();
                    peak = Math.max(peak, buffer.usage().usedBytes()); // before this round's eviction
                } catch (ArchiveRejected e) {
                    if (e.kind() != ArchiveRejected.Kind.BUFFER_FULL) throw e;
                    refusals++;
                    maxWaiting = Math.max(maxWaiting, waiting.size());
                    break;
                }
            }
        }
    }

    static double arg(String[] a, int i, double d) {
        return a.length > i ? Double.parseDouble(a[i]) : d;
    }

    /** LTO-9 with byte quantities divided by SCALE: times per file are those of files SCALE times larger. */
    static TapeModel scaled(TapeModel m) {
        return new TapeModel((long) (m.capacityBytes() / SCALE), m.wraps(), m.wrapsPerBand(), m.accessorMoveSeconds(),
                m.loadSeconds(), m.locateBaseSeconds(), m.wrapChangeSeconds(), m.bandChangeSeconds(),
                m.directionChangeSeconds(), m.backwardSeconds(), m.fullLengthSeconds(), m.bytesPerSecond() / SCALE,
                m.rewindShortSeconds(), (long) (m.rewindShortBelowBytes() / SCALE), m.rewindMediumSeconds(),
                (long) (m.rewindMediumBelowBytes() / SCALE), m.rewindLongSeconds(), m.unthreadSeconds());
    }
}
