package dev.stagehand.transfer.gridftp;

import dev.stagehand.catalog.FileNames;
import dev.stagehand.transfer.FileUrls;
import java.net.URI;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/** A GridFTP URL split into scheme, its host list (several hosts = one load-balanced link) and path. */
record Endpoint(String scheme, List<HostPort> hosts, String path) {

    record HostPort(String host, int port) {
        @Override
        public String toString() {
            return host + ":" + port;
        }
    }

    static Endpoint parse(URI uri) {
        return parse(uri, Charset.defaultCharset());
    }

    /**
     * Why a path cannot be sent when the JVM's default charset is {@code jvm}, or null. jglobus writes every
     * command with {@code String.getBytes()} and reads replies in that charset (no setting changes it): under
     * -Dfile.encoding=COMPAT and a non-UTF-8 locale "déjà vu.bin" went out as "d?j? vu.bin", a name the server
     * acted on as it was (another file's, perhaps), and nothing said so. ASCII names are the same in any charset.
     */
    static String charsetProblem(String path, Charset jvm) {
        if (jvm.equals(StandardCharsets.UTF_8) || path.chars().allMatch(c -> c < 0x80)) return null;
        return "non-ASCII characters in the name cannot be sent: this JVM's default charset is " + jvm
                + ", not UTF-8, and GridFTP commands are written in it (the server would get another name); "
                + "start Stagehand with -Dfile.encoding=UTF-8";
    }

    static Endpoint parse(URI uri, Charset jvm) {
        if (!FileUrls.isGridFtp(uri)) throw new IllegalArgumentException("not an ftp:// or gsiftp:// URL: " + uri);
        String authority = uri.getRawAuthority();
        // an empty host resolves to this machine, and port 0 is refused like a host that is down (an outage
        // waited out for a day): both are typos, refused here as at submission
        String problem = FileUrls.hostsProblem(authority);
        if (problem != null) throw new IllegalArgumentException(problem + " in " + uri);
        List<HostPort> hosts = new ArrayList<>();
        for (String part : authority.split(",")) {
            String hp = FileUrls.hostPort(part);
            int colon = FileUrls.portColon(hp);
            hosts.add(colon >= 0 ? new HostPort(hp.substring(0, colon), Integer.parseInt(hp.substring(colon + 1))) : new HostPort(hp, 2811));
        }
        String path = uri.getPath() == null || uri.getPath().isEmpty() ? "/" : uri.getPath();
        // the path is decoded: a %0D%0A in it would end the command line, and the rest would be sent as a
        // command of its own (a DELE) with the mover's credentials
        if (FileNames.hasControl(path))
            throw new IllegalArgumentException("control character in the path of " + uri);
        String scheme = uri.getScheme().toLowerCase(java.util.Locale.ROOT);
        String clearText = FileUrls.nameProblem(scheme, path);
        if (clearText != null) throw new IllegalArgumentException(clearText + " (" + uri + ")");
        String encoding = charsetProblem(path, jvm);
        if (encoding != null) throw new IllegalArgumentException(encoding + " (" + uri + ")");
        return new Endpoint(scheme, List.copyOf(hosts), path);
    }

    boolean gsi() {
        return scheme.equals("gsiftp");
    }

    /** The link this endpoint belongs to: scheme and host list. */
    String link() {
        return scheme + "://" + String.join(",", hosts.stream().map(HostPort::toString).toList());
    }
}
