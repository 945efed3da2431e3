package dev.stagehand.transfer.gridftp;

import dev.stagehand.transfer.MoverSettings;
import dev.stagehand.transfer.TransferFailure;
import dev.stagehand.transfer.TransferFailure.Kind;
import java.io.IOException;
import java.util.Locale;
import org.globus.ftp.ChecksumAlgorithm;
import org.globus.ftp.DataChannelAuthentication;
import org.globus.ftp.DataSource;
import org.globus.ftp.GridFTPClient;
import org.globus.ftp.GridFTPSession;
import org.globus.ftp.MarkerListener;
import org.globus.ftp.RetrieveOptions;
import org.globus.ftp.Session;
import org.ietf.jgss.GSSCredential;

/**
 * One control connection (and its MODE E data channels) to one host, reused for file after file. Any error
 * makes it unusable: the caller closes it and opens a fresh one (a reused jglobus client can go out of step
 * after an error and return the previous file's data).
 */
final class GridFtpSession implements AutoCloseable {

    final Endpoint.HostPort host;
    private final StagehandClient client;
    private volatile boolean closed;
    private boolean putChannelsReady;
    private final boolean direct;
    private volatile java.nio.channels.SocketChannel[] data; // direct MODE E data channels, kept between files
    private final int streams;
    private final int tcpBuffer;

    private GridFtpSession(Endpoint.HostPort host, StagehandClient client, boolean direct, MoverSettings s) {
        this.host = host;
        this.client = client;
        this.direct = direct;
        this.streams = s.parallelism();
        this.tcpBuffer = s.tcpBufferBytes();
        this.buffers = new java.nio.ByteBuffer[streams];
    }

    /** Puts go over this session's own MODE E data channel (no data channel authentication to speak). */
    boolean direct() {
        return direct;
    }

    /**
     * {@code jglobusPuts} (tests): puts go through jglobus (as they do with GSI and DCAU) though the server is plain
     * FTP.
     */
    static GridFtpSession open(Endpoint.HostPort host, boolean gsi, GSSCredential credential, MoverSettings s,
                               boolean jglobusPuts) throws Exception {
        // Set-up has no watchdog attempt to report progress to, so the control socket itself times out: jglobus
        // takes its connect and read timeout from CoGProperties at open (a server that accepts and says
        // nothing once hung a mover forever); cleared after set-up, when the stall watchdog takes over.
        int setupMillis = (int) Math.min(Integer.MAX_VALUE, Math.max(1, s.stallTimeout().toMillis()));
        // (a process-wide value: movers with different stall timeouts share the last one set)
        org.globus.common.CoGProperties.getDefault().setSocketTimeout(setupMillis);
        StagehandClient c = new StagehandClient(host.host(), host.port());
        try {
            // waitDelay is jglobus's polling period (its local reply queue sleeps that long between looks):
            // the 2 s default costs seconds per small file; 5 ms still cost ~5 ms/file, 1 ms ~2.3 ms/file.
            c.setClientWaitParams(Integer.MAX_VALUE, 1);
            if (gsi) {
                c.authenticate(credential);
            } else {
                c.authorize("anonymous", "stagehand@");
            }
            c.setType(Session.TYPE_IMAGE);
            c.setMode(GridFTPSession.MODE_EBLOCK);
            if (!gsi || s.dataChannelAuth().equals("NONE")) {
                c.setDataChannelAuthentication(DataChannelAuthentication.NONE);
            }
            if (s.tcpBufferBytes() > 0) {
                c.setTCPBufferSize(s.tcpBufferBytes());
                c.setLocalTCPBufferSize(s.tcpBufferBytes());
            }
            c.setOptions(new RetrieveOptions(s.parallelism()));
            // without DCAU the data channels are plain TCP: puts use Stagehand's own MODE E sender (channels and
            // writer threads kept with the session); with DCAU they go through jglobus, which speaks GSI on them
            boolean direct = (!gsi || s.dataChannelAuth().equals("NONE")) && !jglobusPuts;
            c.controlTimeout(0); // a long put may bring no reply for a while: the stall watchdog decides
            return new GridFtpSession(host, c, direct, s);
        } catch (Exception e) {
            closeQuietly(c);
            throw e;
        }
    }

    /**
     * Stores {@code source} at {@code path}: {@code whole}, the whole file (STOR, truncating), else the byte
     * range from {@code offset} (ESTO). MODE E: server passive.
     */
    void put(String path, long offset, boolean whole, DataSource source, MarkerListener markers) throws Exception {
        // MODE E data channels stay up between files: PASV/PORT once per connection, not per file
        if (!putChannelsReady) {
            client.setPassive();
            client.setLocalActive();
            putChannelsReady = true;
        }
        if (whole) {
            client.extendedPut(path, source, markers);
        } else {
            client.extendedPut(path, offset, source, markers);
        }
    }

    private Boolean adler32Offered; // asked once per connection (null: not yet)

    /**
     * Whether the server can verify a put against an Adler32 (SCKS): what its FEAT lists on its CKSM line (GCT:
     * {@code CKSM MD5:10;ADLER32:10;SHA1:10;...}), asked once per connection. GCT takes an SCKS of an algorithm
     * it lacks and then never answers the STOR, so such a server is sent no SCKS. A FEAT without a CKSM line
     * (or refused) says nothing: SCKS is tried, and a server that refuses it is checked with CKSM after the put.
     */
    boolean offersAdler32() throws Exception {
        if (adler32Offered == null) {
            org.globus.ftp.vanilla.Reply feat;
            try {
                feat = client.quote("FEAT");
            } catch (org.globus.ftp.exception.ServerException refused) {
                if (refused.getCode() != org.globus.ftp.exception.ServerException.SERVER_REFUSED) throw refused;
                feat = null; // a reply other than 211: no list to read
            }
            adler32Offered = feat == null || !org.globus.ftp.vanilla.Reply.isPositiveCompletion(feat) || offersAdler32(feat.getMessage());
        }
        return adler32Offered;
    }

    /** Whether a FEAT reply's text lists ADLER32 on its CKSM line, or has no such line. */
    static boolean offersAdler32(String feat) {
        for (String line : feat.split("\\R")) {
            String[] words = line.strip().split("\\s+", 2);
            if (!words[0].equalsIgnoreCase("CKSM")) continue;
            if (words.length < 2) return true; // CKSM without its list
            for (String algorithm : words[1].split("[;,\\s]+")) {
                if (algorithm.split(":")[0].equalsIgnoreCase("ADLER32")) return true;
            }
            return false;
        }
        return true;
    }

    /**
     * Stores the whole file {@code source} at {@code path} (truncating it) and has the server verify its
     * Adler32 against {@code adler32} before it reports success; a mismatch fails the put.
     */
    void verifiedPut(String path, DataSource source, MarkerListener markers, long adler32) throws Exception {
        if (!putChannelsReady) {
            client.setPassive();
            client.setLocalActive();
            putChannelsReady = true;
        }
        client.verifiedPut(path, source, markers, String.format("%08x", adler32));
    }

    // MODE E block header: descriptor, byte count, offset (RFC-less GridFTP v1 extended block mode)
    private static final int EOD = 8, EOF = 64;
    /** Bytes per MODE E block (one header, then its data); blocks are shared out among the streams. */
    static final long BLOCK_BYTES = 4L << 20;
    /** Puts at least this long use every data stream; smaller ones one stream (a thread each costs more). */
    static final long PARALLEL_MIN_BYTES = 4 * BLOCK_BYTES;

    /**
     * Sends {@code length} bytes of {@code file} from {@code start} over this session's own MODE E data
     * channels: one stream for a small put, all of them ({@code parallelism}) for a large one, each taking
     * the next 4 MiB block and sending it (read into a small buffer, then written). {@code whole}: STOR (truncates), else ESTO at
     * {@code start} (a byte range; block offsets are relative to it). {@code scks} non-null (whole files
     * only): SCKS first, so the server verifies the file before its 226. {@code sum}: the bytes are also
     * summed as they pass, and their Adler32 is returned (else -1).
     * {@code ranges} receives the server's restart markers ({@code 111 Range Marker a-b,...}, relative to
     * {@code start}): what it has written, for a resume after a failure. Commands, data and end of data are
     * written before any reply is read: one round trip per file. Each read of {@code file} is recorded in
     * {@code reads} while under way.
     */
    long directPut(String path, java.nio.channels.FileChannel file, long start, long length, boolean whole,
                   Long scks, boolean sum, java.util.function.LongConsumer progress,
                   java.util.function.Consumer<org.globus.ftp.GridFTPRestartMarker> ranges, LocalReads reads) throws Exception {
        // exactly as many channels as the put uses: an idle open channel costs the server CPU on every file
        // (measured: 2,000 x 1 MiB over 4 connections used ~25 % less client + server CPU with one channel each
        // than with two, one idle)
        int n = length >= PARALLEL_MIN_BYTES ? streams : 1;
        java.nio.channels.SocketChannel[] channels = dataChannels(n);
        if (scks != null) client.send("SCKS", "ADLER32 " + String.format("%08x", scks));
        if (whole) {
            client.send("STOR", path); // truncates, unlike ESTO
        } else {
            client.send("ESTO", "A " + start + " " + path);
        }
        // data are written by other threads while this one reads the replies: a server that refuses the put
        // (permission denied, SCKS unknown) never reads them, and its reply must not wait behind a full socket
        MarkerProgress markers = new MarkerProgress();
        long blocks = Math.max(1, (length + BLOCK_BYTES - 1) / BLOCK_BYTES);
        long[] sums = sum ? new long[(int) blocks] : null;
        var next = new java.util.concurrent.atomic.AtomicLong();
        var failure = new java.util.concurrent.atomic.AtomicReference<Throwable>();
        Object progressLock = new Object(); // listeners need not be thread-safe
        java.util.function.LongConsumer counted = n > 1 ? b -> {
            synchronized (progressLock) {
                progress.accept(b);
            }
        } : progress;
        java.util.concurrent.Future<?>[] writers = new java.util.concurrent.Future<?>[n];
        for (int i = 0; i < n; i++) {
            int stream = i;
            int eods = n;
            writers[i] = writerThreads().submit(() -> {
                try {
                    writeBlocks(channels[stream], file, start, length, next, sums, buffer(stream), counted, reads);
                    // every stream ends with EOD; the first also says how many EODs the server is to expect
                    writeHeader(channels[stream], stream == 0 ? EOD | EOF : EOD, 0, stream == 0 ? eods : 0);
                } catch (Throwable t) {
                    failure.compareAndSet(null, t);
                    close(); // the reply read below fails at once
                }
            });
        }
        try {
            if (scks != null) {
                StagehandClient.checkScks(client.reply());
            }
            for (boolean started = false; ; ) {
                org.globus.ftp.vanilla.Reply r = client.reply();
                int code = r.getCode();
                if (code == 226) break;
                if (code == 111 || code == 112) {
                    org.globus.ftp.Marker m = code == 111 ? new org.globus.ftp.GridFTPRestartMarker(r.getMessage())
                            : new org.globus.ftp.PerfMarker(r.getMessage());
                    if (code == 111 && ranges != null) ranges.accept((org.globus.ftp.GridFTPRestartMarker) m);
                    if (markers.advanced(m)) counted.accept(0); // only new bytes are progress
                    continue;
                }
                if (!started && org.globus.ftp.vanilla.Reply.isPositivePreliminary(r)) {
                    started = true;
                    continue;
                }
                throw StagehandClient.refused(r, "Server reported transfer failure");
            }
            for (var w : writers) join(w); // the server had every byte and the ends of data before its 226
        } catch (Throwable t) {
            // the writers' failure explains this one only when it came first (it then closed the session)
            Throwable w = failure.get();
            closeData(); // frees writers blocked on a server that no longer reads
            for (var writer : writers) join(writer);
            if (w != null && w != t) {
                w.addSuppressed(t);
                throw w instanceof Exception e ? e : new java.io.IOException(w);
            }
            throw t;
        }
        Throwable w = failure.get();
        if (w != null) throw w instanceof Exception e ? e : new java.io.IOException(w);
        if (!sum) return -1;
        long combined = 1;
        for (int b = 0; b < sums.length; b++) combined = Link.combine(combined, sums[b], Math.min(BLOCK_BYTES, length - b * BLOCK_BYTES));
        return length == 0 ? 1 : combined;
    }

    private static void join(java.util.concurrent.Future<?> writer) throws InterruptedException {
        try {
            writer.get();
        } catch (java.util.concurrent.ExecutionException e) {
            // the writer's failure is kept in its own place
        }
    }

    // Writers are platform threads, one per stream, kept with the session (not one new thread per file). Not
    // virtual: there a blocking SocketChannel is non-blocking underneath and transferTo returned 0 on a full
    // socket, so a writer spun on the CPU (and counted as progress, hiding stalls from the watchdog).
    private java.util.concurrent.ExecutorService writerPool;

    private synchronized java.util.concurrent.ExecutorService writerThreads() {
        if (writerPool == null) {
            writerPool = java.util.concurrent.Executors.newFixedThreadPool(streams,
                    Thread.ofPlatform().daemon().name("gridftp-data-" + host + "-", 0).factory());
        }
        return writerPool;
    }

    /**
     * The session's MODE E data channels, {@code count} of them: kept from put to put, opened again (PASV, one
     * connection per stream) only when a put needs another number of streams than the last (files are sent
     * biggest first, so a connection changes at most a few times per batch).
     */
    private java.nio.channels.SocketChannel[] dataChannels(int count) throws Exception {
        java.nio.channels.SocketChannel[] chs = data;
        if (chs != null && chs.length == count) return chs;
        closeData(); // between transfers (after the 226): the server drops cached channels at the next PASV
        org.globus.ftp.HostPort hp = client.setPassive();
        chs = new java.nio.channels.SocketChannel[count];
        try {
            for (int i = 0; i < count; i++) {
                chs[i] = java.nio.channels.SocketChannel.open();
                if (tcpBuffer > 0) chs[i].socket().setSendBufferSize(tcpBuffer);
                chs[i].connect(new java.net.InetSocketAddress(hp.getHost(), hp.getPort()));
                chs[i].socket().setTcpNoDelay(true);
            }
        } catch (IOException e) {
            for (var ch : chs) if (ch != null) ch.close();
            throw e;
        }
        data = chs;
        if (closed) closeData();
        return chs;
    }

    // Read buffers, one per stream, kept with the session (which lives as long as its worker). Small enough to
    // stay in the CPU cache between the read, the sum and the socket write. Measured on 1 GiB: read + write
    // cost the client ~0.5 CPU s, FileChannel.transferTo to the socket (sendfile) 2-4 CPU s.
    static final int READ_BYTES = Integer.getInteger("stagehand.gridftp.read-bytes", 256 << 10);
    private final java.nio.ByteBuffer[] buffers;

    private java.nio.ByteBuffer buffer(int stream) {
        if (buffers[stream] == null) buffers[stream] = java.nio.ByteBuffer.allocateDirect(READ_BYTES);
        return buffers[stream];
    }

    private static void writeHeader(java.nio.channels.SocketChannel ch, int descriptor, long count, long offset) throws IOException {
        java.nio.ByteBuffer header = java.nio.ByteBuffer.allocate(17);
        header.put((byte) descriptor).putLong(count).putLong(offset).flip();
        while (header.hasRemaining()) ch.write(header);
    }

    /** Takes blocks from {@code next} until none is left; each is one header and its data. */
    private static void writeBlocks(java.nio.channels.SocketChannel ch, java.nio.channels.FileChannel file, long start,
                                    long length, java.util.concurrent.atomic.AtomicLong next, long[] sums,
                                    java.nio.ByteBuffer block, java.util.function.LongConsumer progress, LocalReads reads)
            throws IOException {
        for (long b; (b = next.getAndIncrement()) * BLOCK_BYTES < length; ) {
            long at = b * BLOCK_BYTES;
            long n = Math.min(length - at, BLOCK_BYTES);
            writeHeader(ch, 0, n, at); // offsets relative to the ESTO offset
            java.util.zip.Adler32 sum = sums != null ? new java.util.zip.Adler32() : null;
            for (long done = 0; done < n; ) {
                block.clear();
                block.limit((int) Math.min(block.capacity(), n - done));
                int r;
                try {
                    r = reads.read(file, block, start + at + done);
                } catch (IOException e) {
                    throw LocalReadException.of(e); // the local file's, not the data channel's
                }
                if (r < 0) throw LocalReadException.shrank("sending", start + at + done);
                block.flip();
                if (sum != null) {
                    sum.update(block);
                    block.rewind();
                }
                while (block.hasRemaining()) ch.write(block);
                done += r;
                progress.accept(r);
            }
            if (sums != null) sums[(int) b] = sum.getValue();
        }
    }

    private void closeData() {
        java.nio.channels.SocketChannel[] chs = data;
        data = null;
        if (chs != null) {
            for (var ch : chs) {
                try {
                    ch.close();
                } catch (IOException ignored) {
                    // closing a broken data channel
                }
            }
        }
    }

    /**
     * Server-to-server copy: this session is the source, {@code destination} receives. From byte 0 it is
     * RETR to STOR (the destination file is truncated: a longer stale file would never verify); a resumed copy
     * (from {@code offset} of a {@code size}-byte file) is ERET P to ESTO A at that offset, so only the rest
     * crosses. The destination's restart markers reach {@code markers} (relative to {@code offset}).
     */
    void transferTo(String sourcePath, GridFtpSession destination, String destinationPath, long offset, long size,
                    MarkerListener markers) throws Exception {
        destination.putChannelsReady = false; // third-party set-up replaces its data channel mode
        destination.closeData();
        client.newCopy();
        client.copyTo(sourcePath, destination.client, destinationPath, offset, size, markers);
    }

    /**
     * After a third-party copy from this session stalled: whether the destination kept sending markers after
     * {@code since} (System.nanoTime(): the attempt's last progress) while this side's part had not ended, so it
     * was up and waiting for bytes that this source did not send. (A destination that stopped, or a source
     * whose part had ended, is the destination's stall.)
     */
    boolean destinationWaitedSince(long since) {
        long heard = client.otherHeard();
        return heard != 0 && heard - since > 0 && !client.ownPartDone();
    }

    /**
     * After a third-party copy from this session failed: whether it failed at this source, not at the
     * destination. A set-up command to this source (PORT) failed or went unanswered, or its RETR/ERET could not
     * be written to it; stalled, this source never answered its RETR/ERET though the destination had answered
     * its STOR/ESTO (a destination silent too keeps the stall its own: a source cannot start sending to a
     * destination that is not there); otherwise this source's control channel failed, or it refused, before the
     * destination's, or the destination refused saying the data connection from this source ended early.
     */
    boolean copyFailedHere(boolean stalled) {
        String pending = client.pending();
        if (pending != null && !pending.equals(StagehandClient.TRANSFER)) return true;
        if (stalled) return pending != null && client.otherAnswered();
        return client.failedFirst() || client.otherSawDataEnd() != null;
    }

    /** Whether this source's control channel failed or refused before the destination's, in the last copy. */
    boolean copyFailedFirstHere() {
        return client.failedFirst();
    }

    /** After {@link #copyFailedHere}: the destination's refusal saying this source's data ended early, or null. */
    String destinationSawDataEnd() {
        return client.otherSawDataEnd();
    }

    long adler32(String side, String path) throws Exception {
        return adler32(side, path, 0, -1);
    }

    /**
     * The server's Adler32 of {@code length} bytes from {@code offset} (-1: to the end). A server without
     * ADLER32 (GCT: "500 Unknown checksum algorithm requested.") fails it as {@link Kind#UNSUPPORTED}, named
     * as the {@code side} ("destination", "source") it is: sending the file again would get the same answer.
     */
    long adler32(String side, String path, long offset, long length) throws Exception {
        String sum;
        try {
            sum = client.checksum(new ChecksumAlgorithm("ADLER32"), offset, length, path);
        } catch (Exception e) {
            if (Failures.classify(e) != Kind.UNSUPPORTED) throw e;
            throw new TransferFailure(Kind.UNSUPPORTED, side + " " + host + " does not support ADLER32 checksums (CKSM): "
                    + Failures.message(e), 0, e);
        }
        return Long.parseUnsignedLong(sum.trim().toLowerCase(Locale.ROOT), 16);
    }

    long size(String path) throws Exception {
        return client.getSize(path);
    }

    boolean exists(String path) throws Exception {
        return client.exists(path);
    }

    /**
     * Commands sent outside a watched transfer (MKD, DELE: no watchdog attempt) wait at most {@code limit} for
     * their reply; a silent server then fails them with a timeout instead of hanging the caller.
     */
    void replyTimeout(java.time.Duration limit) throws IOException {
        client.controlTimeout((int) Math.min(Integer.MAX_VALUE, Math.max(1, limit.toMillis())));
    }

    void deleteFile(String path) throws Exception {
        client.deleteFile(path);
    }

    void makeDir(String path) throws Exception {
        client.makeDir(path);
    }

    boolean isClosed() {
        return closed;
    }

    /** Safe from any thread (the stall watchdog uses it to unblock a hung transfer). */
    @Override
    public void close() {
        if (closed) return;
        closed = true;
        client.hardClose();
        closeData();
        synchronized (this) {
            if (writerPool != null) writerPool.shutdown(); // its threads end once their channels are closed
        }
        Thread.ofVirtual().start(() -> closeQuietly(client));
    }

    private static void closeQuietly(GridFTPClient c) {
        try {
            c.close(true);
        } catch (IOException | RuntimeException | org.globus.ftp.exception.ServerException ignored) {
            // closing a broken or stalled connection: nothing more to do
        }
    }
}
