package dev.stagehand.transfer.gridftp;

import dev.stagehand.transfer.LinkStatus;
import dev.stagehand.transfer.MoverSettings;
import dev.stagehand.transfer.TransferFailure;
import dev.stagehand.transfer.TransferFailure.Kind;
import dev.stagehand.transfer.TransferListener;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingDeque;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.Adler32;
import org.ietf.jgss.GSSCredential;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One destination (scheme + host list): a queue of pieces, a pool of worker connections spread over the
 * hosts, host health, and the adaptive concurrency (in the spirit of FTS3's optimizer).
 */
final class Link {

    private static final Logger log = LoggerFactory.getLogger(Link.class);

    final String key;
    private final Endpoint endpoint;
    private final MoverSettings settings;
    private final TransferListener listener;
    private final Watchdog watchdog;
    private final ScheduledExecutorService timer;
    private final CredentialSource credentials;
    /** How puts open their local files, and whether they go through jglobus on plain FTP too (tests: doubles). */
    private final LocalReadException.Opener opener;
    private final boolean jglobusPuts;
    private final LinkedBlockingDeque<Job.Piece> queue = new LinkedBlockingDeque<>();
    private final Map<Endpoint.HostPort, Long> downUntil = new ConcurrentHashMap<>();
    private final Map<Endpoint.HostPort, AtomicInteger> load = new ConcurrentHashMap<>();
    private final AtomicInteger target;
    private final AtomicInteger workers = new AtomicInteger();
    private final AtomicInteger active = new AtomicInteger();
    // optimizer window
    private final AtomicLong windowBytes = new AtomicLong();
    private final AtomicInteger windowOk = new AtomicInteger();
    private final AtomicInteger windowFailed = new AtomicInteger();
    private volatile double emaMbPerSecond = -1;
    private volatile double successRate = 1;
    private volatile boolean closed;
    /** The link's servers take SCKS (GCT does); cleared when one says it does not know it (500-504). */
    private volatile boolean scks = true;

    interface CredentialSource {
        GSSCredential get();
    }

    Link(Endpoint endpoint, MoverSettings settings, TransferListener listener, Watchdog watchdog,
         ScheduledExecutorService timer, CredentialSource credentials, LocalReadException.Opener opener, boolean jglobusPuts) {
        this.key = endpoint.link();
        this.endpoint = endpoint;
        this.settings = settings;
        this.listener = listener;
        this.watchdog = watchdog;
        this.timer = timer;
        this.credentials = credentials;
        this.opener = opener;
        this.jglobusPuts = jglobusPuts;
        this.target = new AtomicInteger(settings.concurrency());
        for (Endpoint.HostPort h : endpoint.hosts()) load.put(h, new AtomicInteger());
        if (settings.adaptive() && settings.minConcurrency() < settings.maxConcurrency()) {
            long ms = settings.optimizerInterval().toMillis();
            timer.scheduleAtFixedRate(this::optimize, ms, ms, TimeUnit.MILLISECONDS);
        }
    }

    int concurrency() {
        return target.get();
    }

    void enqueue(Collection<Job.Piece> pieces) {
        queue.addAll(pieces);
        ensureWorkers();
    }

    private void requeueLater(Job.Piece p, int attempt) {
        long delay = Math.min(60_000, settings.backoff().toMillis() << Math.min(10, Math.max(0, attempt - 1)));
        try {
            timer.schedule(() -> {
                if (!p.job.finished() && !closed) {
                    queue.addFirst(p);
                    ensureWorkers();
                }
            }, delay, TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            // the mover was closed meanwhile (its timer with it)
            p.job.fail(new TransferFailure(Kind.CANCELLED, "mover closed", p.attempts, null));
        }
    }

    private synchronized void ensureWorkers() {
        while (!closed && workers.get() < target.get()) {
            workers.incrementAndGet();
            Thread.ofVirtual().name("mover-" + key).start(new Worker());
        }
    }

    /** A worker above the target retires (the optimizer lowered concurrency). */
    private boolean retire() {
        while (true) {
            int w = workers.get();
            if (w <= target.get()) return false;
            if (workers.compareAndSet(w, w - 1)) return true;
        }
    }

    /** Takes the next pieces for one connection: at least one, topped up until the size threshold (BDM). */
    private List<Job.Piece> claim() throws InterruptedException {
        List<Job.Piece> mine = new ArrayList<>();
        Job.Piece first = queue.pollFirst(200, TimeUnit.MILLISECONDS);
        if (first == null) return mine;
        mine.add(first);
        long bytes = first.length;
        // never more than a fair share of what waits, so every connection (and host) gets work
        int fairShare = Math.max(1, (queue.size() + 1) / Math.max(1, target.get()));
        while (bytes < settings.topUpBytes() && mine.size() < fairShare) {
            Job.Piece next = queue.peekFirst();
            if (next == null || bytes + next.length > settings.topUpBytes() && next.length > settings.topUpBytes() / 4) break;
            next = queue.pollFirst();
            if (next == null) break;
            mine.add(next);
            bytes += next.length;
        }
        return mine;
    }

    private Endpoint.HostPort pickHost() {
        long now = System.nanoTime();
        List<Endpoint.HostPort> up = endpoint.hosts().stream().filter(h -> downUntil.getOrDefault(h, 0L) <= now).toList();
        Collection<Endpoint.HostPort> candidates = up.isEmpty() ? endpoint.hosts() : up;
        Endpoint.HostPort best = candidates.stream()
                .min(Comparator.comparingInt((Endpoint.HostPort h) -> load.get(h).get())
                        .thenComparingLong(h -> downUntil.getOrDefault(h, 0L)))
                .orElseThrow();
        load.get(best).incrementAndGet();
        return best;
    }

    /** {@code host} is out of rotation, and another of the link's hosts is in it (to go to instead). */
    private boolean outOfRotation(Endpoint.HostPort host) {
        long now = System.nanoTime();
        return downUntil.getOrDefault(host, 0L) > now
                && endpoint.hosts().stream().anyMatch(h -> downUntil.getOrDefault(h, 0L) <= now);
    }

    private void quarantine(Endpoint.HostPort host) {
        if (host == null || endpoint.hosts().size() < 2) return;
        downUntil.put(host, System.nanoTime() + settings.hostQuarantine().toNanos());
        log.warn("GridFTP host {} of {} out of rotation for {}", host, key, settings.hostQuarantine());
    }

    LinkStatus status() {
        long now = System.nanoTime();
        List<String> out = downUntil.entrySet().stream().filter(e -> e.getValue() > now).map(e -> e.getKey().toString()).toList();
        return new LinkStatus(key, target.get(), queue.size(), active.get(), Math.max(0, emaMbPerSecond), successRate, out);
    }

    /**
     * FTS3-like rules, once per interval: a success rate below 90 % lowers concurrency by 2, below 99 % by 1;
     * otherwise, while files wait, one more transfer if throughput held or rose, one fewer if it fell.
     */
    void optimize() {
        optimize(!queue.isEmpty());
    }

    /** {@code waiting}: files wait in the link's queue (more concurrency could help). */
    void optimize(boolean waiting) {
        double seconds = settings.optimizerInterval().toNanos() / 1e9;
        double mbps = windowBytes.getAndSet(0) / 1e6 / seconds;
        int ok = windowOk.getAndSet(0);
        int failed = windowFailed.getAndSet(0);
        if (ok + failed == 0 && !waiting) return;
        double rate = ok + failed == 0 ? 1 : ok / (double) (ok + failed);
        successRate = rate;
        double previous = emaMbPerSecond;
        emaMbPerSecond = previous < 0 ? mbps : 0.3 * mbps + 0.7 * previous;
        int t = target.get();
        int next = t;
        if (rate < 0.9) next = t - 2;
        else if (rate < 0.99) next = t - 1;
        else if (waiting) next = previous < 0 || emaMbPerSecond >= previous * 0.95 ? t + 1 : t - 1;
        next = Math.max(settings.minConcurrency(), Math.min(settings.maxConcurrency(), next));
        if (next != t) {
            target.set(next);
            log.debug("link {}: concurrency {} -> {} ({} MB/s, success {})", key, t, next, emaMbPerSecond, rate);
            ensureWorkers();
        }
    }

    /** Counts a finished attempt (and its bytes) in the optimizer's window. */
    void record(long bytes, boolean ok) {
        windowBytes.addAndGet(bytes);
        (ok ? windowOk : windowFailed).incrementAndGet();
    }

    void close() {
        closed = true;
        idleCheckers.values().forEach(q -> q.forEach(GridFtpSession::close));
        for (Job.Piece p; (p = queue.poll()) != null; ) {
            p.job.fail(new TransferFailure(Kind.CANCELLED, "mover closed", p.attempts, null));
        }
    }

    /** One connection's loop: claim pieces, send them back to back over the same control and data channels. */
    private final class Worker implements Runnable {
        private GridFtpSession session;
        private final Map<String, GridFtpSession> sources = new HashMap<>();

        @Override
        public void run() {
            boolean retired = false;
            try {
                while (!closed) {
                    if (retire()) {
                        retired = true;
                        return;
                    }
                    List<Job.Piece> mine = claim();
                    for (int i = 0; i < mine.size(); i++) {
                        if (!send(mine.get(i))) {
                            // the connection is gone: give the rest of this connection's queue back
                            List<Job.Piece> rest = mine.subList(i + 1, mine.size());
                            for (int j = rest.size() - 1; j >= 0; j--) queue.addFirst(rest.get(j));
                            break;
                        }
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                dropSession();
                sources.values().forEach(GridFtpSession::close);
                if (!retired) workers.decrementAndGet();
            }
        }

        private void dropSession() {
            if (session != null) {
                session.close();
                load.get(session.host).decrementAndGet();
                session = null;
            }
        }

        private GridFtpSession session(Watchdog.Attempt a) throws Exception {
            // a host taken out of rotation while this worker was connected to it (checkLater's CKSM after a put
            // failed there) is left too: before, the worker kept it and sent the file's resend to it again
            if (session != null && (session.isClosed() || outOfRotation(session.host))) dropSession();
            if (session == null) {
                Endpoint.HostPort host = pickHost();
                try {
                    session = GridFtpSession.open(host, endpoint.gsi(), endpoint.gsi() ? credentials.get() : null, settings, jglobusPuts);
                } catch (Exception e) {
                    load.get(host).decrementAndGet();
                    throw new HostException(host, e);
                }
            }
            a.add(session);
            return session;
        }

        /**
         * This worker's session with the source's servers: its own host of the list first (workers spread over
         * them), the next ones in turn when it cannot be reached. Before, a worker whose host was down failed
         * every attempt it made though the source's other hosts were up, and the failure was put on the
         * destination host (taken out of rotation, and named in the error).
         */
        private GridFtpSession sourceSession(Endpoint src, Watchdog.Attempt a) throws Exception {
            GridFtpSession s = sources.get(src.link());
            if (s == null || s.isClosed()) {
                s = null;
                List<Endpoint.HostPort> hosts = src.hosts();
                int first = Math.floorMod(System.identityHashCode(this), hosts.size());
                SourceException unreachable = null;
                for (int i = 0; i < hosts.size() && s == null; i++) {
                    Endpoint.HostPort host = hosts.get((first + i) % hosts.size());
                    try {
                        s = GridFtpSession.open(host, src.gsi(), src.gsi() ? credentials.get() : null, settings, jglobusPuts);
                    } catch (Exception e) {
                        Kind kind = Failures.classify(e);
                        if (kind != Kind.CONNECTION && kind != Kind.TIMEOUT) throw new SourceException(host, null, e);
                        if (unreachable == null) unreachable = new SourceException(host, null, e);
                    }
                }
                if (s == null) throw unreachable;
                sources.put(src.link(), s);
            }
            a.add(s);
            return s;
        }

        /**
         * Sends one piece; false when the attempt failed and its connection was closed (a local source found
         * bad before any connection was used fails the piece but leaves the worker's connection as it was).
         */
        private boolean send(Job.Piece p) {
            Job job = p.job;
            if (job.finished()) return true;
            p.attempts++;
            Watchdog.Attempt a = watchdog.watch();
            job.running.add(a);
            active.incrementAndGet();
            Endpoint.HostPort host = null;
            GridFtpSession from = null; // a third-party copy's source
            boolean verifying = false;
            boolean connected = false; // a connection was taken for the attempt
            try {
                // before the destination is connected to: a bad local source costs no login there (before, it
                // was found after the session was opened, and that session closed for the source's failure)
                if (job.local != null) checkLocalSource(job, a);
                connected = true;
                GridFtpSession s = session(a);
                host = s.host;
                String path = job.destination.path();
                // before the first write: a file there that is not this transfer's own is looked at, and the
                // transfer is recorded as writing there (the other pieces of a split file wait for this)
                if (!job.mayWrite(() -> look(job, s, a))) return true;
                long sent;
                if (job.source == null) {
                    // a whole file is verified by the server itself (SCKS before STOR) against the catalog's
                    // Adler32 or one read here first; byte ranges are summed while sent and checked by CKSM
                    // (only where the server offers ADLER32 (FEAT, read once per connection): GCT takes an SCKS of an
                    // algorithm it lacks and never answers the STOR; there the CKSM after the put fails the file as
                    // UNSUPPORTED, sent once)
                    boolean serverVerifies = settings.verifyChecksum() && scks && job.pieces.size() == 1
                            && p.length <= settings.serverVerifyMaxBytes() && s.offersAdler32();
                    boolean streamSum = settings.verifyChecksum() && !serverVerifies;
                    java.util.function.LongConsumer counted = n -> {
                        a.progress();
                        job.bytes.addAndGet(n);
                        windowBytes.addAndGet(n);
                        listener.bytes(job.copy, n);
                    };
                    // a retried range resumes after what the server's restart markers said it had written
                    // (a whole file verified by SCKS is small and goes again in full, its old markers forgotten)
                    if (serverVerifies) p.forget();
                    long skip = serverVerifies ? 0 : p.resumeAt(s.host, settings.verifyChecksum());
                    if (skip > 0) {
                        log.info("resuming {} at byte {} of [{}, +{}) from the server's restart markers",
                                job.copy.destination(), skip, p.offset, p.length);
                    }
                    boolean whole = job.pieces.size() == 1 && skip == 0; // STOR truncates; a range is ESTO
                    if (job.pieces.size() > 1) job.clearDestination(s); // so the ranges need not truncate
                    Endpoint.HostPort writer = s.host;
                    p.adler32 = null;
                    p.serverVerified = false;
                    if (s.direct()) {
                        var file = LocalReadException.open(opener, job.local);
                        try {
                            Long expected = null;
                            boolean sumHere = false;
                            if (serverVerifies) {
                                expected = job.copy.adler32();
                                if (expected == null) expected = adler32(file, 0, p.length, a);
                            } else if (streamSum && job.copy.adler32() == null) {
                                sumHere = true; // summed while sent
                            }
                            // with the catalog's sum known a range is not read here: the server's range sums
                            // are combined and compared with it (checkLater)
                            long rest = s.directPut(path, file, p.offset + skip, p.length - skip, whole, expected, sumHere,
                                    counted, m -> p.written(m, skip, writer), a.localReads);
                            if (sumHere) p.adler32 = skip == 0 ? rest : combine(adler32(file, p.offset, skip, a), rest, p.length - skip);
                            if (serverVerifies) {
                                p.serverVerified = true;
                                p.adler32 = expected;
                            }
                        } finally {
                            a.localReads.close(file); // not waiting for a read that hangs
                        }
                    } else try (RangeSource src = new RangeSource(opener, job.local, p.offset + skip, p.length - skip, streamSum, counted, a.localReads)) {
                        if (serverVerifies) {
                            Long expected = job.copy.adler32();
                            if (p.length <= RangeSource.PRELOAD_MAX) {
                                long read = src.preload();
                                if (expected == null) expected = read;
                                else if (read != expected) throw new TransferFailure(Kind.SOURCE_CHECKSUM_MISMATCH, String.format(
                                        "local source %s read as ADLER32 %08x, catalog says %08x", job.local, read, expected), p.attempts, null);
                            } else if (expected == null) {
                                expected = adler32(job.local, a);
                            }
                            MarkerProgress markers = new MarkerProgress();
                            long sum = expected;
                            reading(src, () -> s.verifiedPut(path, src, marker -> {
                                if (markers.advanced(marker)) a.progress();
                            }, sum));
                            p.serverVerified = true;
                            p.adler32 = expected;
                        } else {
                            MarkerProgress markers = new MarkerProgress();
                            reading(src, () -> s.put(path, p.offset + skip, whole, src, marker -> {
                                if (markers.advanced(marker)) a.progress();
                                if (marker instanceof org.globus.ftp.GridFTPRestartMarker m) p.written(m, skip, writer);
                            }));
                            if (streamSum) {
                                Long rest = src.adler32();
                                if (rest != null && skip > 0) {
                                    var file = LocalReadException.open(opener, job.local);
                                    try {
                                        rest = combine(adler32(file, p.offset, skip, a), rest, p.length - skip);
                                    } finally {
                                        a.localReads.close(file); // not waiting for a read that hangs
                                    }
                                }
                                p.adler32 = rest;
                            }
                        }
                        src.recycle();
                    }
                    sent = p.length;
                } else {
                    from = sourceSession(job.source, a);
                    long size;
                    try {
                        size = job.copy.sizeBytes() > 0 ? job.copy.sizeBytes() : from.size(job.source.path());
                    } catch (Exception e) {
                        throw new SourceException(from.host, job.source.path(), e); // its SIZE: the source's
                    }
                    a.progress();
                    // a retry resumes after what the destination's restart markers said it had written
                    long skip = p.resumeAt(s.host, settings.verifyChecksum(), size);
                    if (skip > 0) {
                        log.info("resuming third-party copy {} at byte {} of {} from the destination's restart markers",
                                job.copy.destination(), skip, size);
                    }
                    Endpoint.HostPort writer = s.host;
                    MarkerProgress markers = new MarkerProgress();
                    from.transferTo(job.source.path(), s, path, skip, size, marker -> {
                        if (markers.advanced(marker)) a.progress();
                        if (marker instanceof org.globus.ftp.GridFTPRestartMarker m) p.written(m, skip, writer);
                    });
                    sent = size - skip; // what crossed in this attempt
                    job.bytes.addAndGet(sent);
                    windowBytes.addAndGet(sent);
                    listener.bytes(job.copy, sent);
                }
                a.progress();
                if (a.aborted) throw new TransferFailure(a.stalled ? Kind.STALL : Kind.CANCELLED, "aborted", p.attempts, null);
                boolean later = false;
                if (job.remaining.decrementAndGet() == 0) {
                    verifying = true;
                    later = verify(job, s, a);
                }
                // a destination check left to checkLater counts the attempt there, when it is done (as one failed
                // inline is counted here as a failure, not a success)
                if (!later) windowOk.incrementAndGet();
                return true;
            } catch (Throwable e) {
                if (e instanceof StagehandClient.ScksRefused) {
                    scks = false;
                    log.warn("GridFTP {} refuses SCKS: files are verified with CKSM after the put", key);
                }
                if (connected) {
                    dropSession();
                    sources.values().forEach(GridFtpSession::close);
                    sources.clear();
                }
                if (e instanceof HostException he) host = he.host;
                Throwable failure = e;
                // a third-party copy that failed at its source (a command to it refused or unanswered, its
                // connection dropped): the source's, named with its path; the destination host stays in rotation
                if (from != null && host != null && !verifying && !(e instanceof SourceException)
                        && !(a.stalled && from.destinationWaitedSince(a.lastProgress)) && from.copyFailedHere(a.stalled)) {
                    String dataEnd = from.destinationSawDataEnd();
                    Throwable why = e;
                    if (dataEnd != null && !from.copyFailedFirstHere()) {
                        // the source's data connection closed before the file's end: a connection failure of the
                        // source, whatever the destination's reply code says
                        why = new java.io.EOFException("the source's data connection ended before the file's end (destination: "
                                + dataEnd.strip() + ")");
                        why.addSuppressed(e);
                    }
                    failure = new SourceException(from.host, job.source.path(), why);
                }
                // the source's host could not be reached: not the destination host's fault
                String at = failure instanceof SourceException se ? "source " + se.host + (se.path != null ? " " + se.path : "")
                        : String.valueOf(host);
                if (failure instanceof SourceException) host = null;
                Throwable cause = failure instanceof HostException || failure instanceof SourceException ? failure.getCause() : failure;
                LocalReadException local = job.local != null ? Failures.localRead(e) : null;
                if (local == null && job.local != null && a.stalled && a.localReadBlockedNanos > 0) {
                    // stalled waiting on a read of the local file (a hung NFS mount): the source's stall, not the
                    // destination host's (before, it was taken out of rotation and named)
                    local = hung(a, e);
                }
                TransferFailure f;
                if (local != null) {
                    // the local file could not be read for the put (cut short while sent, a disk error): the source's,
                    // named as such (a recall reads it from tape again), not the destination host's. Before, it was
                    // a retried PROTOCOL failure on the destination host.
                    f = unreadable(job, local, p.attempts);
                } else if (cause instanceof TransferFailure tf) f = tf;
                else if (cause instanceof ChecksumMismatch) f = new TransferFailure(Kind.CHECKSUM_MISMATCH, cause.getMessage(), p.attempts, cause);
                else if (a.stalled && from != null && host != null && from.destinationWaitedSince(a.lastProgress)) {
                    // the destination kept reporting, nothing new arriving: the source stopped sending. Not the
                    // destination host's fault: it stays in rotation (it used to be taken out, and named)
                    f = new TransferFailure(Kind.STALL, "no progress for " + settings.stallTimeout() + " from source "
                            + from.host + " (destination " + host + " was up, waiting for data)", p.attempts, cause);
                    host = null;
                } else if (a.stalled) f = new TransferFailure(Kind.STALL, "no progress for " + settings.stallTimeout()
                        + " on " + (job.source != null && !(failure instanceof SourceException) ? "destination " : "") + at, p.attempts, cause);
                else if (job.cancelled) f = new TransferFailure(Kind.CANCELLED, "cancelled", p.attempts, cause);
                else f = new TransferFailure(Failures.classify(cause), Failures.message(cause) + " (" + at + ")", p.attempts, cause);
                f = sourceChecked(job, f, a);
                blame(f, host);
                failed(p, f, verifying);
                return !connected;
            } finally {
                active.decrementAndGet();
                job.running.remove(a);
                watchdog.unwatch(a);
            }
        }

        /**
         * A jglobus put of {@code src}: when reading the local file failed, that is the put's failure. jglobus
         * passes a data source's exception on only as a reply of its own (text), so the put fails as the
         * destination's; the source kept the exception.
         */
        private static void reading(RangeSource src, Put put) throws Exception {
            try {
                put.run();
            } catch (Exception e) {
                LocalReadException local = src.failure();
                if (local == null) throw e;
                local.addSuppressed(e);
                throw local;
            }
            // returned with the source not read to its end (the watchdog's abort, a read of the file hanging):
            // no success; before, the attempt went on to the source's sum and waited behind the hung read
            if (!src.finished()) throw new java.io.IOException("the put ended before its local file was read to its end");
        }

        private interface Put {
            void run() throws Exception;
        }

        /**
         * The local source as the copy expects it, a readable regular file of its size, checked before the attempt
         * touches the destination. Before, a source gone, cut short or unreadable since the batch was submitted
         * showed only when the put opened it: after the destination had been looked at and taken as the
         * transfer's (its writing hook run, so the file there was deleted as the failed transfer's partial one;
         * a split file's was deleted at once), and the failure was put on the destination host. Its failure is a
         * failed read of the local file, as one while the file is sent (it used to lower the link's success rate).
         * Looked at apart from the attempt's thread, as a read: an open or stat that hangs (a hung NFS mount) is
         * left behind at the watchdog's abort, the source's stall (before, the attempt stayed in it for ever).
         */
        private void checkLocalSource(Job job, Watchdog.Attempt a) throws java.io.IOException {
            java.nio.file.Path local = job.local;
            long size;
            try {
                size = a.localReads.apart(() -> {
                    try (var ch = LocalReadException.open(opener, local)) { // opened as the put opens it
                        if (!java.nio.file.Files.isRegularFile(local)) throw new LocalReadException("not a regular file", null);
                        return ch.size();
                    }
                });
            } catch (java.io.IOException e) {
                throw LocalReadException.of(e); // the watchdog's abort (closed by interrupt) passed on as it is
            }
            if (size != job.copy.sizeBytes()) {
                throw new LocalReadException("it is " + size + " bytes, expected " + job.copy.sizeBytes(), null);
            }
        }

        /**
         * What is at the destination before the job's first write, for a copy that asks to look
         * ({@link dev.stagehand.transfer.FileCopy.Existing}): null when nothing is there, or what is there may be
         * written over; otherwise how the job ends instead. The same file (size and ADLER32: the catalog's, else
         * the source's) is done without sending it; another one fails it with {@link Kind#DESTINATION_EXISTS}
         * unless the copy replaces it. Before, every transfer wrote over whatever was there (and a split one
         * deleted it before its first range), though the transfer had never written there.
         */
        private Runnable look(Job job, GridFtpSession s, Watchdog.Attempt a) throws Exception {
            String path = job.destination.path();
            long there;
            try {
                there = s.size(path);
            } catch (Exception e) {
                if (Failures.classify(e) == Kind.NO_SUCH_PATH) return null; // nothing there yet
                throw e;
            }
            a.progress();
            long size = job.source == null || job.copy.sizeBytes() > 0 ? job.copy.sizeBytes()
                    : sourceSession(job.source, a).size(job.source.path());
            String other = null;
            long sum = -1;
            if (there != size) {
                other = there + " bytes, not " + size;
            } else {
                long limit = checksumNanos(size);
                try {
                    Long expected = job.copy.adler32();
                    if (expected == null) {
                        expected = job.source == null ? a.quietly(limit, () -> adler32(job.local, a))
                                : a.quietly(limit, () -> sourceSession(job.source, a).adler32("source", job.source.path()));
                    }
                    long actual = a.quietly(limit, () -> s.adler32("destination", path));
                    if (actual == expected) sum = actual;
                    else other = String.format("%d bytes with ADLER32 %08x, not %08x", there, actual, expected);
                } catch (TransferFailure f) {
                    if (f.kind() != Kind.UNSUPPORTED) throw f;
                    other = there + " bytes, its ADLER32 unknown (" + f.getMessage() + ")";
                }
            }
            if (other == null) {
                long same = sum;
                log.info("{} is at its destination already ({} bytes, ADLER32 {}): not sent", job.copy.destination(),
                        there, String.format("%08x", same));
                return () -> job.alreadyThere(s.host.toString(), there, same);
            }
            if (job.copy.existing() == dev.stagehand.transfer.FileCopy.Existing.REPLACE) {
                log.info("{}: another file is there ({}): overwritten", job.copy.destination(), other);
                return null;
            }
            TransferFailure f = new TransferFailure(Kind.DESTINATION_EXISTS, job.copy.destination()
                    + ": destination file exists and overwrite is not enabled (" + other + "); left as it is", 1, null);
            return () -> {
                job.running.remove(a); // this attempt's connection stays: nothing is wrong with it
                job.fail(f);
            };
        }

        /** The written file checked; true when that is left to {@link #checkLater} (which counts the attempt). */
        private boolean verify(Job job, GridFtpSession s, Watchdog.Attempt a) throws Exception {
            listener.written(job.copy, s.host.toString(), 1 + job.retries.get());
            if (!settings.verifyChecksum()) {
                job.complete(s.host.toString(), -1);
                return false;
            }
            if (job.source == null) {
                Job.Piece only = job.pieces.getFirst();
                if (job.pieces.size() == 1 && only.serverVerified) {
                    job.complete(s.host.toString(), only.adler32);
                    return false;
                }
                checkLater(job, s.host, localRanges(job));
                return true;
            }
            Long expected = job.copy.adler32();
            long limit = checksumNanos(job.copy.sizeBytes());
            if (expected == null) {
                GridFtpSession from = sources.get(job.source.link());
                try {
                    expected = a.quietly(limit, () -> from.adler32("source", job.source.path()));
                } catch (Exception e) {
                    // the source's trouble (a CKSM it never answers, a dropped connection): not the destination host's
                    throw new SourceException(from.host, null, e);
                }
            }
            long actual = a.quietly(limit, () -> s.adler32("destination", job.destination.path()));
            compare(job, actual, expected);
            job.complete(s.host.toString(), actual);
            return false;
        }
    }

    /** The slowest a server is assumed to sum a file (a busy disk): CKSM answers only when it is done. */
    static final long MIN_CHECKSUM_BYTES_PER_SECOND = 10L << 20;

    /** How long a CKSM of {@code bytes} may take before it counts as stalled. */
    private long checksumNanos(long bytes) {
        return (long) (Math.max(0, bytes) * 1e9 / MIN_CHECKSUM_BYTES_PER_SECOND) + settings.stallTimeout().toNanos();
    }

    private static void compare(Job job, long actual, long expected) throws ChecksumMismatch {
        if (actual != expected) {
            throw new ChecksumMismatch(String.format("destination %s has ADLER32 %08x, expected %08x",
                    job.destination.path(), actual, expected));
        }
    }

    private final Map<Endpoint.HostPort, java.util.concurrent.ConcurrentLinkedQueue<GridFtpSession>> idleCheckers =
            new ConcurrentHashMap<>();
    private final java.util.concurrent.Semaphore checkSlots = new java.util.concurrent.Semaphore(4);

    /** A byte range of a written file and the Adler32 it must have (length -1: to the end). */
    private record Range(long offset, long length, long adler32) {}

    /** A range whose expected sum is not known on its own (Adler32 values are 32-bit unsigned). */
    private static final long UNKNOWN = -1;

    /**
     * What the server must report for a local file: one range for a whole file; for a file sent as byte
     * ranges, each range on its own (so several server processes sum it at once), after the ranges' sums,
     * combined, were checked against the catalog's.
     */
    private static List<Range> localRanges(Job job) {
        List<Job.Piece> pieces = job.pieces;
        if (pieces.stream().anyMatch(p -> p.adler32 == null)) {
            // not read here (the catalog's sum is known): each range's sum comes from the server (UNKNOWN)
            if (pieces.size() == 1) return List.of(new Range(0, -1, UNKNOWN));
            return pieces.stream().map(p -> new Range(p.offset, p.length, UNKNOWN)).toList();
        }
        long combined = 1;
        for (Job.Piece p : pieces) combined = combine(combined, p.adler32, p.length);
        Long expected = job.copy.adler32();
        if (expected != null && expected != combined) {
            throw new TransferFailure(Kind.SOURCE_CHECKSUM_MISMATCH, String.format("local source %s read as ADLER32 %08x, catalog says %08x",
                    job.local, combined, expected), 0, null);
        }
        if (pieces.size() == 1) return List.of(new Range(0, -1, combined));
        return pieces.stream().map(p -> new Range(p.offset, p.length, p.adler32)).toList();
    }

    /** zlib's adler32_combine: the Adler32 of A followed by B from the sums of A and B and B's length. */
    static long combine(long adlerA, long adlerB, long lengthB) {
        final long base = 65521;
        long rem = lengthB % base;
        long sum1 = adlerA & 0xffff;
        long sum2 = (rem * sum1) % base;
        sum1 += (adlerB & 0xffff) + base - 1;
        sum2 += ((adlerA >>> 16) & 0xffff) + ((adlerB >>> 16) & 0xffff) + base - rem;
        if (sum1 >= base) sum1 -= base;
        if (sum1 >= base) sum1 -= base;
        if (sum2 >= (base << 1)) sum2 -= (base << 1);
        if (sum2 >= base) sum2 -= base;
        return (sum2 << 16) | sum1;
    }

    /**
     * Asks {@code host} (the one that wrote the file) for the CKSM ADLER32 of each range, on pooled checker
     * connections, so the sending connection streams the next file meanwhile.
     */
    private void checkLater(Job job, Endpoint.HostPort host, List<Range> ranges) {
        boolean fromServer = ranges.getFirst().adler32() == UNKNOWN;
        long whole = fromServer ? job.copy.adler32() : ranges.size() == 1 ? ranges.getFirst().adler32()
                : job.pieces.stream().reduce(1L, (acc, p) -> combine(acc, p.adler32, p.length), (x, y) -> x);
        long[] actuals = new long[ranges.size()];
        AtomicInteger left = new AtomicInteger(ranges.size());
        java.util.concurrent.atomic.AtomicBoolean failedOnce = new java.util.concurrent.atomic.AtomicBoolean();
        for (int i = 0; i < ranges.size(); i++) {
            Range range = ranges.get(i);
            int index = i;
            long limit = checksumNanos(range.length() >= 0 ? range.length() : job.copy.sizeBytes());
            Thread.ofVirtual().name("cksm-" + key).start(() -> {
                var idle = idleCheckers.computeIfAbsent(host, h -> new java.util.concurrent.ConcurrentLinkedQueue<>());
                Watchdog.Attempt a = null;
                GridFtpSession s = null;
                boolean slot = false;
                try {
                    checkSlots.acquire();
                    slot = true;
                    // watched from here: waiting for a check slot is not a stall
                    a = watchdog.watch();
                    job.running.add(a);
                    s = idle.poll();
                    if (s == null || s.isClosed()) {
                        s = GridFtpSession.open(host, endpoint.gsi(), endpoint.gsi() ? credentials.get() : null, settings, jglobusPuts);
                    }
                    a.add(s);
                    GridFtpSession checker = s;
                    long actual = a.quietly(limit, () -> checker.adler32("destination", job.destination.path(), range.offset(), range.length()));
                    actuals[index] = actual;
                    if (range.adler32() != UNKNOWN && actual != range.adler32()) {
                        throw new ChecksumMismatch(String.format("destination %s has ADLER32 %08x at [%d, +%d), expected %08x",
                                job.destination.path(), actual, range.offset(), range.length(), range.adler32()));
                    }
                    if (closed) s.close();
                    else idle.add(s);
                    s = null;
                    if (left.decrementAndGet() == 0 && !failedOnce.get()) {
                        if (fromServer) {
                            long combined = actuals[0];
                            for (int k = 1; k < actuals.length; k++) combined = combine(combined, actuals[k], ranges.get(k).length());
                            if (combined != whole) {
                                throw new ChecksumMismatch(String.format("destination %s has ADLER32 %08x (its ranges' sums combined), expected %08x",
                                        job.destination.path(), combined, whole));
                            }
                        }
                        windowOk.incrementAndGet(); // the attempt that wrote the file (send left it to this check)
                        job.complete(host.toString(), whole);
                    }
                } catch (Throwable e) {
                    if (s != null) s.close();
                    if (failedOnce.compareAndSet(false, true)) {
                        TransferFailure f = e instanceof ChecksumMismatch
                                ? new TransferFailure(Kind.CHECKSUM_MISMATCH, e.getMessage(), 0, e)
                                : e instanceof TransferFailure tf ? tf // the destination has no ADLER32: said as it is
                                : a != null && a.stalled ? new TransferFailure(Kind.STALL, "no CKSM reply in "
                                        + java.time.Duration.ofNanos(limit).toSeconds() + " s from " + host, 0, e)
                                : job.cancelled ? new TransferFailure(Kind.CANCELLED, "cancelled", 0, e) // its connection closed by it
                                : new TransferFailure(Failures.classify(e), "checksum: " + Failures.message(e) + " (" + host + ")", 0, e);
                        f = sourceChecked(job, f, a);
                        // counted as the same failure found inline is: before, a CKSM stall, a dropped connection or a
                        // mismatch found here neither took the host out of rotation nor lowered the link's success rate
                        blame(f, host);
                        failed(job.pieces.getFirst(), f, true);
                    }
                } finally {
                    if (slot) checkSlots.release();
                    if (a != null) {
                        job.running.remove(a);
                        watchdog.unwatch(a);
                    }
                }
            });
        }
    }

    /** {@code wholeFile}: the failure came after every piece was written (verification), so all are sent again. */
    private void failed(Job.Piece p, TransferFailure f, boolean wholeFile) {
        Job job = p.job;
        if (job.finished()) return;
        // after every piece was written the attempt is the file's whole send: its pieces' retries counted here
        // gave a split file with a few range retries up at its first mismatch, never resending it
        int attempt = wholeFile ? job.wholeSends.get() : p.attempts;
        if (f.retryable() && attempt < settings.maxAttempts() && !job.cancelled) {
            job.retries.incrementAndGet();
            if (wholeFile) job.wholeSends.incrementAndGet();
            listener.retrying(job.copy, f);
            log.info("retrying {} (attempt {} failed: {})", job.copy.destination(), attempt, f.getMessage());
            if (wholeFile) {
                job.bytes.set(0);
                job.pieces.forEach(Job.Piece::forget); // written again from byte 0: nothing to resume from
                job.remaining.set(job.pieces.size());
                for (Job.Piece piece : job.pieces) requeueLater(piece, attempt);
            } else {
                requeueLater(p, attempt);
            }
        } else {
            job.fail(new TransferFailure(f.kind(), job.copy.destination() + ": " + f.getMessage().replaceFirst("^\\w+: ", ""),
                    wholeFile ? 1 + job.retries.get() : attempt, f.getCause()));
        }
    }

    /**
     * A local file sent against the catalog's Adler32 failed its check: the destination's fault (or the
     * network's), or the source's own bytes (a cached copy rotted on disk; such a file is not read while it
     * is sent). The source is read once to tell: every further attempt would send the same bad bytes, so a
     * source that does not match fails at once, for its owner to read it anew. Other failures are returned as
     * they are. Asked before the failure is counted ({@link #blame}): the source's mismatch is not the link's.
     * Read in {@code a} (the failed attempt, still watched), apart from its thread: a read that hangs (a hung NFS
     * mount) is left behind at the watchdog's abort, the source's stall as one during the put is (before, the
     * attempt, or the check after the put, stayed in it for ever).
     */
    private TransferFailure sourceChecked(Job job, TransferFailure f, Watchdog.Attempt a) {
        if (f.kind() != Kind.CHECKSUM_MISMATCH || job.local == null || job.copy.adler32() == null || a == null) return f;
        long expected = job.copy.adler32();
        long read;
        try {
            a.progress(); // the stall limit counts from this read on
            read = adler32(job.local, a);
        } catch (LocalReadException e) {
            return unreadable(job, e, f.attempts());
        } catch (java.io.IOException e) {
            // the attempt was aborted while the file was read: by the watchdog, the read blocked (the source's
            // stall); else (cancelled) the mismatch as it was
            return a.localReadBlockedNanos > 0 ? unreadable(job, hung(a, e), f.attempts()) : f;
        }
        if (read == expected) return f;
        return new TransferFailure(Kind.SOURCE_CHECKSUM_MISMATCH, String.format("local source %s reads as ADLER32 %08x, catalog says %08x (%s)",
                job.local, read, expected, f.getMessage().replaceFirst("^\\w+: ", "")), f.attempts(), f.getCause());
    }

    /** Why {@code a} was aborted by the watchdog while a read of its local file was blocked (a hung NFS mount). */
    private LocalReadException hung(Watchdog.Attempt a, Throwable cause) {
        return new LocalReadException("a read of it blocked for " + TimeUnit.NANOSECONDS.toSeconds(a.localReadBlockedNanos)
                + " s (no progress for " + settings.stallTimeout() + ")", cause);
    }

    /** The local file of {@code job} could not be read as expected ({@code e}: why): the source's failure. */
    private static TransferFailure unreadable(Job job, LocalReadException e, int attempts) {
        return new TransferFailure(Kind.BAD_REQUEST, "cannot read local file " + job.local + ": " + e.getMessage(), attempts, e);
    }

    /**
     * Whether {@code f} is the local source's failure (unreadable, not as expected, a read that hung, its bytes
     * off the catalog's sum), not the destination's or the network's.
     */
    private static boolean sourcesFault(TransferFailure f) {
        return f.kind() == Kind.SOURCE_CHECKSUM_MISMATCH || f.kind() == Kind.BAD_REQUEST && Failures.localRead(f) != null;
    }

    /**
     * Counts a failed attempt against the link, in the one place it is done: {@code host} (the destination's,
     * null: none to blame) out of rotation for a connection failure, timeout or stall, and one failure in the
     * optimizer's window (the link's success rate, hence its concurrency). The local source's failures are not
     * counted: the host stays in rotation and the rate is not lowered. Before, a source found bad before its put,
     * or off the catalog's sum, lowered the rate, and a read that hung took the host out of rotation. Nor is an
     * attempt the copy's cancel ended: a bulk cancel lowered the rate and throttled the link.
     */
    private void blame(TransferFailure f, Endpoint.HostPort host) {
        if (sourcesFault(f) || f.kind() == Kind.CANCELLED) return;
        if (f.kind() == Kind.CONNECTION || f.kind() == Kind.STALL || f.kind() == Kind.TIMEOUT) quarantine(host);
        windowFailed.incrementAndGet();
    }

    /** A connection to {@code host} could not be opened. */
    private static final class HostException extends Exception {
        final Endpoint.HostPort host;

        HostException(Endpoint.HostPort host, Exception cause) {
            super(cause);
            this.host = host;
        }
    }

    /**
     * A server-to-server copy failed at its source, {@code host}: no session could be opened there, or the
     * source refused or dropped the copy ({@code path}: the file it was asked for, named in the error; null
     * when not about the file).
     */
    private static final class SourceException extends Exception {
        final Endpoint.HostPort host;
        final String path;

        SourceException(Endpoint.HostPort host, String path, Throwable cause) {
            super(cause);
            this.host = host;
            this.path = path;
        }
    }

    /** The destination's checksum differs: the whole file is sent again. */
    static final class ChecksumMismatch extends Exception {
        ChecksumMismatch(String message) {
            super(message);
        }
    }

    /**
     * The local file's Adler32, read before a put the server is to verify (progress: not a stall); opened apart
     * with the reads (an open hangs in a hung file system as a read does).
     */
    private long adler32(java.nio.file.Path file, Watchdog.Attempt a) throws java.io.IOException {
        return summed(a, buf -> {
            try (var ch = LocalReadException.open(opener, file)) { // closed here, on the thread that read it
                return adler32(ch, 0, ch.size(), buf, a);
            }
        });
    }

    /** Adler32 of {@code length} bytes of {@code ch} from {@code offset}. */
    private static long adler32(java.nio.channels.FileChannel ch, long offset, long length, Watchdog.Attempt a)
            throws java.io.IOException {
        return summed(a, buf -> adler32(ch, offset, length, buf, a));
    }

    private interface Sum {
        long of(java.nio.ByteBuffer buf) throws java.io.IOException;
    }

    /** Runs {@code sum} apart from the attempt's thread, whole (one thread per sum), with the worker's buffer. */
    private static long summed(Watchdog.Attempt a, Sum sum) throws java.io.IOException {
        var buf = SUM_BUFFER.get(); // the worker's, taken here
        try {
            return a.localReads.apart(() -> sum.of(buf));
        } catch (java.io.IOException e) {
            SUM_BUFFER.remove(); // a read left behind (the attempt aborted) may still write into it
            throw LocalReadException.of(e);
        }
    }

    private static long adler32(java.nio.channels.FileChannel ch, long offset, long length, java.nio.ByteBuffer buf,
                                Watchdog.Attempt a) throws java.io.IOException {
        Adler32 sum = new Adler32();
        for (long at = 0; at < length; ) {
            buf.clear();
            buf.limit((int) Math.min(buf.capacity(), length - at));
            int r = a.localReads.read(ch, buf, offset + at);
            if (r < 0) throw LocalReadException.shrank("reading its checksum", offset + at);
            buf.flip();
            sum.update(buf);
            at += r;
            a.progress();
        }
        return sum.getValue();
    }

    // direct (read once, summed in place), one per worker thread: workers live as long as the link
    private static final ThreadLocal<java.nio.ByteBuffer> SUM_BUFFER =
            ThreadLocal.withInitial(() -> java.nio.ByteBuffer.allocateDirect(256 << 10));

    static long adler32(java.nio.file.Path file) throws java.io.IOException {
        Adler32 sum = new Adler32();
        try (var ch = java.nio.channels.FileChannel.open(file)) {
            // heap buffer: a direct one per file hits the direct-memory limit and System.gc() stalls
            var buf = java.nio.ByteBuffer.allocate(1 << 20);
            while (ch.read(buf) > 0) {
                buf.flip();
                sum.update(buf);
                buf.clear();
            }
        }
        return sum.getValue();
    }
}
