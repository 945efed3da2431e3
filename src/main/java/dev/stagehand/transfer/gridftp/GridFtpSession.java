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

    private GridFtpSession(Endpoint.HostPort host, StagehandClient client) {
        this.host = host;
        this.client = client;
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
            return new GridFtpSession(host, c);
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

    /** Server-to-server copy: this session is the source, {@code destination} receives. */
    void transferTo(String sourcePath, GridFtpSession destination, String destinationPath, MarkerListener markers)
            throws Exception {
        destination.putChannelsReady = false; // third-party set-up replaces its data channel mode
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
