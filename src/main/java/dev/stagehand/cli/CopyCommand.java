package dev.stagehand.cli;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.encoder.PatternLayoutEncoder;
import ch.qos.logback.core.ConsoleAppender;
import dev.stagehand.transfer.CopyBatch;
import dev.stagehand.transfer.CopyResult;
import dev.stagehand.transfer.FileCopy;
import dev.stagehand.transfer.Mover;
import dev.stagehand.transfer.MoverSettings;
import dev.stagehand.transfer.Movers;
import dev.stagehand.transfer.TransferFailure;
import dev.stagehand.transfer.TransferListener;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code stagehand copy SRC... DEST}: the mover engine from the command line, no service or database needed.
 */
@Command(name = "copy", mixinStandardHelpOptions = true,
        description = {"Copy local files, directories (their files, not sub-directories) or file lists (@list.txt) to a",
                "gsiftp:// or ftp:// directory, or GridFTP files to a GridFTP directory (third-party).",
                "Several destination hosts: gsiftp://a:2811,b:2811/dir (load balanced).",
                "A file already at the destination is not sent when it is the same (size and ADLER32), and fails",
                "(left as it is) when it is another, unless --overwrite (FTS3's default and its --overwrite)."})
final class CopyCommand implements Callable<Integer> {

    @Parameters(arity = "2..*", paramLabel = "SRC... DEST", description = "sources, then the destination directory URL")
    List<String> arguments;

    @Option(names = {"-p", "--parallelism"}, description = "parallel TCP streams per transfer (default ${DEFAULT-VALUE})")
    int parallelism = 4;

    @Option(names = {"-c", "--concurrency"}, description = "concurrent transfers (connections) per destination (default ${DEFAULT-VALUE})")
    int concurrency = 4;

    @Option(names = "--adaptive", description = "adapt concurrency to throughput and errors (between 1 and --max-concurrency)")
    boolean adaptive;

    @Option(names = "--max-concurrency", description = "upper bound for --adaptive (default ${DEFAULT-VALUE})")
    int maxConcurrency = 16;

    @Option(names = "--no-checksum", negatable = true, description = "skip the CKSM ADLER32 verification")
    boolean noChecksum;

    @Option(names = "--stall-timeout", description = "seconds without progress before a transfer is retried (default ${DEFAULT-VALUE})")
    int stallSeconds = 30;

    @Option(names = "--attempts", description = "attempts per file (default ${DEFAULT-VALUE})")
    int attempts = 5;

    @Option(names = "--tcp-buffer", description = "TCP buffer bytes for data channels, 0 = system default")
    int tcpBuffer = 0;

    @Option(names = "--split-mb", description = "files at least this many MB go as byte ranges over several connections, 0 = never (default ${DEFAULT-VALUE})")
    long splitMb = 512;

    @Option(names = "--dcau", description = "gsiftp:// data channel authentication: SELF or NONE (default ${DEFAULT-VALUE})")
    String dcau = "SELF";

    @Option(names = "--overwrite", description = "write over another file already at the destination (default: that file fails)")
    boolean overwrite;

    @Option(names = "--json", description = "print one JSON object on stdout: files (done, the unsent included), unsent "
            + "(the same file was there already), bytes (sent), seconds, mb_per_s, failed")
    boolean json;

    @Option(names = "--progress", negatable = true, description = "progress bar on stderr (default: when stderr is a terminal)")
    Boolean progress;

    @Override
    public Integer call() throws Exception {
        quietLogging();
        PrintStream err = System.err;
        String dest = arguments.getLast();
        URI destDir;
        try {
            destDir = URI.create(dest.endsWith("/") ? dest : dest + "/");
        } catch (IllegalArgumentException e) {
            err.println("copy: bad destination " + dest + ": " + e.getMessage());
            return 2;
        }
        if (!"ftp".equals(destDir.getScheme()) && !"gsiftp".equals(destDir.getScheme())) {
            err.println("copy: the destination must be a gsiftp:// or ftp:// directory URL, not " + dest);
            return 2;
        }
        List<FileCopy> copies = new ArrayList<>();
        // as the service's transfers (and FTS3): the mover looks at the destination before it first writes there
        FileCopy.Existing existing = overwrite ? FileCopy.Existing.REPLACE : FileCopy.Existing.KEEP;
        try {
            for (String src : arguments.subList(0, arguments.size() - 1)) collect(src, destDir, existing, copies);
        } catch (IllegalArgumentException | IOException e) {
            err.println("copy: " + e.getMessage());
            return 2;
        }
        if (copies.isEmpty()) {
            err.println("copy: no files to copy");
            return 2;
        }
        MoverSettings settings = MoverSettings.defaults()
                .withStreams(parallelism, concurrency, adaptive)
                .withRetry(Duration.ofSeconds(stallSeconds), attempts, Duration.ofSeconds(1), Duration.ofSeconds(60))
                .withChunking(64L << 20, splitMb << 20, tcpBuffer)
                .withSecurity(!noChecksum, dcau, "", "");
        if (adaptive) settings = settings.withAdaptive(1, Math.max(maxConcurrency, concurrency), Duration.ofSeconds(5));
        long total = copies.stream().mapToLong(FileCopy::sizeBytes).sum();
        AtomicLong sent = new AtomicLong();
        TransferListener listener = new TransferListener() {
            @Override
            public void bytes(FileCopy copy, long delta) {
                sent.addAndGet(delta);
            }
        };
        boolean bar = progress != null ? progress : System.console() != null;
        long start = System.nanoTime();
        int ok = 0;
        int failed = 0;
        int unsent = 0;
        long bytes = 0;
        try (Mover mover = Movers.gridFtp(settings, listener)) {
            CopyBatch batch = mover.submit(copies);
            while (!batch.done().isDone()) {
                try {
                    batch.done().get(250, TimeUnit.MILLISECONDS);
                } catch (java.util.concurrent.TimeoutException notYet) {
                    // keep drawing
                }
                if (bar) drawBar(err, sent.get(), total, batch, copies, start);
            }
            if (bar) err.print("\r\033[K");
            for (FileCopy c : copies) {
                try {
                    CopyResult r = batch.result(c).get();
                    ok++;
                    // attempts 0: the same file was there, nothing sent (its bytes would inflate the rate)
                    if (r.attempts() == 0) unsent++;
                    else bytes += r.bytes();
                } catch (ExecutionException e) {
                    failed++;
                    String why = e.getCause() instanceof TransferFailure f ? f.getMessage() : String.valueOf(e.getCause());
                    if (e.getCause() instanceof TransferFailure f && f.kind() == TransferFailure.Kind.DESTINATION_EXISTS) {
                        why += " (--overwrite writes over it)";
                    }
                    err.println("FAILED " + c.source() + ": " + why);
                }
            }
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        double mbps = bytes / 1e6 / Math.max(seconds, 1e-9);
        err.printf(Locale.ROOT, "copied %d file(s), %s in %.2f s (%.1f MB/s)%s%s%n", ok - unsent, human(bytes), seconds,
                mbps, unsent > 0 ? ", " + unsent + " already at the destination (not sent)" : "",
                failed > 0 ? ", " + failed + " FAILED" : "");
        if (json) {
            System.out.printf(Locale.ROOT,
                    "{\"files\":%d,\"unsent\":%d,\"bytes\":%d,\"seconds\":%.3f,\"mb_per_s\":%.1f,\"failed\":%d}%n",
                    ok, unsent, bytes, seconds, mbps, failed);
        }
        return failed > 0 ? 1 : 0;
    }

    private void collect(String src, URI destDir, FileCopy.Existing existing, List<FileCopy> out) throws IOException {
        if (src.startsWith("@")) {
            Path list = Path.of(src.substring(1));
            if (!Files.isReadable(list)) throw new IllegalArgumentException("cannot read file list " + list);
            for (String line : Files.readAllLines(list)) {
                String s = line.strip();
                if (!s.isEmpty() && !s.startsWith("#")) collect(s, destDir, existing, out);
            }
            return;
        }
        if (src.startsWith("ftp://") || src.startsWith("gsiftp://")) {
            URI u = URI.create(src);
            String name = Path.of(u.getPath()).getFileName().toString();
            // size unknown before the transfer; third-party copies are checked against the source's CKSM
            out.add(new FileCopy(src, u, destDir.resolve(name), 0, null, existing, null));
            return;
        }
        Path p = Path.of(src.startsWith("file:") ? URI.create(src).getPath() : src).toAbsolutePath();
        if (Files.isDirectory(p)) {
            try (Stream<Path> files = Files.list(p)) {
                for (Path f : files.filter(Files::isRegularFile).sorted().toList()) add(f, destDir, existing, out);
            }
        } else if (Files.isRegularFile(p)) {
            add(p, destDir, existing, out);
        } else {
            throw new IllegalArgumentException("no such file or directory: " + src);
        }
    }

    private static void add(Path f, URI destDir, FileCopy.Existing existing, List<FileCopy> out) throws IOException {
        out.add(new FileCopy(f.toString(), f.toUri(), destDir.resolve(f.getFileName().toString()), Files.size(f), null,
                existing, null));
    }

    private static void drawBar(PrintStream err, long sent, long total, CopyBatch batch, List<FileCopy> copies, long start) {
        long done = copies.stream().filter(c -> batch.result(c).isDone()).count();
        double secs = (System.nanoTime() - start) / 1e9;
        double frac = total > 0 ? Math.min(1, sent / (double) total) : done / (double) copies.size();
        int width = 30;
        int fill = (int) (frac * width);
        err.printf(Locale.ROOT, "\r[%s%s] %3.0f%% %s/%s %.1f MB/s %d/%d files\033[K", "#".repeat(fill),
                " ".repeat(width - fill), frac * 100, human(sent), human(total), sent / 1e6 / Math.max(secs, 1e-9), done,
                copies.size());
        err.flush();
    }

    static String human(long bytes) {
        if (bytes >= 1L << 30) return String.format(Locale.ROOT, "%.2f GiB", bytes / (double) (1L << 30));
        if (bytes >= 1L << 20) return String.format(Locale.ROOT, "%.1f MiB", bytes / (double) (1L << 20));
        return bytes + " B";
    }

    /** Without Spring, logback would log everything to stdout: warnings only, to stderr. */
    private static void quietLogging() {
        if (!(LoggerFactory.getILoggerFactory() instanceof LoggerContext ctx)) return;
        ctx.reset();
        PatternLayoutEncoder enc = new PatternLayoutEncoder();
        enc.setContext(ctx);
        enc.setPattern("%d{HH:mm:ss} %-5level %logger{0} - %msg%n");
        enc.start();
        ConsoleAppender<ch.qos.logback.classic.spi.ILoggingEvent> app = new ConsoleAppender<>();
        app.setContext(ctx);
        app.setTarget("System.err");
        app.setEncoder(enc);
        app.start();
        ch.qos.logback.classic.Logger root = ctx.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
        root.setLevel(Level.WARN);
        root.addAppender(app);
        // jglobus logs every closed data socket of a failed transfer at ERROR; our failures say it better
        ctx.getLogger("org.globus").setLevel(Level.OFF);
    }
}
