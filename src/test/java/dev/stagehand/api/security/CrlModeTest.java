package dev.stagehand.api.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.stagehand.api.security.ProxyChainValidator.CrlMode;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The three CRL modes on a throwaway CA made with openssl: no CRL, an empty CRL, a CRL revoking one user. */
class CrlModeTest {

    @TempDir
    static Path dir;
    static Path certs;
    static String hash;
    static X509Certificate alice, bob;

    @BeforeAll
    static void ca() throws Exception {
        certs = Files.createDirectories(dir.resolve("certificates"));
        sh("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256", "-days", "2", "-keyout", "ca.key",
                "-out", "ca.pem", "-subj", "/DC=org/DC=test/CN=CRL Test CA");
        hash = sh("openssl", "x509", "-hash", "-noout", "-in", "ca.pem").strip();
        Files.copy(dir.resolve("ca.pem"), certs.resolve(hash + ".0"));
        alice = user("alice");
        bob = user("bob");
        Files.writeString(dir.resolve("ca.cnf"), """
                [ ca ]
                default_ca = test_ca
                [ test_ca ]
                database = index.txt
                crlnumber = crlnumber
                default_md = sha256
                default_crl_days = 2
                """);
        Files.writeString(dir.resolve("index.txt"), "");
        Files.writeString(dir.resolve("crlnumber"), "01\n");
        sh("openssl", "ca", "-config", "ca.cnf", "-gencrl", "-keyfile", "ca.key", "-cert", "ca.pem", "-out", "empty-crl.pem");
        sh("openssl", "ca", "-config", "ca.cnf", "-revoke", "bob.pem", "-keyfile", "ca.key", "-cert", "ca.pem");
        sh("openssl", "ca", "-config", "ca.cnf", "-gencrl", "-keyfile", "ca.key", "-cert", "ca.pem", "-out", "bob-revoked-crl.pem");
    }

    static X509Certificate user(String name) throws Exception {
        sh("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-sha256", "-keyout", name + ".key", "-out", name + ".csr",
                "-subj", "/DC=org/DC=test/CN=" + name);
        sh("openssl", "x509", "-req", "-in", name + ".csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                "-sha256", "-days", "2", "-out", name + ".pem");
        try (InputStream in = Files.newInputStream(dir.resolve(name + ".pem"))) {
            return (X509Certificate) CertificateFactory.getInstance("X.509").generateCertificate(in);
        }
    }

    static String sh(String... cmd) throws Exception {
        Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor()).as(List.of(cmd) + ": " + out).isZero();
        return out;
    }

    /** Installs {@code crl} as the CA's CRL (null: none), in a fresh trust directory so the validator reads it. */
    static Path trustDirWith(String crl) throws Exception {
        Path d = Files.createTempDirectory(dir, "trust");
        Files.copy(certs.resolve(hash + ".0"), d.resolve(hash + ".0"));
        if (crl != null) Files.copy(dir.resolve(crl), d.resolve(hash + ".r0"));
        return d;
    }

    static String validate(Path trust, CrlMode mode, X509Certificate user) throws CertificateException {
        return new ProxyChainValidator(trust, true, mode).validate(new X509Certificate[] {user}).dn();
    }

    @Test
    void ifValidChecksACurrentCrlAndAcceptsACaWithoutOne() throws Exception {
        assertThat(validate(trustDirWith(null), CrlMode.IF_VALID, bob)).isEqualTo("/DC=org/DC=test/CN=bob");
        Path revoked = trustDirWith("bob-revoked-crl.pem");
        assertThatThrownBy(() -> validate(revoked, CrlMode.IF_VALID, bob)).hasMessageContaining("revoked")
                .hasMessageContaining("/CN=bob");
        assertThat(validate(revoked, CrlMode.IF_VALID, alice)).isEqualTo("/DC=org/DC=test/CN=alice");
    }

    @Test
    void requireRefusesACaWithoutACrl() throws Exception {
        assertThatThrownBy(() -> validate(trustDirWith(null), CrlMode.REQUIRE, alice)).isInstanceOf(CertificateException.class)
                .hasMessageContaining("not trusted");
        assertThat(validate(trustDirWith("empty-crl.pem"), CrlMode.REQUIRE, alice)).isEqualTo("/DC=org/DC=test/CN=alice");
        assertThatThrownBy(() -> validate(trustDirWith("bob-revoked-crl.pem"), CrlMode.REQUIRE, bob)).hasMessageContaining("revoked");
    }

    @Test
    void ignoreAcceptsARevokedCertificate() throws Exception {
        assertThat(validate(trustDirWith("bob-revoked-crl.pem"), CrlMode.IGNORE, bob)).isEqualTo("/DC=org/DC=test/CN=bob");
    }
}
