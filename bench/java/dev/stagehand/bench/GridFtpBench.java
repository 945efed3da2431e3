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
import java.util.LinkedHashMap;
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

    record Row(String set, String tool, double seconds, long bytes, int files) {}

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
                Map<String, ThrowingSupplier> tools = new LinkedHashMap<>();
                tools.put("cp (machine limit)", () -> run(List.of("cp", "-r", src + "/.", dst + "/")));
                tools.put("globus-url-copy -fast -p 4", () -> run(List.of("globus-url-copy", "-fast", "-p", "4", srcArg, gucDst)));
                tools.put("globus-url-copy -fast -cc 4 -p 2", () -> run(List.of("globus-url-copy", "-fast", "-cc", "4", "-p", "2", srcArg, gucDst)));
                tools.put("globus-url-copy -fast -cc 4 -p 2 -pp", () -> run(List.of("globus-url-copy", "-fast", "-pp", "-cc", "4", "-p", "2", srcArg, gucDst)));
                tools.put("stagehand -c 4 -p 2 (CKSM verified)", () -> stagehand(files, dstUrl, true));
                tools.put("stagehand -c 4 -p 2 (no checksum)", () -> stagehand(files, dstUrl, false));
                for (var tool : tools.entrySet()) {
                    double best = Double.MAX_VALUE;
                    for (int r = 0; r < rounds; r++) {
                        clean(dst);
                        double t = tool.getValue().get();
                        verifyCopied(files, dst);
                        best = Math.min(best, t);
                    }
                    rows.add(new Row(set, tool.getKey(), best, bytes, files.size()));
                    System.err.printf(Locale.ROOT, "  %-40s %7.2f s%n", tool.getKey(), best);
                }
                clean(dst);
                deleteTree(src);
            }
        } finally {
            deleteTree(work);
        }
        System.out.printf("%n%-6s %-40s %6s %9s %9s %10s%n", "set", "tool", "files", "GB", "best s", "MB/s");
        for (Row r : rows) {
            System.out.printf(Locale.ROOT, "%-6s %-40s %6d %9.2f %9.2f %10.1f%n", r.set, r.tool, r.files, r.bytes / 1e9,
                    r.seconds, r.bytes / 1e6 / r.seconds);
        }
        System.out.println();
        for (String set : sets) {
            double guc = rows.stream().filter(r -> r.set.equals(set) && r.tool.startsWith("globus")).mapToDouble(Row::seconds).min().orElse(Double.NaN);
            double ours = rows.stream().filter(r -> r.set.equals(set) && r.tool.contains("(CKSM")).mapToDouble(Row::seconds).min().orElse(Double.NaN);
            double raw = rows.stream().filter(r -> r.set.equals(set) && r.tool.contains("(no checksum")).mapToDouble(Row::seconds).min().orElse(Double.NaN);
            System.out.printf(Locale.ROOT, "%-6s stagehand/globus-url-copy-best speed: %.2fx verified, %.2fx without checksum%n", set, guc / ours, guc / raw);
        }
    }

    interface ThrowingSupplier {
        double get() throws Exception;
    }

    static double run(List<String> cmd) throws Exception {
        long t0 = System.nanoTime();
        Process p = new ProcessBuilder(cmd).inheritIO().start();
        if (!p.waitFor(600, TimeUnit.SECONDS) || p.exitValue() != 0) throw new IllegalStateException("failed: " + cmd);
        return (System.nanoTime() - t0) / 1e9;
    }

    static double stagehand(List<Path> files, String dstUrl, boolean verify) throws Exception {
        MoverSettings s = MoverSettings.defaults().withStreams(2, 4, false)
                .withSecurity(verify, "NONE", "", "")
                .withRetry(Duration.ofSeconds(30), 3, Duration.ofSeconds(1), Duration.ofSeconds(10));
        List<FileCopy> copies = new ArrayList<>();
        for (Path f : files)
            copies.add(new FileCopy(f.getFileName().toString(), f.toUri(), URI.create(dstUrl + f.getFileName()), Files.size(f), null));
        long t0 = System.nanoTime();
        try (Mover mover = Movers.gridFtp(s, null)) {
            CopyBatch batch = mover.submit(copies);
            batch.done().get(600, TimeUnit.SECONDS);
            for (FileCopy c : copies) batch.result(c).get();
        }
        return (System.nanoTime() - t0) / 1e9;
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
