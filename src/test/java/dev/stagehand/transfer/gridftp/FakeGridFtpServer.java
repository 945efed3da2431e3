package dev.stagehand.transfer.gridftp;

import java.io.BufferedReader;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * A scripted GridFTP server on loopback, for what a real one cannot be made to do on cue: it logs anyone in,
 * says yes to set-up commands, takes puts (MODE E data are read and dropped), answers CKSM after a delay the
 * test sets, and never answers the commands in {@link #silent}. Like GCT, it advertises its checksum
 * algorithms in FEAT ({@link #cksmAlgorithms}), refuses CKSM of another, and takes SCKS of another but then
 * never answers the STOR.
 */
final class FakeGridFtpServer implements AutoCloseable {

    private final ServerSocket control;
    private final ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor();
    private final List<Closeable> open = new CopyOnWriteArrayList<>();
    final List<String> commands = new CopyOnWriteArrayList<>();
    volatile Set<String> silent = Set.of();
    volatile long cksmDelayMillis;
    volatile String cksm = "00000001";
    /** When set, CKSM is answered with this reply instead (a server lacking the algorithm). */
    volatile String cksmRefusal;
    /**
     * When above 0, a STOR is begun and never ended: a perf marker with no new bytes every this many
     * milliseconds (GCT's receiving side waiting for data that do not come).
     */
    volatile long waitingMarkerMillis;
    /** When set, RETR and ERET are answered with this reply (a source refusing the file). */
    volatile String retrRefusal;
    /** When above 0, RETR and ERET are begun and their control connection closed this many milliseconds later ... */
    volatile long dropRetrAfterMillis;
    /** ... reset (RST), not closed, when set (the connection broken, not ended). */
    volatile boolean dropRetrByReset;
    /** When above 0, the control connection is reset this many milliseconds after a RETR's or ERET's 226 ... */
    volatile long resetAfterRetrMillis;
    /** ... which counts this down. */
    final java.util.concurrent.CountDownLatch reset = new java.util.concurrent.CountDownLatch(1);
    /** FEAT's CKSM line, as GCT words it. */
    volatile String cksmAlgorithms = "MD5:10;ADLER32:10;SHA1:10;SHA256:11;SHA512:12;";
    /** Told each command as it arrives, before it is answered. */
    volatile java.util.function.Consumer<String> heard = line -> {};
    /** When set, a STOR is begun and this many milliseconds later refused with {@link #storFailure} instead of 226. */
    volatile long storFailureAfterMillis;
    volatile String storFailure;
    /** SIZE's reply (null: "200 ok"). */
    volatile String sizeReply;
    /** Replies the next SCKSs get instead of 200, one each (a server without SCKS, or a busy one). */
    final java.util.Queue<String> scksRefusals = new java.util.concurrent.ConcurrentLinkedQueue<>();
    /** How many ESTOs (byte ranges) are still to be refused with a transient 451. */
    final java.util.concurrent.atomic.AtomicInteger refuseEsto = new java.util.concurrent.atomic.AtomicInteger();

    FakeGridFtpServer() throws IOException {
        control = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        threads.submit(() -> {
            while (true) {
                Socket s = control.accept();
                open.add(s);
                threads.submit(() -> serve(s));
            }
        });
    }

    int port() {
        return control.getLocalPort();
    }

    long count(String verb) {
        return commands.stream().filter(c -> c.toUpperCase(Locale.ROOT).startsWith(verb + " ")).count();
    }

    private Void serve(Socket s) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.ISO_8859_1));
        OutputStream out = s.getOutputStream();
        reply(out, "220 fake GridFTP server ready");
        boolean unknownScks = false; // GCT: an SCKS of an algorithm it lacks is taken, and its STOR never answered
        for (String line; (line = in.readLine()) != null; ) {
            commands.add(line);
            heard.accept(line);
            String verb = line.split(" ", 2)[0].toUpperCase(Locale.ROOT);
            if (silent.contains(verb)) continue;
            switch (verb) {
                case "USER" -> reply(out, "331 password please");
                case "PASS" -> reply(out, "230 logged in");
                case "FEAT" -> reply(out, "211-Extensions supported\r\n CKSM " + cksmAlgorithms
                        + "\r\n DCAU\r\n PARALLEL\r\n ESTO\r\n ERET\r\n SIZE\r\n211 End.");
                case "SCKS" -> {
                    String refusal = scksRefusals.poll();
                    unknownScks = refusal == null && !offers(line.split(" ")[1]);
                    reply(out, refusal != null ? refusal : "200 OK.");
                }
                case "PASV" -> {
                    ServerSocket data = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
                    open.add(data);
                    threads.submit(() -> drain(data));
                    int p = data.getLocalPort();
                    reply(out, "227 Entering Passive Mode (127,0,0,1," + (p >> 8) + "," + (p & 255) + ")");
                }
                case "ESTO" -> {
                    if (refuseEsto.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                        reply(out, "451 Local resource failure");
                    } else {
                        reply(out, "150 Begin");
                        reply(out, "226 Transfer complete");
                    }
                }
                case "RETR", "ERET" -> { // a third-party copy's source: its data go to the PORT given
                    if (retrRefusal != null) {
                        reply(out, retrRefusal);
                    } else {
                        reply(out, "150 Begin");
                        if (dropRetrAfterMillis > 0) { // the source's process goes away mid-copy
                            Thread.sleep(dropRetrAfterMillis);
                            if (dropRetrByReset) s.setSoLinger(true, 0);
                            s.close();
                            return null;
                        }
                        reply(out, "226 Transfer complete");
                        if (resetAfterRetrMillis > 0) { // the source's process goes away between files
                            Thread.sleep(resetAfterRetrMillis); // (a reset at once could drop the 226 unread)
                            s.setSoLinger(true, 0);
                            s.close();
                            reset.countDown();
                            return null;
                        }
                    }
                }
                case "STOR" -> {
                    reply(out, "150 Begin");
                    if (storFailure != null) {
                        Thread.sleep(storFailureAfterMillis);
                        reply(out, storFailure);
                        continue;
                    }
                    while (waitingMarkerMillis > 0) { // until the client goes away (the write then fails)
                        Thread.sleep(waitingMarkerMillis);
                        reply(out, "112-Perf Marker\r\n Timestamp:  " + System.currentTimeMillis() / 1000 + ".0\r\n"
                                + " Stripe Index: 0\r\n Stripe Bytes Transferred: 0\r\n Total Stripe Count: 1\r\n112 End.");
                    }
                    if (!unknownScks) reply(out, "226 Transfer complete");
                }
                case "CKSM" -> {
                    Thread.sleep(cksmDelayMillis); // summing a big file
                    reply(out, cksmRefusal != null ? cksmRefusal
                            : offers(line.split(" ")[1]) ? "213 " + cksm : "500 Unknown checksum algorithm requested.");
                }
                case "SIZE" -> reply(out, sizeReply != null ? sizeReply : "200 ok");
                case "MKD" -> reply(out, "257 created");
                case "DELE" -> reply(out, "250 deleted");
                case "QUIT" -> {
                    reply(out, "221 bye");
                    return null;
                }
                default -> reply(out, "200 ok");
            }
        }
        return null;
    }

    private boolean offers(String algorithm) {
        return java.util.Arrays.stream(cksmAlgorithms.split(";")).anyMatch(a -> a.split(":")[0].equalsIgnoreCase(algorithm));
    }

    /** Accepts data channels and reads them to their end. */
    private Void drain(ServerSocket data) throws IOException {
        while (true) {
            Socket d = data.accept();
            open.add(d);
            threads.submit(() -> {
                byte[] buf = new byte[1 << 16];
                try (InputStream in = d.getInputStream()) {
                    while (in.read(buf) >= 0) {
                        // dropped
                    }
                }
                return null;
            });
        }
    }

    private static void reply(OutputStream out, String text) throws IOException {
        out.write((text + "\r\n").getBytes(StandardCharsets.ISO_8859_1));
        out.flush();
    }

    @Override
    public void close() throws IOException {
        control.close();
        for (Closeable c : open) {
            try {
                c.close();
            } catch (IOException ignored) {
                // closing
            }
        }
        threads.shutdownNow();
    }
}
