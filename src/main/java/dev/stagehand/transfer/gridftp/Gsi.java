package dev.stagehand.transfer.gridftp;

import dev.stagehand.transfer.MoverSettings;
import dev.stagehand.transfer.TransferFailure;
import dev.stagehand.transfer.TransferFailure.Kind;
import java.lang.reflect.Field;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import org.globus.gsi.X509Credential;
import org.globus.gsi.gssapi.GlobusGSSCredentialImpl;
import org.ietf.jgss.GSSCredential;

/**
 * GSI set-up for jglobus 2.1.0. jglobus hard-codes TLS {"TLSv1", "SSLv3"}, which stock OpenSSL 3 servers
 * and Java both refuse; its GSS handshake works with exactly TLS 1.2 (offering 1.3 too breaks it), so the
 * protocol list is rewritten in place once, before the first GSI context. Trust roots are read by jglobus
 * from the X509_CERT_DIR system property.
 */
final class Gsi {

    private static volatile boolean patched;

    private Gsi() {}

    static synchronized void prepare(MoverSettings settings) {
        String certDir = !settings.certDir().isBlank() ? settings.certDir()
                : System.getenv().getOrDefault("X509_CERT_DIR", "/etc/grid-security/certificates");
        System.setProperty("X509_CERT_DIR", certDir);
        // For gets with DCAU the client's data socket is the TLS server and GCT sends the user's CN as SNI.
        if (System.getProperty("jdk.tls.server.disableExtensions") == null)
            System.setProperty("jdk.tls.server.disableExtensions", "server_name");
        if (patched) return;
        try {
            Class<?> ctx = Class.forName("org.globus.gsi.gssapi.GlobusGSSContextImpl");
            Field f = ctx.getDeclaredField("ENABLED_PROTOCOLS");
            f.setAccessible(true);
            String[] protocols = (String[]) f.get(null);
            java.util.Arrays.fill(protocols, "TLSv1.2");
            patched = true;
        } catch (ReflectiveOperationException | RuntimeException e) {
            throw new TransferFailure(Kind.AUTHENTICATION, "cannot set jglobus GSI to TLS 1.2: " + e, 0, e);
        }
    }

    /** A proxy as loaded: its file, the file's modification time, and when the proxy stops being valid. */
    record Proxy(Path file, FileTime modified, Instant expires, GSSCredential credential) {}

    /**
     * Proxies live 12-96 h and are rewritten before they expire (by cron, or a renewal service): one that
     * ends within this margin is read again from its file, which may hold a fresh one by then.
     */
    static final Duration RELOAD_MARGIN = Duration.ofMinutes(15);

    /**
     * The proxy to use now: {@code loaded} while its file is unchanged and it has more than
     * {@link #RELOAD_MARGIN} left, else the file read again. A proxy on disk that has itself expired fails
     * with the file's name and the time it expired (no connection attempt could succeed with it).
     */
    static Proxy current(MoverSettings settings, Proxy loaded) {
        prepare(settings);
        String proxy = !settings.proxy().isBlank() ? settings.proxy() : System.getenv("X509_USER_PROXY");
        if (proxy == null || proxy.isBlank()) proxy = "/tmp/x509up_u" + uid();
        Path file = Path.of(proxy);
        Instant now = Instant.now();
        // a proxy being rewritten (truncated, then written) can be unreadable for a moment: the one loaded
        // serves meanwhile, while it is valid
        boolean fallBack = loaded != null && loaded.file().equals(file) && loaded.expires().isAfter(now);
        FileTime modified;
        try {
            if (!Files.isReadable(file)) throw new java.io.IOException("not readable");
            modified = Files.getLastModifiedTime(file);
        } catch (java.io.IOException e) {
            if (fallBack) return loaded;
            throw new TransferFailure(Kind.AUTHENTICATION, "no readable X.509 proxy at " + proxy
                    + " (set X509_USER_PROXY or stagehand.transfer.mover.proxy)");
        }
        if (loaded != null && loaded.file().equals(file) && loaded.modified().equals(modified)
                && loaded.expires().isAfter(now.plus(RELOAD_MARGIN))) {
            return loaded;
        }
        X509Credential x509;
        GSSCredential credential;
        try {
            x509 = new X509Credential(proxy);
            credential = new GlobusGSSCredentialImpl(x509, GSSCredential.INITIATE_AND_ACCEPT);
        } catch (Exception e) {
            if (fallBack) return loaded;
            throw new TransferFailure(Kind.AUTHENTICATION, "cannot load X.509 proxy " + proxy + ": " + Failures.message(e), 0, e);
        }
        Instant expires = java.util.Arrays.stream(x509.getCertificateChain())
                .map(c -> c.getNotAfter().toInstant()).min(Instant::compareTo).orElse(now);
        if (!expires.isAfter(now)) {
            throw new TransferFailure(Kind.AUTHENTICATION, "the X.509 proxy " + proxy + " expired at " + expires
                    + " (write a fresh one there: grid-proxy-init, voms-proxy-init or the job that renews it)");
        }
        return new Proxy(file, modified, expires, credential);
    }

    private static String uid() {
        try {
            return String.valueOf(Files.getAttribute(Path.of("/proc/self"), "unix:uid"));
        } catch (Exception e) {
            return "0";
        }
    }
}
