package dev.stagehand.transfer.gridftp;

import java.io.IOException;
import java.lang.reflect.Field;
import java.net.Socket;
import org.globus.ftp.DataSource;
import org.globus.ftp.GridFTPClient;
import org.globus.ftp.MarkerListener;
import org.globus.ftp.exception.ClientException;
import org.globus.ftp.exception.FTPReplyParseException;
import org.globus.ftp.exception.ServerException;
import org.globus.ftp.exception.UnexpectedReplyCodeException;
import org.globus.ftp.vanilla.Command;
import org.globus.ftp.vanilla.FTPControlChannel;
import org.globus.ftp.vanilla.BasicClientControlChannel;
import org.globus.ftp.vanilla.Reply;
import org.globus.ftp.vanilla.TransferMonitor;
import org.globus.ftp.vanilla.TransferState;

/**
 * jglobus's client with a close that works while another thread is blocked in it: {@code close()} waits for
 * the lock the blocked reply reader holds, so the watchdog closes the control socket itself first (which
 * makes the blocked read fail at once) and the data channels next.
 */
final class StagehandClient extends GridFTPClient {

    private static final Field SOCKET;

    static {
        try {
            SOCKET = FTPControlChannel.class.getDeclaredField("socket");
            SOCKET.setAccessible(true);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    StagehandClient(String host, int port) throws IOException, ServerException {
        super(host, port);
    }

    /**
     * {@code SCKS ADLER32 sum} and {@code STOR path} written back to back (one round trip, not two; no ALLO):
     * the server truncates, writes, re-reads the file and compares before its 226, and answers a mismatch
     * with {@code 550 INCORRECT_CHECKSUM}. {@code adler32} is eight lowercase hex digits (GCT compares text).
     */
    void verifiedPut(String path, DataSource source, MarkerListener markers, String adler32)
            throws IOException, ServerException, ClientException {
        checkTransferParamsPut();
        localServer.retrieve(source);
        controlChannel.write(new Command("SCKS", "ADLER32 " + adler32));
        controlChannel.write(new Command("STOR", path));
        Reply scks;
        try {
            scks = controlChannel.read();
        } catch (FTPReplyParseException e) {
            throw ServerException.embedFTPReplyParseException(e);
        }
        if (!Reply.isPositiveCompletion(scks)) {
            throw new ScksRefused(ServerException.embedUnexpectedReplyCodeException(
                    new UnexpectedReplyCodeException(scks), "SCKS refused"));
        }
        transferRunSingleThread(localServer.getControlChannel(), markers);
    }

    /** The server does not take SCKS: the link falls back to CKSM after the put. */
    static final class ScksRefused extends IOException {
        ScksRefused(ServerException cause) {
            super(cause.getMessage(), cause);
        }
    }

    /** When the other side of this client's last transfer last sent a marker (System.nanoTime(); 0: none yet). */
    private volatile long otherHeard;
    /** This side's part of its last transfer ended (its 226 was read) while the other's went on. */
    private volatile boolean ownPartDone;

    long otherHeard() {
        return otherHeard;
    }

    boolean ownPartDone() {
        return ownPartDone;
    }

    /**
     * jglobus's own, but noting when the other side (in a third-party copy from this client: the destination)
     * sends its markers, and when this side's part ends, so a stall can be put on the side that stopped. The
     * other side's monitor runs on a thread of its own, this side's on the calling thread.
     */
    @Override
    protected void transferRunSingleThread(BasicClientControlChannel other, MarkerListener markers)
            throws IOException, ServerException, ClientException {
        otherHeard = 0;
        ownPartDone = false;
        MarkerListener fromOther = m -> {
            otherHeard = System.nanoTime();
            if (markers != null) markers.markerArrived(m);
        };
        TransferState state = new TransferState();
        TransferMonitor mine = new TransferMonitor(controlChannel, state, markers, session.maxWait, session.waitDelay, TransferMonitor.LOCAL);
        TransferMonitor theirs = new TransferMonitor(other, state, fromOther, session.maxWait, session.waitDelay, TransferMonitor.REMOTE);
        mine.setOther(theirs);
        theirs.setOther(mine);
        theirs.start(false);
        mine.start(true);
        ownPartDone = !state.hasError();
        state.waitForEnd();
    }

    /** Writes one command without waiting (its reply is read with {@link #reply()}). */
    void send(String command, String arguments) throws IOException {
        controlChannel.write(new Command(command, arguments));
    }

    Reply reply() throws IOException, ServerException {
        try {
            return controlChannel.read();
        } catch (FTPReplyParseException e) {
            throw ServerException.embedFTPReplyParseException(e);
        }
    }

    static ServerException refused(Reply reply, String what) {
        return ServerException.embedUnexpectedReplyCodeException(new UnexpectedReplyCodeException(reply), what);
    }

    /** Read timeout of the control socket (0: none). */
    void controlTimeout(int millis) throws IOException {
        try {
            if (SOCKET.get(controlChannel) instanceof Socket s) s.setSoTimeout(millis);
        } catch (IllegalAccessException e) {
            throw new IOException(e);
        }
    }

    void hardClose() {
        try {
            Object socket = SOCKET.get(controlChannel);
            if (socket instanceof Socket s) s.close();
        } catch (IOException | IllegalAccessException | RuntimeException ignored) {
            // already closed
        }
        Thread.ofVirtual().start(() -> {
            try {
                if (gLocalServer != null) gLocalServer.close();
            } catch (IOException | RuntimeException ignored) {
                // best effort: the transfer has failed anyway
            }
        });
    }
}
