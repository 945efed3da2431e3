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
import org.globus.ftp.vanilla.Reply;

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
