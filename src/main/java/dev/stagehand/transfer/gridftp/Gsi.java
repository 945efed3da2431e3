package dev.stagehand.transfer.gridftp;

import dev.stagehand.transfer.MoverSettings;
import dev.stagehand.transfer.TransferFailure;
import dev.stagehand.transfer.TransferFailure.Kind;
import java.lang.reflect.Field;
import java.nio.file.Files;
import java.nio.file.Path;
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

    static GSSCredential credential(MoverSettings settings) {
        prepare(settings);
        String proxy = !settings.proxy().isBlank() ? settings.proxy() : System.getenv("X509_USER_PROXY");
        if (proxy == null || proxy.isBlank()) proxy = "/tmp/x509up_u" + uid();
        if (!Files.isReadable(Path.of(proxy)))
            throw new TransferFailure(Kind.AUTHENTICATION, "no readable X.509 proxy at " + proxy
                    + " (set X509_USER_PROXY or stagehand.transfer.mover.proxy)");
        try {
            return new GlobusGSSCredentialImpl(new X509Credential(proxy), GSSCredential.INITIATE_AND_ACCEPT);
        } catch (Exception e) {
            throw new TransferFailure(Kind.AUTHENTICATION, "cannot load X.509 proxy " + proxy + ": " + Failures.message(e), 0, e);
        }
    }

    private static String uid() {
        try {
            return String.valueOf(Files.getAttribute(Path.of("/proc/self"), "unix:uid"));
        } catch (Exception e) {
            return "0";
        }
    }
}
