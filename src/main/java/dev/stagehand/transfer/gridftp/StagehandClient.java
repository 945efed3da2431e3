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
        checkScks(scks);
        transferRunSingleThread(localServer.getControlChannel(), markers);
    }

    /**
     * The reply to an SCKS. Only a permanent "not understood / not implemented" (500, 501, 502, 504) says the
     * server lacks SCKS ({@link ScksRefused}: the link goes on with CKSM after the put); any other refusal (a
     * transient 421, 450, 451...) fails this attempt as its code says, and the link keeps SCKS. Before, any
     * refusal turned SCKS off for the link: one busy moment of a server cost every later file a CKSM.
     */
    static void checkScks(Reply reply) throws ServerException, ScksRefused {
        if (Reply.isPositiveCompletion(reply)) return;
        ServerException refused = refused(reply, "SCKS refused");
        int code = reply.getCode();
        if (code == 500 || code == 501 || code == 502 || code == 504) throw new ScksRefused(refused);
        throw refused;
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
    /**
     * Of a third-party copy from this client (cleared by {@link #newCopy()}): the command to this side whose
     * reply it waits for ("PORT"; "RETR"/"ERET" while it is written; {@link #TRANSFER}: its RETR/ERET, written;
     * null: none), kept when it failed;
     * whether the other side gave the first reply to its STOR/ESTO; and the side whose control channel failed
     * or refused first (TransferMonitor.LOCAL: this one, REMOTE: the other; 0: none).
     */
    private volatile String pending;
    private volatile boolean otherAnswered;
    /**
     * The other side (the destination) refused the copy saying its data connection reached end of file before the
     * file's end (GCT: "an end-of-file was reached"): the sender, this source, closed it. A source killed mid-file
     * closes its data connection and its control connection at once, and the destination's refusal often arrives
     * before this side's broken connection is read, so the order of the faults alone put it on the destination.
     */
    private volatile String otherSawDataEnd;
    private final java.util.concurrent.atomic.AtomicInteger firstFault = new java.util.concurrent.atomic.AtomicInteger();
    static final String TRANSFER = "transfer";

    long otherHeard() {
        return otherHeard;
    }

    boolean ownPartDone() {
        return ownPartDone;
    }

    String pending() {
        return pending;
    }

    boolean otherAnswered() {
        return otherAnswered;
    }

    /** The destination's refusal saying the source's data ended early (see {@link #otherSawDataEnd}), or null. */
    String otherSawDataEnd() {
        return otherSawDataEnd;
    }

    /** Whether this side's control channel failed, or its server refused, before the other's did. */
    boolean failedFirst() {
        return firstFault.get() == TransferMonitor.LOCAL;
    }

    void newCopy() {
        pending = null;
        otherAnswered = false;
        otherSawDataEnd = null;
        firstFault.set(0);
    }

    /**
     * A third-party copy from this client (its source) to {@code destination}: as jglobus's transfer (RETR to
     * STOR, from byte 0) and extendedTransfer (ERET P to ESTO A, the rest of a {@code size}-byte file from
     * {@code offset}), but with the source's command pending on this side while it is written. A source whose
     * control connection broke (between files, or after its PORT) fails that write: the source's, named as
     * such; it was put on the destination host, which left its link's rotation.
     */
    void copyTo(String sourcePath, StagehandClient destination, String destinationPath, long offset, long size,
                MarkerListener markers) throws IOException, ServerException, ClientException {
        gSession.matches(destination.gSession);
        if (gSession.serverMode == org.globus.ftp.Session.SERVER_DEFAULT) setActive(destination.setPassive());
        boolean whole = offset == 0;
        destination.controlChannel.write(whole ? new Command("STOR", destinationPath)
                : new Command("ESTO", "A " + offset + " " + destinationPath));
        pending = whole ? "RETR" : "ERET";
        controlChannel.write(whole ? new Command("RETR", sourcePath)
                : new Command("ERET", "P " + offset + " " + (size - offset) + " " + sourcePath));
        transferRunSingleThread(destination.controlChannel, markers);
    }

    @Override
    public void setActive(org.globus.ftp.HostPort hostPort) throws IOException, ServerException {
        pending = "PORT";
        super.setActive(hostPort);
        pending = null;
    }

    /**
     * jglobus's own, but noting when the other side (in a third-party copy from this client: the destination)
     * sends its markers, and when this side's part ends, so a stall can be put on the side that stopped; and
     * which side answered first, and which failed first, so a failure can be put on its side. The other
     * side's monitor runs on a thread of its own, this side's on the calling thread.
     */
    @Override
    protected void transferRunSingleThread(BasicClientControlChannel other, MarkerListener markers)
            throws IOException, ServerException, ClientException {
        otherHeard = 0;
        ownPartDone = false;
        pending = TRANSFER;
        otherAnswered = false;
        otherSawDataEnd = null;
        firstFault.set(0);
        MarkerListener fromOther = m -> {
            otherHeard = System.nanoTime();
            if (markers != null) markers.markerArrived(m);
        };
        TransferState state = new TransferState();
        TransferMonitor mine = new TransferMonitor(new Watched(controlChannel, TransferMonitor.LOCAL), state, markers,
                session.maxWait, session.waitDelay, TransferMonitor.LOCAL);
        TransferMonitor theirs = new TransferMonitor(new Watched(other, TransferMonitor.REMOTE), state, fromOther,
                session.maxWait, session.waitDelay, TransferMonitor.REMOTE);
        mine.setOther(theirs);
        theirs.setOther(mine);
        theirs.start(false);
        mine.start(true);
        ownPartDone = !state.hasError();
        state.waitForEnd();
    }

    /**
     * One side's control channel during a transfer, noting its first reply and whether it failed first: a
     * negative reply, a broken connection (jglobus reports a reset while waiting as an interrupt: one that
     * is not the other monitor's abort), or a reply it cannot parse.
     */
    private final class Watched extends BasicClientControlChannel {
        private final BasicClientControlChannel channel;
        private final int side;
        private volatile boolean aborting;

        Watched(BasicClientControlChannel channel, int side) {
            this.channel = channel;
            this.side = side;
        }

        @Override
        public Reply read() throws ServerException, IOException, FTPReplyParseException {
            Reply reply;
            try {
                reply = channel.read();
            } catch (java.io.InterruptedIOException e) {
                throw e;
            } catch (IOException | FTPReplyParseException | ServerException e) {
                fault();
                throw e;
            }
            if (side == TransferMonitor.LOCAL) pending = null;
            else otherAnswered = true;
            if (reply.getCode() >= 400) {
                if (side == TransferMonitor.REMOTE && endOfData(reply.getMessage())) otherSawDataEnd = reply.getCode() + " " + reply.getMessage();
                fault();
            }
            return reply;
        }

        @Override
        public void waitFor(org.globus.ftp.vanilla.Flag aborted, int ioDelay, int maxWait)
                throws ServerException, IOException, InterruptedException {
            try {
                channel.waitFor(aborted, ioDelay, maxWait);
            } catch (InterruptedException e) {
                if (aborting || aborted.flag) throw e;
                fault();
                // not the other side's abort: jglobus's word for this connection failing (a reset) while it waited.
                // Passed on as that: the copy failed as PROTOCOL ("Transfer thread has been killed"), where the same
                // connection ended (not reset) is a connection failure
                java.net.SocketException broken = new java.net.SocketException("control connection broken while waiting for a reply");
                broken.initCause(e);
                throw broken;
            } catch (java.io.InterruptedIOException e) {
                throw e;
            } catch (IOException | ServerException e) {
                fault();
                throw e;
            }
        }

        @Override
        public void abortTransfer() {
            aborting = true;
            channel.abortTransfer();
        }

        private void fault() {
            firstFault.compareAndSet(0, side);
        }
    }

    /** GCT's words for a data connection that the sender closed before the file's end. */
    static boolean endOfData(String replyText) {
        String t = String.valueOf(replyText).toLowerCase(java.util.Locale.ROOT);
        return t.contains("an end-of-file was reached") || t.contains("an end of file occurred");
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
