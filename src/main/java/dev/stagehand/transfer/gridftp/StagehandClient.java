package dev.stagehand.transfer.gridftp;

import java.io.IOException;
import java.lang.reflect.Field;
import java.net.Socket;
import org.globus.ftp.GridFTPClient;
import org.globus.ftp.exception.ServerException;
import org.globus.ftp.vanilla.FTPControlChannel;

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
