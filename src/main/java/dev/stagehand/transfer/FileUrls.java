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
     * The directory URL {@code base} plus the file's logical name, percent-encoded so that the URL's decoded path
     * is exactly that name: a space would not parse, and a {@code #} or {@code ?} would cut the name short and
     * send two files to one path. The base is kept as given (a host list {@code a:2811,b:2811} included).
     */
    public static URI under(String base, String name) {
        String b = base.endsWith("/") ? base.substring(0, base.length() - 1) : base;
        return URI.create(b + UriUtils.encodePath(name.startsWith("/") ? name : "/" + name, StandardCharsets.UTF_8));
    }
}
