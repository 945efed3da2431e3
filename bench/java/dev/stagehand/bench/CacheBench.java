package dev.stagehand.bench;

import dev.stagehand.StagehandApplication;
import dev.stagehand.cache.CacheProperties;
import dev.stagehand.cache.Checksums;
import dev.stagehand.cache.DiskCache;
import dev.stagehand.cache.ReserveResult;
import dev.stagehand.cache.SpaceRequest;
import java.io.ByteArrayInputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.transaction.support.TransactionTemplate;
import org.springframework.util.FileSystemUtils;
import org.springframework.util.unit.DataSize;

/**
 * Disk cache accounting on the real database: (1) staging throughput (reserve, write, commit with Adler32,
 * evicting least recently used copies) with bulk reservations against one reservation per file, and
 * (2) how long a release takes while stage threads keep the cache busy and full.
 *
 * <p>Arguments: files threads batch (default 10000 4 100).
 */
public final class CacheBench {

    static final int FILE_SIZE = 4096;

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("--inventory")) {
            inventory(args.length > 1 ? Integer.parseInt(args[1]) : 200_000);
            return;
        }
        int files = args.length > 0 ? Integer.parseInt(args[0]) : 10_000;
        int threads = args.length > 1 ? Integer.parseInt(args[1]) : 4;
        int batch = args.length > 2 ? Integer.parseInt(args[2]) : 100;
        Path work = Path.of("target/bench-cache").toAbsolutePath();
        try (ConfigurableApplicationContext ctx = service(work)) {
            JdbcClient db = ctx.getBean(JdbcClient.class);
            TransactionTemplate tx = ctx.getBean(TransactionTemplate.class);
            System.out.printf("disk cache bench: %d files of %d bytes, %d threads, cache holds a quarter of them%n",
                    files, FILE_SIZE, threads);
            double bulk = stage(db, tx, work.resolve("bulk"), files, threads, batch);
            double single = stage(db, tx, work.resolve("single"), files, threads, 1);
            System.out.printf("%-58s %10s%n", "staging (reserve + write + Adler32 commit + LRU eviction)", "files/s");
            System.out.printf("%-58s %10.0f%n", "  Stagehand, bulk reserve of " + batch + " files per call", bulk);
            System.out.printf("%-58s %10.0f%n", "  baseline: one reservation per file (per-file HSM call)", single);
            releaseUnderPressure(db, tx, work.resolve("release"), threads);
        }
    }

    static double stage(JdbcClient db, TransactionTemplate tx, Path dir, int files, int threads, int batch) throws Exception {
        DiskCache cache = cache(db, tx, dir, (long) files * FILE_SIZE / 4, "bench-" + dir.getFileName());
        long[] ids = catalog(db, files);
        byte[] content = new byte[FILE_SIZE];
        Arrays.fill(content, (byte) 7);
        AtomicLong staged = new AtomicLong();
        AtomicLong reserveNanos = new AtomicLong();
        AtomicLong commitNanos = new AtomicLong();
        long t0 = System.nanoTime();
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        List<Future<?>> work = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int from = files * t / threads, to = files * (t + 1) / threads;
            work.add(pool.submit(() -> {
                for (int i = from; i < to; i += batch) {
                    List<SpaceRequest> reqs = new ArrayList<>();
                    for (int k = i; k < Math.min(to, i + batch); k++) reqs.add(new SpaceRequest(ids[k], FILE_SIZE));
                    long r0 = System.nanoTime();
                    List<ReserveResult> got = cache.reserve(reqs, "bench");
                    reserveNanos.addAndGet(System.nanoTime() - r0);
                    for (ReserveResult r : got) {
                        if (!r.reserved()) throw new IllegalStateException("unexpected " + r.outcome());
                        String sum;
                        try (OutputStream out = Files.newOutputStream(r.reservation().path())) {
                            sum = Checksums.copyWithAdler32(new ByteArrayInputStream(content), out).adler32();
                        }
                        long c0 = System.nanoTime();
                        if (!cache.commit(r.reservation(), sum).verified()) throw new IllegalStateException("not verified");
                        commitNanos.addAndGet(System.nanoTime() - c0);
                        staged.incrementAndGet();
                    }
                }
                return null;
            }));
        }
        for (Future<?> f : work) f.get();
        pool.shutdown();
        double seconds = (System.nanoTime() - t0) / 1e9;
        var u = cache.usage().getFirst();
        if (u.usedBytes() > u.capacityBytes()) throw new IllegalStateException("overfilled " + u);
        System.out.printf("  [batch %d] per file: %.2f ms in reserve, %.2f ms in commit (thread time)%n", batch,
                reserveNanos.get() / 1e6 / files, commitNanos.get() / 1e6 / files);
        return staged.get() / seconds;
    }

    /** Cache full of pinned copies; stage threads keep asking for space while pins are released. */
    static void releaseUnderPressure(JdbcClient db, TransactionTemplate tx, Path dir, int threads) throws Exception {
        int n = 2000;
        DiskCache cache = cache(db, tx, dir, (long) n * FILE_SIZE, "bench-release");
        long[] ids = catalog(db, n);
        byte[] content = new byte[FILE_SIZE];
        for (int i = 0; i < n; i += 100) {
            List<SpaceRequest> reqs = new ArrayList<>();
            for (int k = i; k < i + 100; k++) reqs.add(new SpaceRequest(ids[k], FILE_SIZE));
            for (ReserveResult r : cache.reserve(reqs, "fill")) {
                Files.write(r.reservation().path(), content);
                cache.commit(r.reservation(), Checksums.adler32Of(r.reservation().path()));
            }
        }
        List<Long> all = Arrays.stream(ids).boxed().toList();
        cache.pin(all, "owner", Duration.ofDays(1));
        long[] waiting = catalog(db, 20_000);
        long idle = median(timeReleases(cache, all.subList(0, 500)));
        cache.pin(all, "owner", Duration.ofDays(1));

        AtomicBoolean run = new AtomicBoolean(true);
        AtomicLong stageCalls = new AtomicLong();
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        for (int t = 0; t < threads; t++) {
            int off = t;
            pool.submit(() -> {
                int i = off * 5000;
                while (run.get() && i + 100 <= (off + 1) * 5000) {
                    List<SpaceRequest> reqs = new ArrayList<>();
                    for (int k = i; k < i + 100; k++) reqs.add(new SpaceRequest(waiting[k], FILE_SIZE));
                    for (ReserveResult r : cache.reserve(reqs, "pressure")) {
                        if (r.reserved()) cache.abort(r.reservation(), "bench");
                    }
                    stageCalls.incrementAndGet();
                }
                return null;
            });
        }
        Thread.sleep(300);
        long[] busy = timeReleases(cache, all);
        run.set(false);
        pool.shutdown();
        pool.awaitTermination(1, java.util.concurrent.TimeUnit.MINUTES);
        Arrays.sort(busy);
        System.out.printf("%-58s %10s%n", "release of 10 pins (one call)", "ms");
        System.out.printf("%-58s %10.2f%n", "  Stagehand, idle cache (median)", idle / 1e6);
        System.out.printf("%-58s %10.2f%n", "  Stagehand, full cache, " + threads + " threads staging (median)", median(busy) / 1e6);
        System.out.printf("%-58s %10.2f%n", "  Stagehand, full cache, " + threads + " threads staging (p99)",
                busy[(int) (busy.length * 0.99)] / 1e6);
        System.out.printf("%-58s %10s%n", "  dCache bulk service: releases queue behind stage threads", "unbounded");
        System.out.printf("  (%d bulk reserve calls of 100 files ran meanwhile)%n", stageCalls.get());
    }

    static long[] timeReleases(DiskCache cache, List<Long> files) {
        long[] out = new long[files.size() / 10];
        for (int i = 0; i < out.length; i++) {
            long t = System.nanoTime();
            cache.release(files.subList(i * 10, i * 10 + 10), "owner");
            out[i] = System.nanoTime() - t;
        }
        return out;
    }

    static long median(long[] v) {
        long[] c = v.clone();
        Arrays.sort(c);
        return c[c.length / 2];
    }

    /**
     * The start-up inventory (every verified copy's file looked for on disk, {@code DiskCache.start}) over
     * {@code n} cached copies, one in a hundred gone: how long a node with a full cache takes to come up.
     */
    static void inventory(int n) throws Exception {
        Path work = Path.of("target/bench-cache-inventory").toAbsolutePath();
        try (ConfigurableApplicationContext ctx = service(work)) {
            JdbcClient db = ctx.getBean(JdbcClient.class);
            TransactionTemplate tx = ctx.getBean(TransactionTemplate.class);
            Path dir = work.resolve("inventory");
            String node = "bench-inventory-" + System.nanoTime();
            cache(db, tx, dir, Long.MAX_VALUE / 4, node); // registers the directory
            int dirId = db.sql("SELECT id FROM cache_directory WHERE path = :p").param("p", dir.toString()).query(Integer.class).single();
            long[] ids = catalog(db, n);
            long t0 = System.nanoTime();
            List<String> paths = new ArrayList<>(n);
            for (long f : ids) {
                Path p = dir.resolve(String.format("%02x", f & 0xff)).resolve(f + ".1");
                paths.add(p.toString());
            }
            for (int i = 0; i < n; i++) {
                Path p = Path.of(paths.get(i));
                if (i % 100 == 0) continue; // gone from disk
                Files.createDirectories(p.getParent());
                Files.createFile(p);
            }
            db.sql("""
                    INSERT INTO cache_file (file_id, directory_id, path, size_bytes, adler32, state, created_at, verified_at, last_access)
                    SELECT f, :d, p, :s, '00000001', 'verified', now(), now(), now() - make_interval(secs => g)
                      FROM unnest(:ids, :paths) WITH ORDINALITY AS u(f, p, g)""")
                    .param("d", dirId).param("s", FILE_SIZE).param("ids", Arrays.stream(ids).boxed().toArray(Long[]::new))
                    .param("paths", paths.toArray(String[]::new)).update();
            db.sql("UPDATE cache_directory SET used_bytes = :b WHERE id = :d").param("b", (long) n * FILE_SIZE).param("d", dirId).update();
            db.sql("ANALYZE cache_file").update();
            System.out.printf("inventory bench: %,d cached copies set up in %.0f s, 1 in 100 gone from disk%n", n, (System.nanoTime() - t0) / 1e9);
            // the kernel's dentry cache is warm (the files were just made): a node after a reboot reads them cold
            long t1 = System.nanoTime();
            DiskCache c = new DiskCache(db, tx, new CacheProperties(
                    List.of(new CacheProperties.Directory(dir, DataSize.ofBytes(Long.MAX_VALUE / 4), true)), node), Clock.systemUTC(), null);
            c.start();
            double s = (System.nanoTime() - t1) / 1e9;
            long gone = db.sql("SELECT count(*) FROM cache_file WHERE directory_id = :d AND state = 'discarded'").param("d", dirId)
                    .query(Long.class).single();
            System.out.printf("start-up with its inventory: %.1f s (%.1f µs a copy), %,d copies found gone and discarded%n",
                    s, s * 1e6 / n, gone);
            db.sql("DELETE FROM cache_file WHERE directory_id = :d").param("d", dirId).update();
        }
        FileSystemUtils.deleteRecursively(work);
    }

    /** The service without its web side, on the bench database, its cache under {@code work} (emptied first). */
    static ConfigurableApplicationContext service(Path work) throws java.io.IOException {
        FileSystemUtils.deleteRecursively(work);
        return new SpringApplicationBuilder(StagehandApplication.class)
                .web(WebApplicationType.NONE)
                .properties("stagehand.db.local-dir=target/pg", "stagehand.db.local-database=stagehand_bench",
                        "stagehand.cache.directories[0].path=" + work.resolve("default"),
                        "stagehand.cache.directories[0].create-missing=true", "logging.level.root=WARN")
                .run();
    }

    static DiskCache cache(JdbcClient db, TransactionTemplate tx, Path dir, long capacity, String node) {
        DiskCache c = new DiskCache(db, tx, new CacheProperties(
                List.of(new CacheProperties.Directory(dir, DataSize.ofBytes(capacity), true)), node), Clock.systemUTC(), null);
        c.start();
        return c;
    }

    static long[] catalog(JdbcClient db, int n) {
        String prefix = "/bench/cache/" + System.nanoTime() + "/";
        return db.sql("INSERT INTO file (name, size_bytes, experiment) SELECT :p || g, :s, 'bench' "
                        + "FROM generate_series(1, :n) g RETURNING id")
                .param("p", prefix).param("s", FILE_SIZE).param("n", n)
                .query(Long.class).list().stream().mapToLong(Long::longValue).toArray();
    }
}
