package dev.stagehand.transfer;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A throwaway GSI world made with openssl and grid-proxy-init: a CA (trust directory with signing
 * policy), a host certificate for CN=localhost (SAN DNS:localhost, IP:127.0.0.1), users with RFC 3820
 * proxies (key converted to traditional RSA for jglobus), and a grid-mapfile that knows only some of them.
 */
public final class GsiFixture {

    public static final String ORG = "/O=Stagehand Test";
    public final Path dir;
    public final Path certDir;
    public final Path gridMap;

    private GsiFixture(Path dir) {
        this.dir = dir;
        this.certDir = dir.resolve("certificates");
        this.gridMap = dir.resolve("grid-mapfile");
    }

    /** Creates the CA, the host certificate and an empty grid-mapfile. */
    public static GsiFixture create(Path dir) throws Exception {
        GsiFixture f = new GsiFixture(dir);
        Files.createDirectories(f.certDir);
        f.sh("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256", "-days", "2",
                "-keyout", "ca.key", "-out", "ca.pem", "-subj", ORG + "/CN=Stagehand Test CA",
                "-addext", "basicConstraints=critical,CA:true", "-addext", "keyUsage=critical,keyCertSign,cRLSign");
        String hash = f.out("openssl", "x509", "-hash", "-noout", "-in", "ca.pem").strip();
        Files.copy(dir.resolve("ca.pem"), f.certDir.resolve(hash + ".0"));
        Files.writeString(f.certDir.resolve(hash + ".signing_policy"), """
                access_id_CA X509 '%s/CN=Stagehand Test CA'
                pos_rights globus CA:sign
                cond_subjects globus '"%s/*"'
                """.formatted(ORG, ORG));
        f.issue("host", "/CN=localhost", "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n");
        Files.writeString(f.gridMap, "");
        return f;
    }

    private void issue(String name, String cn, String extensions) throws Exception {
        Files.writeString(dir.resolve(name + ".ext"), "basicConstraints=CA:false\nkeyUsage=critical,digitalSignature,keyEncipherment\n" + extensions);
        sh("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-sha256", "-keyout", name + ".key", "-out", name + ".csr",
                "-subj", ORG + cn);
        sh("openssl", "x509", "-req", "-in", name + ".csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                "-sha256", "-days", "2", "-out", name + ".pem", "-extfile", name + ".ext");
        sh("chmod", "600", name + ".key");
    }

    /** Issues a user certificate and an RFC 3820 proxy; returns the proxy file jglobus can read. */
    public Path user(String name, boolean mapped) throws Exception {
        issue(name, "/CN=" + name, "extendedKeyUsage=clientAuth\n");
        Path raw = dir.resolve(name + "-proxy-pkcs8.pem");
        ProcessBuilder pb = new ProcessBuilder("grid-proxy-init", "-q", "-rfc", "-cert", name + ".pem", "-key", name + ".key",
                "-out", raw.toString(), "-hours", "2").directory(dir.toFile()).redirectErrorStream(true);
        pb.environment().put("X509_CERT_DIR", certDir.toString());
        run(pb, "grid-proxy-init");
        // jglobus reads only "BEGIN RSA PRIVATE KEY": convert the proxy's own key, keep the chain as is
        String pem = Files.readString(raw);
        Matcher m = Pattern.compile("-----BEGIN PRIVATE KEY-----.*?-----END PRIVATE KEY-----\\n?", Pattern.DOTALL).matcher(pem);
        if (m.find()) {
            Path key = dir.resolve(name + "-proxy-key.pem");
            Files.writeString(key, m.group());
            String traditional = out("openssl", "rsa", "-traditional", "-in", key.toString());
            pem = pem.substring(0, m.start()) + traditional + pem.substring(m.end());
        }
        Path proxy = dir.resolve(name + "-proxy.pem");
        Files.writeString(proxy, pem);
        sh("chmod", "600", proxy.toString());
        if (mapped) {
            Files.writeString(gridMap, Files.readString(gridMap) + "\"" + ORG + "/CN=" + name + "\" "
                    + GridFtpServer.anonymousUser() + "\n");
        }
        return proxy;
    }

    /** The environment a GSI globus-gridftp-server needs. */
    public Map<String, String> serverEnv() {
        return Map.of("X509_CERT_DIR", certDir.toString(), "X509_USER_CERT", dir.resolve("host.pem").toString(),
                "X509_USER_KEY", dir.resolve("host.key").toString(), "GRIDMAP", gridMap.toString());
    }

    private void sh(String... cmd) throws Exception {
        run(new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true), cmd[0]);
    }

    private String out(String... cmd) throws Exception {
        Process p = new ProcessBuilder(cmd).directory(dir.toFile()).start();
        String s = new String(p.getInputStream().readAllBytes());
        if (p.waitFor() != 0) throw new IllegalStateException(List.of(cmd) + " failed: " + new String(p.getErrorStream().readAllBytes()));
        return s;
    }

    private static void run(ProcessBuilder pb, String what) throws Exception {
        Process p = pb.start();
        String output = new String(p.getInputStream().readAllBytes());
        if (p.waitFor() != 0) throw new IllegalStateException(what + " failed: " + output + " " + new ArrayList<>(pb.command()));
    }
}
