package dev.stagehand.transfer.gridftp;

import dev.stagehand.transfer.TransferFailure.Kind;
import java.io.EOFException;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.util.Locale;

/** Maps jglobus and socket exceptions to failure kinds, so the retry policy can tell transient from final. */
final class Failures {

    private Failures() {}

    static Kind classify(Throwable t) {
        StringBuilder text = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof ConnectException || c instanceof NoRouteToHostException || c instanceof UnknownHostException)
                return Kind.CONNECTION;
            if (c instanceof SocketTimeoutException) return Kind.TIMEOUT;
            text.append(' ').append(c);
            if (c.getCause() == c) break;
        }
        String m = text.toString().toLowerCase(Locale.ROOT);
        if (m.contains("permission denied") || m.contains("permission_denied") || m.contains("eacces"))
            return Kind.PERMISSION_DENIED;
        if (m.contains("quota") || m.contains("no space left") || m.contains("enospc")) return Kind.QUOTA_EXCEEDED;
        if (m.contains("no such file") || m.contains("path_not_found") || m.contains("not a directory")
                || m.contains("enoent")) return Kind.NO_SUCH_PATH;
        if (m.contains("530") || m.contains("authorization failed") || m.contains("authentication failed")
                || m.contains("login incorrect") || m.contains("not authorized") || m.contains("gss")
                || m.contains("credential")) return Kind.AUTHENTICATION;
        if (m.contains("connection refused")) return Kind.CONNECTION;
        if (m.contains("timed out") || m.contains("timeout")) return Kind.TIMEOUT;
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof SocketException || c instanceof EOFException) return Kind.CONNECTION;
            if (c.getCause() == c) break;
        }
        return Kind.PROTOCOL;
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
