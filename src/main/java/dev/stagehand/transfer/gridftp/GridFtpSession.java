package dev.stagehand.transfer.gridftp;

import dev.stagehand.transfer.MoverSettings;
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
    private volatile java.nio.channels.SocketChannel data; // direct MODE E data channel, kept between files

    private GridFtpSession(Endpoint.HostPort host, StagehandClient client, boolean direct) {
        this.host = host;
        this.client = client;
        this.direct = direct;
    }

    /** Puts go over this session's own MODE E data channel (no data channel authentication to speak). */
    boolean direct() {
        return direct;
    }

    static GridFtpSession open(Endpoint.HostPort host, boolean gsi, GSSCredential credential, MoverSettings s)
            throws Exception {
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
            // without DCAU the data channel is plain TCP: puts use Stagehand's own MODE E sender (sendfile,
            // no thread per stream per file); with DCAU they go through jglobus, which speaks GSI on it
            boolean direct = !gsi || s.dataChannelAuth().equals("NONE");
            return new GridFtpSession(host, c, direct);
        } catch (Exception e) {
            closeQuietly(c);
            throw e;
        }
    }

    /** Stores {@code source} at {@code path} from {@code offset} (0: the whole file). MODE E: server passive. */
    void put(String path, long offset, DataSource source, MarkerListener markers) throws Exception {
        // MODE E data channels stay up between files: PASV/PORT once per connection, not per file
        if (!putChannelsReady) {
            client.setPassive();
            client.setLocalActive();
            putChannelsReady = true;
        }
        if (offset > 0) {
            client.extendedPut(path, offset, source, markers);
        } else {
            client.extendedPut(path, source, markers);
        }
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

    /**
     * Sends {@code length} bytes of {@code file} from {@code start} over this session's own MODE E data
     * channel (one stream; the kernel copies the file with sendfile). {@code whole}: STOR, else ESTO at
     * {@code start} (a byte range). {@code adler32} non-null (whole files only): SCKS first, so the server
     * verifies the file before its 226. Commands, data and end of data are written before any
     * reply is read: one round trip per file.
     */
    void directPut(String path, java.nio.channels.FileChannel file, long start, long length, boolean whole,
                   Long adler32, java.util.function.LongConsumer progress) throws Exception {
        directPut(path, file, start, length, whole, adler32, null, progress);
    }

    // per (virtual) worker thread: the block a summed range is read into, summed in place and sent from
    private static final ThreadLocal<java.nio.ByteBuffer> BLOCK =
            ThreadLocal.withInitial(() -> java.nio.ByteBuffer.allocateDirect(1 << 20));

    /**
     * As above; {@code sum} non-null: the bytes are read, added to {@code sum} and sent in one pass (the server
     * receives while this side sums), instead of the kernel's sendfile.
     */
    void directPut(String path, java.nio.channels.FileChannel file, long start, long length, boolean whole,
                   Long adler32, java.util.zip.Adler32 sum, java.util.function.LongConsumer progress) throws Exception {
        java.nio.channels.SocketChannel ch = data;
        if (ch == null) {
            org.globus.ftp.HostPort hp = client.setPassive();
            ch = java.nio.channels.SocketChannel.open(new java.net.InetSocketAddress(hp.getHost(), hp.getPort()));
            ch.socket().setTcpNoDelay(true);
            data = ch;
            if (closed) ch.close();
        }
        if (adler32 != null) client.send("SCKS", "ADLER32 " + String.format("%08x", adler32));
        if (whole) {
            client.send("STOR", path); // truncates, unlike ESTO
        } else {
            client.send("ESTO", "A " + start + " " + path);
        }
        // data are written by a second thread while this one reads the replies: a server that refuses the put
        // (permission denied, SCKS unknown) never reads them, and its reply must not wait behind a full socket
        java.nio.ByteBuffer block = sum != null ? BLOCK.get() : null;
        java.nio.channels.SocketChannel out = ch;
        var failure = new java.util.concurrent.atomic.AtomicReference<Throwable>();
        Thread writer = Thread.ofVirtual().name("gridftp-data-" + host).start(() -> {
            try {
                writeBlocks(out, file, start, length, sum, block, progress);
            } catch (Throwable t) {
                failure.set(t);
                close(); // the reply read below fails at once
            }
        });
        try {
            if (adler32 != null) {
                org.globus.ftp.vanilla.Reply r = client.reply();
                if (!org.globus.ftp.vanilla.Reply.isPositiveCompletion(r))
                    throw new StagehandClient.ScksRefused(StagehandClient.refused(r, "SCKS refused"));
            }
            for (boolean started = false; ; ) {
                org.globus.ftp.vanilla.Reply r = client.reply();
                int code = r.getCode();
                if (code == 226) break;
                if (code == 111 || code == 112) {
                    progress.accept(0);
                    continue;
                }
                if (!started && org.globus.ftp.vanilla.Reply.isPositivePreliminary(r)) {
                    started = true;
                    continue;
                }
                throw StagehandClient.refused(r, "Server reported transfer failure");
            }
            writer.join(); // the server had every byte and the end of data before its 226
        } catch (Throwable t) {
            // the writer's failure explains this one only when it came first (it then closed the session)
            Throwable w = failure.get();
            closeData(); // frees a writer blocked on a server that no longer reads
            writer.join();
            if (w != null && w != t) {
                w.addSuppressed(t);
                throw w instanceof Exception e ? e : new java.io.IOException(w);
            }
            throw t;
        }
        Throwable w = failure.get();
        if (w != null) throw w instanceof Exception e ? e : new java.io.IOException(w);
    }

    private static void writeBlocks(java.nio.channels.SocketChannel ch, java.nio.channels.FileChannel file, long start,
                                    long length, java.util.zip.Adler32 sum, java.nio.ByteBuffer block,
                                    java.util.function.LongConsumer progress) throws IOException {
        java.nio.ByteBuffer header = java.nio.ByteBuffer.allocate(17);
        long sent = 0;
        while (sent < length) {
            long n = Math.min(length - sent, 8L << 20);
            header.clear();
            header.put((byte) 0).putLong(n).putLong(sent).flip(); // offsets relative to the ESTO offset
            while (header.hasRemaining()) ch.write(header);
            if (sum != null) {
                for (long done = 0; done < n; ) {
                    block.clear();
                    block.limit((int) Math.min(block.capacity(), n - done));
                    int r = file.read(block, start + sent + done);
                    if (r < 0) throw new IOException("file shrank while sending (at offset " + (start + sent + done) + ")");
                    block.flip();
                    sum.update(block);
                    block.rewind();
                    while (block.hasRemaining()) ch.write(block);
                    done += r;
                    progress.accept(r);
                }
            } else {
                for (long done = 0; done < n; ) {
                    long w = file.transferTo(start + sent + done, n - done, ch);
                    if (w <= 0 && file.size() < start + sent + n)
                        throw new IOException("file shrank while sending (at offset " + (start + sent + done) + ")");
                    done += w;
                    progress.accept(w);
                }
            }
            sent += n;
        }
        header.clear();
        header.put((byte) (EOD | EOF)).putLong(0).putLong(1).flip(); // the one stream's end: 1 EOD to expect
        while (header.hasRemaining()) ch.write(header);
    }

    private void closeData() {
        java.nio.channels.SocketChannel ch = data;
        data = null;
        if (ch != null) {
            try {
                ch.close();
            } catch (IOException ignored) {
                // closing a broken data channel
            }
        }
    }

    /** Server-to-server copy: this session is the source, {@code destination} receives. */
    void transferTo(String sourcePath, GridFtpSession destination, String destinationPath, MarkerListener markers)
            throws Exception {
        destination.putChannelsReady = false; // third-party set-up replaces its data channel mode
        java.nio.channels.SocketChannel ch = destination.data;
        destination.data = null;
        if (ch != null) ch.close();
        client.extendedTransfer(sourcePath, destination.client, destinationPath, markers);
    }

    long adler32(String path) throws Exception {
        return adler32(path, 0, -1);
    }

    /** The server's Adler32 of {@code length} bytes from {@code offset} (-1: to the end). */
    long adler32(String path, long offset, long length) throws Exception {
        String sum = client.checksum(new ChecksumAlgorithm("ADLER32"), offset, length, path);
        return Long.parseUnsignedLong(sum.trim().toLowerCase(Locale.ROOT), 16);
    }

    long size(String path) throws Exception {
        return client.getSize(path);
    }

    boolean exists(String path) throws Exception {
        return client.exists(path);
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
