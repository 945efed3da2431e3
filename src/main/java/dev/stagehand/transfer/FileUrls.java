package dev.stagehand.transfer;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import org.springframework.web.util.UriUtils;

/** URLs of catalog files under a directory URL, as the movers take them. */
public final class FileUrls {

    private FileUrls() {}

    /** Whether {@code uri} names a file on a GridFTP server ({@code ftp://} or {@code gsiftp://}). */
    public static boolean isGridFtp(URI uri) {
        String s = uri.getScheme();
        return "ftp".equalsIgnoreCase(s) || "gsiftp".equalsIgnoreCase(s);
    }

    /**
     * Why the movers could not reach the hosts of a GridFTP URL's authority (one host, or a list
     * {@code a:2811,b:2811}, each with an optional port and user), or null. {@link URI} takes a missing host, a
     * host list and a port that is no number alike for an authority it does not split, with no host and no
     * port; an empty host would resolve to this machine, and port 0 is refused like a host that is down.
     */
    public static String hostsProblem(String authority) {
        if (authority == null || authority.isBlank()) return "no host: expected a URL such as gsiftp://host:2811/path";
        for (String part : authority.split(",", -1)) {
            String hp = hostPort(part);
            int colon = portColon(hp);
            String host = colon >= 0 ? hp.substring(0, colon) : hp;
            if (host.isEmpty()) return "empty host in '" + authority + "'";
            if (colon >= 0) {
                String port = hp.substring(colon + 1);
                if (!port.matches("[0-9]{1,5}") || Integer.parseInt(port) < 1 || Integer.parseInt(port) > 65535)
                    return "port '" + port + "' of " + host + " is not a number in 1-65535";
            }
        }
        return null;
    }

    /** One entry of a host list without its user: {@code host} or {@code host:port}. */
    public static String hostPort(String entry) {
        String hp = entry.trim();
        return hp.substring(hp.lastIndexOf('@') + 1);
    }

    /** Where the port of {@link #hostPort} starts (its colon), or -1: {@code [::1]} alone is an IPv6 host. */
    public static int portColon(String hostPort) {
        return hostPort.endsWith("]") ? -1 : hostPort.lastIndexOf(':');
    }

    /**
     * Why a file named {@code name} cannot be sent to a URL of {@code scheme}, or null. Globus GridFTP servers read
     * a clear-text (ftp://) control channel through their telnet filter, which drops every byte outside printable
     * ASCII (GCT globus_xio_telnet.c): "STOR /d/déjà.txt" stores /d/dj.txt, over any file of that name, and its
     * CKSM and DELE hit that file too. gsiftp:// wraps each command (MIC/ENC, base64), so its UTF-8 bytes get
     * through.
     */
    public static String nameProblem(String scheme, String name) {
        if (!"ftp".equalsIgnoreCase(scheme) || name == null || name.chars().allMatch(c -> c < 0x80)) return null;
        return "non-ASCII characters in the name cannot go to an ftp:// destination: a GridFTP server's clear-text "
                + "control channel drops them and would act on another file; use gsiftp://";
    }

    /**
     * The directory URL {@code base} plus the file's logical name, percent-encoded so that the URL's decoded path
     * is exactly that name: a space would not parse, and a {@code #} or {@code ?} would cut the name short and
     * send two files to one path. The base is kept as given (a host list {@code a:2811,b:2811} included).
     */
    public static URI under(String base, String name) {
        String b = base.endsWith("/") ? base.substring(0, base.length() - 1) : base;
        return URI.create(b + UriUtils.encodePath(name.startsWith("/") ? name : "/" + name, StandardCharsets.UTF_8));
    }
}
