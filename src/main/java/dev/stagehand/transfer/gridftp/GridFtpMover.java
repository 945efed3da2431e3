package dev.stagehand.transfer.gridftp;

import dev.stagehand.transfer.CopyBatch;
import dev.stagehand.transfer.CopyResult;
import dev.stagehand.transfer.FileCopy;
import dev.stagehand.transfer.FileUrls;
import dev.stagehand.transfer.LinkStatus;
import dev.stagehand.transfer.Mover;
import dev.stagehand.transfer.MoverSettings;
import dev.stagehand.transfer.TransferFailure;
import dev.stagehand.transfer.TransferFailure.Kind;
import dev.stagehand.transfer.TransferListener;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.ietf.jgss.GSSCredential;

/**
 * The jglobus GridFTP mover: files are grouped by destination link; each link keeps a pool of reused
 * connections; big local files are split into byte ranges sent by several connections at once.
 */
public final class GridFtpMover implements Mover {

    private final MoverSettings settings;
    private final TransferListener listener;
    private final Watchdog watchdog;
    private final LocalReadException.Opener opener;
    private final boolean jglobusPuts;
    private final ScheduledExecutorService timer =
            Executors.newScheduledThreadPool(1, Thread.ofPlatform().daemon().name("mover-timer").factory());
    private final Map<String, Link> links = new ConcurrentHashMap<>();
    private final java.util.concurrent.ExecutorService checksums = Executors.newVirtualThreadPerTaskExecutor();
    private Gsi.Proxy proxy; // guarded by this

    private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(GridFtpMover.class);
    private static final java.util.concurrent.atomic.AtomicBoolean CHARSET_TOLD = new java.util.concurrent.atomic.AtomicBoolean();

    public GridFtpMover(MoverSettings settings, TransferListener listener) {
        this(settings, listener, LocalReadException.READ, false);
    }

    /**
     * Tests: {@code opener}, how puts open their local files (a double: a file whose reads hang); {@code jglobusPuts},
     * puts go through jglobus (as with GSI and DCAU) though the server is plain FTP.
     */
    GridFtpMover(MoverSettings settings, TransferListener listener, LocalReadException.Opener opener, boolean jglobusPuts) {
        java.nio.charset.Charset jvm = java.nio.charset.Charset.defaultCharset();
        if (!jvm.equals(java.nio.charset.StandardCharsets.UTF_8) && CHARSET_TOLD.compareAndSet(false, true)) {
            // once per JVM: every file with a non-ASCII name is refused (Endpoint.charsetProblem) until this changes
            log.error("the JVM's default charset is {}, not UTF-8: jglobus writes GridFTP commands in it, so files whose "
                    + "names have non-ASCII characters are refused; start Stagehand with -Dfile.encoding=UTF-8", jvm);
        }
        this.settings = settings;
        this.listener = listener == null ? TransferListener.NONE : listener;
        this.watchdog = new Watchdog(settings.stallTimeout().toNanos());
        this.opener = opener;
        this.jglobusPuts = jglobusPuts;
    }

    /** The proxy's credential, read again when its file changes or it nears its end (proxies are renewed on disk). */
    synchronized GSSCredential credential() {
        proxy = Gsi.current(settings, proxy);
        return proxy.credential();
    }

    @Override
    public CopyBatch submit(List<FileCopy> copies) {
        Map<FileCopy, Job> jobs = new IdentityHashMap<>();
        Map<Link, List<Job.Piece>> byLink = new java.util.LinkedHashMap<>();
        // Biggest first: a big file started last would be the whole batch's tail.
        List<FileCopy> ordered = new ArrayList<>(copies);
        ordered.sort(Comparator.comparingLong(FileCopy::sizeBytes).reversed());
        for (FileCopy copy : ordered) {
            Job job;
            Link link;
            try {
                job = prepare(copy);
                Endpoint destination = job.destination;
                link = links.computeIfAbsent(destination.link(),
                        k -> new Link(destination, settings, listener, watchdog, timer, this::credential, opener, jglobusPuts));
                job.pieces(split(job, link.concurrency()));
            } catch (RuntimeException e) {
                // this file only: the others of the batch go on (a throw here would leave them all unmoved)
                TransferFailure f = e instanceof TransferFailure tf ? tf
                        : new TransferFailure(Kind.BAD_REQUEST, "cannot move " + copy.source() + " to " + copy.destination() + ": " + e);
                job = new Job(copy, null, null, null);
                job.fail(f);
                jobs.put(copy, job);
                continue;
            }
            jobs.put(copy, job);
            byLink.computeIfAbsent(link, l -> new ArrayList<>()).addAll(job.pieces);
        }
        byLink.forEach(Link::enqueue);
        return new Batch(jobs);
    }

    private Job prepare(FileCopy copy) {
        Endpoint destination;
        try {
            destination = Endpoint.parse(copy.destination());
        } catch (IllegalArgumentException e) {
            throw new TransferFailure(Kind.BAD_REQUEST, "bad destination: " + e.getMessage());
        }
        if (destination.gsi()) Gsi.prepare(settings);
        if (FileUrls.isGridFtp(copy.source())) {
            try {
                return new Job(copy, destination, Endpoint.parse(copy.source()), null);
            } catch (IllegalArgumentException e) {
                throw new TransferFailure(Kind.BAD_REQUEST, "bad source: " + e.getMessage());
            }
        }
        if (!"file".equalsIgnoreCase(copy.source().getScheme()))
            throw new TransferFailure(Kind.BAD_REQUEST, "unsupported source " + copy.source());
        Path local = Path.of(copy.source());
        if (!Files.isRegularFile(local) || !Files.isReadable(local))
            throw new TransferFailure(Kind.BAD_REQUEST, "cannot read local file " + local);
        // only sizeBytes are sent: a longer file arrived cut short, and with no catalogued Adler32 (the sum then
        // is of what was sent) it verified and was reported done
        long onDisk;
        try {
            onDisk = Files.size(local);
        } catch (java.io.IOException e) {
            throw new TransferFailure(Kind.BAD_REQUEST, "cannot read local file " + local + ": " + e);
        }
        if (onDisk != copy.sizeBytes())
            throw new TransferFailure(Kind.BAD_REQUEST, "local file " + local + " is " + onDisk + " bytes, expected " + copy.sizeBytes());
        Job job = new Job(copy, destination, null, local);
        return job;
    }

    /** Big local files become byte ranges, one per connection of the link, so several connections share them. */
    private List<Job.Piece> split(Job job, int connections) {
        long size = job.copy.sizeBytes();
        if (job.source != null || settings.splitBytes() <= 0 || size < settings.splitBytes() || connections < 2) {
            return List.of(new Job.Piece(job, 0, size));
        }
        long step = ((size + connections - 1) / connections + (1 << 20) - 1) & ~((1L << 20) - 1);
        List<Job.Piece> pieces = new ArrayList<>();
        for (long off = 0; off < size; off += step) pieces.add(new Job.Piece(job, off, Math.min(step, size - off)));
        return pieces;
    }

    @Override
    public void makeDirectories(java.net.URI url) {
        Endpoint dir;
        try {
            dir = Endpoint.parse(url);
        } catch (IllegalArgumentException e) {
            throw new TransferFailure(Kind.BAD_REQUEST, "bad directory URL: " + e.getMessage());
        }
        if (dir.gsi()) Gsi.prepare(settings);
        try (GridFtpSession s = openAny(dir)) {
            s.replyTimeout(settings.stallTimeout());
            // MKD each ancestor from the top: one that exists answers 550, which is fine; a real refusal
            // shows at the last one, which must exist (or be made) in the end
            String[] parts = dir.path().split("/");
            StringBuilder at = new StringBuilder();
            Exception last = null;
            for (String part : parts) {
                if (part.isEmpty()) continue;
                at.append('/').append(part);
                try {
                    s.makeDir(at.toString());
                    last = null;
                } catch (Exception e) {
                    if (Failures.classify(e) == Kind.TIMEOUT) throw e; // no reply: the connection is out of step
                    last = e;
                }
            }
            if (last != null && !s.exists(at.toString())) {
                throw new TransferFailure(Failures.classify(last), "cannot create " + url + ": " + Failures.message(last), 1, last);
            }
        } catch (TransferFailure f) {
            throw f;
        } catch (Exception e) {
            throw new TransferFailure(Failures.classify(e), "cannot create " + url + ": " + Failures.message(e), 1, e);
        }
    }

    @Override
    public Map<java.net.URI, TransferFailure> delete(java.util.Collection<java.net.URI> urls) {
        Map<java.net.URI, TransferFailure> failed = new java.util.LinkedHashMap<>();
        // one control connection per server for all its files
        Map<String, List<java.net.URI>> byServer = new java.util.LinkedHashMap<>();
        for (java.net.URI u : urls) {
            try {
                Endpoint e = Endpoint.parse(u);
                byServer.computeIfAbsent(e.link(), k -> new ArrayList<>()).add(u);
            } catch (IllegalArgumentException e) {
                failed.put(u, new TransferFailure(Kind.BAD_REQUEST, "bad file URL: " + e.getMessage()));
            }
        }
        for (List<java.net.URI> group : byServer.values()) {
            Endpoint first = Endpoint.parse(group.getFirst());
            try {
                if (first.gsi()) Gsi.prepare(settings);
                try (GridFtpSession s = openAny(first)) {
                    s.replyTimeout(settings.stallTimeout());
                    for (int i = 0; i < group.size(); i++) {
                        java.net.URI u = group.get(i);
                        String path = Endpoint.parse(u).path();
                        try {
                            s.deleteFile(path);
                        } catch (Exception e) {
                            Kind kind = Failures.classify(e);
                            if (kind == Kind.TIMEOUT) {
                                // no reply: the connection is out of step; this file and the rest are not deleted
                                for (java.net.URI rest : group.subList(i, group.size())) {
                                    failed.put(rest, new TransferFailure(kind, "cannot delete " + rest + ": no reply in "
                                            + settings.stallTimeout() + " (" + Failures.message(e) + ")", 1, e));
                                }
                                break;
                            }
                            if (kind != Kind.NO_SUCH_PATH) { // already gone: deleted
                                failed.put(u, new TransferFailure(kind, "cannot delete " + u + ": " + Failures.message(e), 1, e));
                            }
                        }
                    }
                }
            } catch (Exception e) { // no session with that server: all its files fail alike
                for (java.net.URI u : group) {
                    failed.put(u, new TransferFailure(Failures.classify(e), "cannot delete " + u + ": " + Failures.message(e), 1, e));
                }
            }
        }
        return failed;
    }

    /**
     * A session with one of {@code e}'s hosts, those the link has not taken out of rotation first; the next is
     * tried when one cannot be reached. A host list is one site's doors onto one file system: before, a mkdir or
     * delete went to the first host only, and with it down failed though the others were up (replication
     * counted a failed attempt per file, partial files and unwanted replicas stayed).
     */
    private GridFtpSession openAny(Endpoint e) throws Exception {
        Link link = links.get(e.link());
        java.util.Set<String> out = link == null ? java.util.Set.of() : java.util.Set.copyOf(link.status().hostsOut());
        List<Endpoint.HostPort> hosts = new ArrayList<>(e.hosts());
        hosts.sort(Comparator.comparing((Endpoint.HostPort h) -> out.contains(h.toString())));
        Exception unreachable = null;
        for (Endpoint.HostPort h : hosts) {
            try {
                return GridFtpSession.open(h, e.gsi(), e.gsi() ? credential() : null, settings, jglobusPuts);
            } catch (Exception x) {
                Kind kind = Failures.classify(x);
                if (kind != Kind.CONNECTION && kind != Kind.TIMEOUT) throw x; // refused by the site: so would the others
                if (unreachable == null) unreachable = x;
                else unreachable.addSuppressed(x);
            }
        }
        throw unreachable;
    }

    @Override
    public List<LinkStatus> links() {
        return links.values().stream().map(Link::status).toList();
    }

    @Override
    public void close() {
        links.values().forEach(Link::close);
        timer.shutdownNow();
        watchdog.close();
        checksums.shutdownNow();
    }

    private static final class Batch implements CopyBatch {
        private final Map<FileCopy, Job> jobs;

        Batch(Map<FileCopy, Job> jobs) {
            this.jobs = jobs;
        }

        private Job job(FileCopy copy) {
            Job job = jobs.get(copy);
            if (job == null) throw new IllegalArgumentException("not in this batch: " + copy);
            return job;
        }

        @Override
        public CompletableFuture<CopyResult> result(FileCopy copy) {
            return job(copy).future;
        }

        @Override
        public void cancel(FileCopy copy) {
            Job job = job(copy);
            job.cancelled = true;
            job.fail(new TransferFailure(Kind.CANCELLED, "cancelled: " + copy.destination()));
        }

        @Override
        public void cancelAll() {
            jobs.keySet().forEach(this::cancel);
        }

        @Override
        public CompletableFuture<Void> done() {
            return CompletableFuture.allOf(jobs.values().stream()
                    .map(j -> j.future.handle((r, e) -> null)).toArray(CompletableFuture[]::new));
        }
    }
}
