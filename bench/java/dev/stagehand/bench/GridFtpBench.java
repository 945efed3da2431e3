package dev.stagehand.bench;

import dev.stagehand.transfer.CopyBatch;
import dev.stagehand.transfer.FileCopy;
import dev.stagehand.transfer.GridFtpServer;
import dev.stagehand.transfer.Mover;
import dev.stagehand.transfer.MoverSettings;
import dev.stagehand.transfer.Movers;
import java.io.IOException;
import java.io.OutputStream;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Stagehand's mover against globus-url-copy, same loopback server, same files, best of N; plain cp as the
 * machine's limit. Args: workDir [rounds] [sets...] where sets are big, mixed, small (default all).
 */
public final class GridFtpBench {

    record Row(String set, String tool, String settings, double seconds, double cpu, long bytes, int files, String load) {}

    record Tool(String name, String settings, ThrowingSupplier run) {}

    static Tool guc(String options, String settings, String src, String dst) {
        List<String> cmd = new ArrayList<>(List.of("globus-url-copy"));
        cmd.addAll(List.of(options.split(" ")));
        cmd.addAll(List.of(src, dst));
        return new Tool("globus-url-copy " + options, settings, () -> run(cmd));
    }

    /** The 1- and 5-minute load averages: other work on the machine skews every figure. */
    static String loadAverage() {
        try {
            String[] f = Files.readString(Path.of("/proc/loadavg")).split(" ");
            return f[0] + " " + f[1];
        } catch (IOException e) {
            return "?";
        }
    }

    public static void main(String[] args) throws Exception {
        Path work = Path.of(args.length > 0 ? args[0] : "/work/.bench-gridftp");
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        List<String> sets = args.length > 2 ? List.of(args).subList(2, args.length) : List.of("big", "mixed", "small");
        Files.createDirectories(work);
        GridFtpServer.openUp(work);
        List<Row> rows = new ArrayList<>();
        try (GridFtpServer server = GridFtpServer.anonymous(work.resolve("server"))) {
            for (String set : sets) {
                Path src = work.resolve("src-" + set);
                Path dst = work.resolve("dst");
                GridFtpServer.openUp(dst);
                generate(set, src);
                List<Path> files;
                try (Stream<Path> s = Files.list(src)) {
                    files = s.filter(Files::isRegularFile).sorted().toList();
                }
                long bytes = 0;
                for (Path f : files) bytes += Files.size(f);
                System.err.printf(Locale.ROOT, "set %s: %d files, %.2f GB%n", set, files.size(), bytes / 1e9);
                String dstUrl = server.url(dst) + "/";
                String srcArg = files.size() == 1 ? files.getFirst().toUri().toString() : src.toUri() + "/";
                String gucDst = files.size() == 1 ? dstUrl + files.getFirst().getFileName() : dstUrl;
                // the catalog's Adler32s, as Stagehand has them for archived files (computed before the clock starts)
                Map<Path, Long> catalog = new java.util.HashMap<>();
                for (Path f : files) catalog.put(f, adler32(f));
                long split = Long.getLong("gridftp.split", 512L << 20);
                int c = Integer.getInteger("gridftp.c", 4);
                int p = Integer.getInteger("gridftp.p", 2);
                // like with like: each globus-url-copy setting beside Stagehand with the same connections (-cc, -c)
                // and streams per connection (-p); "verified" rows check every file end to end on both sides
                List<Tool> tools = new ArrayList<>();
                tools.add(new Tool("cp (machine limit)", "", () -> run(List.of("cp", "-r", src + "/.", dst + "/"))));
                tools.add(guc("-fast -p 4", "1 conn x 4 streams", srcArg, gucDst));
                tools.add(guc("-fast -cc 4", "4 conn x 1 stream", srcArg, gucDst));
                tools.add(guc("-fast -cc 4 -p 2", "4 conn x 2 streams", srcArg, gucDst));
                tools.add(guc("-fast -cc 4 -p 2 -pp", "4 conn x 2 streams, pipelined", srcArg, gucDst));
                tools.add(guc("-fast -cc 4 -p 2 -verify-checksum", "4 conn x 2 streams, MD5 verified (its only local sum)", srcArg, gucDst));
                tools.add(new Tool("stagehand -c 1 -p 4", "1 conn x 4 streams, no checksum",
                        () -> stagehand(files, dstUrl, 1, 4, 0, false, null)));
                tools.add(new Tool("stagehand -c " + c + " -p " + p, c + " conn x " + p + " streams, no checksum, split " + (split >> 20) + " MiB",
                        () -> stagehand(files, dstUrl, c, p, split, false, null)));
                tools.add(new Tool("stagehand -c " + c + " -p " + p + " verified", c + " conn x " + p + " streams, Adler32 summed by the mover, split " + (split >> 20) + " MiB",
                        () -> stagehand(files, dstUrl, c, p, split, true, null)));
                tools.add(new Tool("stagehand -c " + c + " -p " + p + " verified (catalog sums)", c + " conn x " + p + " streams, Adler32 vs catalog, split " + (split >> 20) + " MiB",
                        () -> stagehand(files, dstUrl, c, p, split, true, catalog)));
                // -Dgridftp.extra=1x4,4x1,4x2+verified: more Stagehand rows (connections x streams; unverified unless
                // +verified, then against the catalog's sums) for experiments
                for (String v : System.getProperty("gridftp.extra", "").split(",")) {
                    if (v.isBlank()) continue;
                    String[] cs = v.split("\\+")[0].split("x");
                    int ec = Integer.parseInt(cs[0]);
                    int ep = Integer.parseInt(cs[1]);
                    boolean ev = v.contains("+verified");
                    tools.add(new Tool("x-stagehand " + v, ec + " conn x " + ep + " streams" + (ev ? ", Adler32 vs catalog" : ", no checksum"),
                            () -> stagehand(files, dstUrl, ec, ep, ec > 1 ? split : 0, ev, ev ? catalog : null)));
                }
                // -Dgridftp.tools=stagehand,cp runs only the tools whose names contain one of the words
                String only = System.getProperty("gridftp.tools", "");
                if (!only.isBlank()) tools.removeIf(t -> java.util.Arrays.stream(only.split(",")).noneMatch(t.name::contains));
                // -Dgridftp.skip=verify-checksum leaves out the tools whose names contain one of the words
                String skip = System.getProperty("gridftp.skip", "");
                if (!skip.isBlank()) tools.removeIf(t -> java.util.Arrays.stream(skip.split(",")).anyMatch(t.name::contains));
                // rounds interleave the tools (each round runs every tool once, in a rotated order), so a burst of
                // other work on the machine hits all of them alike; the best round counts
                double[] best = new double[tools.size()];
                double[] cpu = new double[tools.size()];
                java.util.Arrays.fill(best, Double.MAX_VALUE);
                java.util.Arrays.fill(cpu, Double.MAX_VALUE);
                for (int r = 0; r < rounds; r++) {
                    for (int k = 0; k < tools.size(); k++) {
                        int i = (k + r) % tools.size();
                        clean(dst);
                        double server0 = serverCpu(server);
                        double t = tools.get(i).run.get();
                        double used = lastClientCpu + serverCpu(server) - server0;
                        verifyCopied(files, dst);
                        best[i] = Math.min(best[i], t);
                        cpu[i] = Math.min(cpu[i], used);
                        System.err.printf(Locale.ROOT, "  round %d %-44s %7.2f s  %6.2f CPU s (client %.2f)  (load average %s)%n", r + 1,
                                tools.get(i).name, t, used, lastClientCpu, loadAverage());
                    }
                }
                for (int i = 0; i < tools.size(); i++) {
                    rows.add(new Row(set, tools.get(i).name, tools.get(i).settings, best[i], cpu[i], bytes, files.size(), loadAverage()));
                }
                clean(dst);
                deleteTree(src);
            }
        } finally {
            deleteTree(work);
        }
        System.out.printf("%n| set | tool | settings | files | GB | best s | MB/s | CPU s (client + server, least) | load 1m 5m |%n|---|---|---|---|---|---|---|---|---|%n");
        for (Row r : rows) {
            System.out.printf(Locale.ROOT, "| %s | %s | %s | %d | %.2f | %.2f | %.1f | %.2f | %s |%n", r.set, r.tool, r.settings, r.files,
                    r.bytes / 1e9, r.seconds, r.bytes / 1e6 / r.seconds, r.cpu, r.load);
        }
        System.out.println();
        for (String set : sets) {
            java.util.function.Function<String, Double> time = name -> rows.stream()
                    .filter(r -> r.set.equals(set) && r.tool.equals(name)).mapToDouble(Row::seconds).min().orElse(Double.NaN);
            java.util.function.Predicate<Row> plainGuc = r -> r.set.equals(set) && r.tool.startsWith("globus") && !r.tool.contains("verify");
            double gucBest = rows.stream().filter(plainGuc).mapToDouble(Row::seconds).min().orElse(Double.NaN);
            String c = Integer.getInteger("gridftp.c", 4) + " -p " + Integer.getInteger("gridftp.p", 2);
            System.out.printf(Locale.ROOT, "%-6s speed vs globus-url-copy (its time / ours; > 1: Stagehand faster):%n", set);
            System.out.printf(Locale.ROOT, "  same settings:  -c 1 -p 4 vs -p 4: %.2fx;  -c %s vs -cc 4 -p 2: %.2fx (vs -pp: %.2fx);  "
                            + "verified (Adler32) vs -verify-checksum (MD5): %.2fx%n",
                    time.apply("globus-url-copy -fast -p 4") / time.apply("stagehand -c 1 -p 4"),
                    c, time.apply("globus-url-copy -fast -cc 4 -p 2") / time.apply("stagehand -c " + c),
                    time.apply("globus-url-copy -fast -cc 4 -p 2 -pp") / time.apply("stagehand -c " + c),
                    time.apply("globus-url-copy -fast -cc 4 -p 2 -verify-checksum") / time.apply("stagehand -c " + c + " verified"));
            double oursPlain = Math.min(time.apply("stagehand -c 1 -p 4"), time.apply("stagehand -c " + c));
            System.out.printf(Locale.ROOT, "  best vs best (globus-url-copy unverified %.2f s): Stagehand unverified %.2fx, "
                            + "verified %.2fx, verified against catalog sums %.2fx%n", gucBest, gucBest / oursPlain,
                    gucBest / time.apply("stagehand -c " + c + " verified"),
                    gucBest / time.apply("stagehand -c " + c + " verified (catalog sums)"));
            // CPU (client + server) is what decides on a shared 2-core machine: other work moves wall times more
            java.util.function.Function<String, Double> cpu = name -> rows.stream()
                    .filter(r -> r.set.equals(set) && r.tool.equals(name)).mapToDouble(Row::cpu).min().orElse(Double.NaN);
            double gucCpu = rows.stream().filter(plainGuc).mapToDouble(Row::cpu).min().orElse(Double.NaN);
            System.out.printf(Locale.ROOT, "  CPU s, least (client + server): globus-url-copy unverified %.2f, Stagehand unverified %.2f (%.2fx); "
                            + "globus-url-copy -verify-checksum %.2f, Stagehand verified %.2f, against catalog sums %.2f%n",
                    gucCpu, Math.min(cpu.apply("stagehand -c 1 -p 4"), cpu.apply("stagehand -c " + c)),
                    gucCpu / Math.min(cpu.apply("stagehand -c 1 -p 4"), cpu.apply("stagehand -c " + c)),
                    cpu.apply("globus-url-copy -fast -cc 4 -p 2 -verify-checksum"), cpu.apply("stagehand -c " + c + " verified"),
                    cpu.apply("stagehand -c " + c + " verified (catalog sums)"));
        }
    }

    interface ThrowingSupplier {
        double get() throws Exception;
    }

    /** CPU seconds (user + system) the last run of a tool used on the client side (this JVM or the command). */
    static double lastClientCpu;

    static double run(List<String> cmd) throws Exception {
        // bash's `times` reports its children's CPU: the command's own cost, whatever else the machine runs
        Path times = Files.createTempFile("gridftp-bench", ".times");
        try {
            List<String> sh = new ArrayList<>(List.of("bash", "-c", "\"$@\"; rc=$?; times > " + times + "; exit $rc", "run"));
            sh.addAll(cmd);
            long t0 = System.nanoTime();
            Process p = new ProcessBuilder(sh).inheritIO().start();
            if (!p.waitFor(600, TimeUnit.SECONDS) || p.exitValue() != 0) throw new IllegalStateException("failed: " + cmd);
            double seconds = (System.nanoTime() - t0) / 1e9;
            List<String> lines = Files.readAllLines(times);
            lastClientCpu = 0;
            for (String t : lines.get(1).trim().split("\\s+")) {
                String[] ms = t.replace("s", "").split("m");
                lastClientCpu += Integer.parseInt(ms[0]) * 60 + Double.parseDouble(ms[1]);
            }
            return seconds;
        } finally {
            Files.deleteIfExists(times);
        }
    }

    static double processCpu() {
        return ((com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime() / 1e9;
    }

    /** CPU seconds of the server's finished per-connection processes (cutime + cstime of the master), after they exit. */
    static double serverCpu(GridFtpServer server) throws Exception {
        for (int i = 0; i < 100 && !server.children().isEmpty(); i++) Thread.sleep(20);
        String stat = Files.readString(Path.of("/proc/" + server.pid() + "/stat"));
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        return (Long.parseLong(f[13]) + Long.parseLong(f[14])) / 100.0; // fields 16 and 17, in clock ticks
    }

    static long adler32(Path f) throws IOException {
        java.util.zip.Adler32 sum = new java.util.zip.Adler32();
        try (var ch = java.nio.channels.FileChannel.open(f)) {
            var buf = java.nio.ByteBuffer.allocateDirect(1 << 20);
            while (ch.read(buf) > 0) {
                buf.flip();
                sum.update(buf);
                buf.clear();
            }
        }
        return sum.getValue();
    }

    /** {@code catalog}: the files' known Adler32s (the destination is verified against them), or null. */
    static double stagehand(List<Path> files, String dstUrl, int connections, int streams, long split, boolean verify,
                            Map<Path, Long> catalog) throws Exception {
        MoverSettings s = MoverSettings.defaults().withStreams(streams, connections, false)
                .withSecurity(verify, "NONE", "", "")
                .withChunking(64L << 20, split, 0)
                .withRetry(Duration.ofSeconds(30), 3, Duration.ofSeconds(1), Duration.ofSeconds(10));
        List<FileCopy> copies = new ArrayList<>();
        for (Path f : files)
            copies.add(new FileCopy(f.getFileName().toString(), f.toUri(), URI.create(dstUrl + f.getFileName()), Files.size(f), catalog == null ? null : catalog.get(f)));
        double cpu0 = processCpu();
        long t0 = System.nanoTime();
        try (Mover mover = Movers.gridFtp(s, null)) {
            CopyBatch batch = mover.submit(copies);
            batch.done().get(600, TimeUnit.SECONDS);
            for (FileCopy c : copies) batch.result(c).get();
        }
        double seconds = (System.nanoTime() - t0) / 1e9;
        lastClientCpu = processCpu() - cpu0;
        return seconds;
    }

    static void verifyCopied(List<Path> files, Path dst) throws IOException {
        for (Path f : files) {
            Path d = dst.resolve(f.getFileName());
            if (!Files.exists(d) || Files.size(d) != Files.size(f)) throw new IllegalStateException("not copied: " + d);
        }
    }

    static void generate(String set, Path dir) throws IOException {
        Files.createDirectories(dir);
        SplittableRandom rnd = new SplittableRandom(42);
        List<Long> sizes = new ArrayList<>();
        switch (set) {
            case "big" -> sizes.add(1L << 30);
            case "small" -> { for (int i = 0; i < 2000; i++) sizes.add(1L << 20); }
            case "mixed" -> {
                // a climate-like set scaled to this disk and time: 100 files, a quarter under 20 MB,
                // most 20-60 MB, two over 1 GB
                for (int i = 0; i < 25; i++) sizes.add(rnd.nextLong(1_000_000, 20_000_000));
                for (int i = 0; i < 73; i++) sizes.add(rnd.nextLong(20_000_000, 60_000_000));
                sizes.add(1_100_000_000L);
                sizes.add(1_200_000_000L);
            }
            default -> throw new IllegalArgumentException("unknown set " + set);
        }
        byte[] block = new byte[64 << 20];
        rnd.nextBytes(block);
        int i = 0;
        for (long size : sizes) {
            try (OutputStream out = Files.newOutputStream(dir.resolve(String.format("%s-%04d.nc", set, i++)))) {
                long left = size;
                int off = rnd.nextInt(1 << 20);
                while (left > 0) {
                    int n = (int) Math.min(left, block.length - off);
                    out.write(block, off, n);
                    left -= n;
                    off = 0;
                }
            }
        }
    }

    static void clean(Path dst) throws Exception {
        try (Stream<Path> s = Files.list(dst)) {
            for (Path p : s.toList()) Files.delete(p);
        }
    }

    static void deleteTree(Path p) throws Exception {
        new ProcessBuilder("rm", "-rf", p.toString()).inheritIO().start().waitFor();
    }
}
