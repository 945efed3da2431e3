package dev.stagehand.transfer.gridftp;

import dev.stagehand.transfer.TransferFailure.Kind;
import java.io.EOFException;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.globus.common.ChainedIOException;
import org.globus.ftp.exception.FTPException;
import org.globus.ftp.exception.UnexpectedReplyCodeException;
import org.ietf.jgss.GSSException;

/**
 * Maps jglobus and socket exceptions to failure kinds, so the retry policy can tell transient from final. A
 * server's reply is classified by its code; its text is read only for reasons the code does not tell apart,
 * and never matched anywhere (it names paths: "451 .../run001530/raw.dat: I/O error" is no login failure).
 */
final class Failures {

    private Failures() {}

    static Kind classify(Throwable t) {
        List<Throwable> chain = chain(t);
        for (Throwable c : chain) {
            if (c instanceof ConnectException || c instanceof NoRouteToHostException || c instanceof UnknownHostException)
                return Kind.CONNECTION;
            if (c instanceof SocketTimeoutException) return Kind.TIMEOUT;
        }
        // the server's reply, by its code: its text may name paths ("/data/run001530/..", "/timeout/..")
        for (Throwable c : chain) {
            if (c instanceof UnexpectedReplyCodeException u && u.getReply() != null)
                return byReply(u.getReply().getCode(), String.valueOf(u.getReply().getMessage()));
        }
        // a reply passed on as text only: taken when the message starts with it
        for (Throwable c : chain) {
            Matcher m = QUOTED_REPLY.matcher(String.valueOf(c.getMessage()).strip());
            if (m.find()) return byReply(Integer.parseInt(m.group(1)), m.group(2));
        }
        // no reply: trouble on this side of the connection
        for (Throwable c : chain) {
            if (c instanceof GSSException || c.getClass().getName().startsWith("org.globus.gsi.")) return Kind.AUTHENTICATION;
        }
        String m = chain.stream().map(c -> String.valueOf(c.getMessage())).collect(Collectors.joining(" ")).toLowerCase(Locale.ROOT);
        if (m.contains("authorization failed") || m.contains("authentication failed")) return Kind.AUTHENTICATION;
        if (m.contains("connection refused")) return Kind.CONNECTION;
        if (m.contains("timed out")) return Kind.TIMEOUT;
        for (Throwable c : chain) {
            if (c instanceof SocketException || c instanceof EOFException) return Kind.CONNECTION;
        }
        return Kind.PROTOCOL;
    }

    /** The failed read of a put's local file in {@code t}'s causes (null: none; the failure is elsewhere). */
    static LocalReadException localRead(Throwable t) {
        for (Throwable c : chain(t)) {
            if (c instanceof LocalReadException l) return l;
        }
        return null;
    }

    /** "530 Login incorrect" at the start of a message, or after jglobus's "Unexpected reply: ". */
    private static final Pattern QUOTED_REPLY = Pattern.compile("^(?:.*?Unexpected reply: )?([1-5]\\d\\d)[ -]([\\s\\S]*)");

    /**
     * The server's reason, as GCT (and the systems below it) word it: an error name, or an OS error at the end
     * of a line after a colon ("500-globus_xio: System error in open: Permission denied").
     */
    private static final Pattern REASON = Pattern.compile("(?im)(?:^|:)\\s*(permission denied|no such file or directory|not a directory"
            + "|disk quota exceeded|no space left on device|unknown checksum algorithm requested)\\.?\\s*$|(?-i:\\b(INCORRECT_CHECKSUM|PATH_NOT_FOUND|PERMISSION_DENIED|QUOTA_EXCEEDED)\\b)");

    /** A failure the server stated: by its reply code, the text only for the reasons a code does not tell apart. */
    static Kind byReply(int code, String text) {
        if (code == 530 || code == 534 || code == 535) return Kind.AUTHENTICATION; // not logged in; GSS refused
        if (code == 421) return Kind.CONNECTION; // service not available, closing the connection
        Matcher m = REASON.matcher(text);
        if (m.find()) {
            String reason = (m.group(1) != null ? m.group(1) : m.group(2)).toLowerCase(Locale.ROOT).replace('_', ' ');
            if (reason.equals("incorrect checksum")) return Kind.CHECKSUM_MISMATCH; // the server's SCKS check
            if (reason.equals("permission denied")) return Kind.PERMISSION_DENIED;
            if (reason.startsWith("unknown checksum")) return Kind.UNSUPPORTED; // GCT's CKSM of an algorithm it lacks
            if (reason.contains("quota") || reason.contains("space")) return Kind.QUOTA_EXCEEDED;
            return Kind.NO_SUCH_PATH;
        }
        if (code == 452 || code == 552) return Kind.QUOTA_EXCEEDED; // insufficient storage; allocation exceeded
        if (code == 553) return Kind.PERMISSION_DENIED; // file name not allowed
        return Kind.PROTOCOL;
    }

    /** The causes of {@code t}, jglobus's own links included (its exceptions keep their cause apart). */
    private static List<Throwable> chain(Throwable t) {
        List<Throwable> out = new ArrayList<>();
        for (Throwable c = t; c != null && out.size() < 20 && !out.contains(c); ) {
            out.add(c);
            if (c instanceof FTPException f && f.getRootCause() != null) c = f.getRootCause();
            else if (c instanceof ChainedIOException e && e.getException() != null) c = e.getException();
            else c = c.getCause();
        }
        return out;
    }

    /** The most telling message in the chain (jglobus nests the server's reply a few levels down). */
    static String message(Throwable t) {
        String best = String.valueOf(t);
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c.getMessage() != null && !c.getMessage().isBlank()) best = c.getClass().getSimpleName() + ": " + c.getMessage();
            if (c.getCause() == c) break;
        }
        best = best.replaceAll("\\s+", " ").trim();
        // jglobus wraps the server's reply in boilerplate: keep the reply
        int reply = best.indexOf("Unexpected reply: ");
        if (reply >= 0) best = best.substring(reply + 18).replaceAll("\\]$", "").replaceAll("\\b[45]\\d\\d[- ]", "").trim();
        return best;
    }
}
