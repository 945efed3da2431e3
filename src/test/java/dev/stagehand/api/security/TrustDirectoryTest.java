package dev.stagehand.api.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.stagehand.api.security.ProxyChainValidator.CrlMode;
import dev.stagehand.api.security.ProxyChainValidator.NamespaceMode;
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

/**
 * The CA directory's CRLs and signing policies, on a throwaway CA made with openssl: the three CRL modes with
 * no CRL, an empty CRL and one revoking a user; the three namespace modes with and without a signing policy.
 */
class TrustDirectoryTest {

    @TempDir
    static Path dir;
    static Path certs;
    static String hash;
    static X509Certificate alice, bob, outsider;

    @BeforeAll
    static void ca() throws Exception {
        certs = Files.createDirectories(dir.resolve("certificates"));
        sh("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256", "-days", "2", "-keyout", "ca.key",
                "-out", "ca.pem", "-subj", "/DC=org/DC=test/CN=CRL Test CA");
        hash = sh("openssl", "x509", "-hash", "-noout", "-in", "ca.pem").strip();
        Files.copy(dir.resolve("ca.pem"), certs.resolve(hash + ".0"));
        alice = user("alice");
        bob = user("bob");
        outsider = user("outsider", "/DC=org/DC=elsewhere/CN=outsider");
        Files.writeString(dir.resolve("policy"), """
                # the CA may sign names under /DC=org/DC=test only
                access_id_CA X509 '/DC=org/DC=test/CN=CRL Test CA'
                pos_rights globus CA:sign
                cond_subjects globus '"/DC=org/DC=test/*"'
                """);
        OpensslCrls crls = new OpensslCrls(dir, dir.resolve("ca.key"), dir.resolve("ca.pem"));
        crls.crl("empty-crl.pem");
        crls.revoke(dir.resolve("bob.pem"));
        crls.crl("bob-revoked-crl.pem");
    }

    static X509Certificate user(String name) throws Exception {
        return user(name, "/DC=org/DC=test/CN=" + name);
    }

    static X509Certificate user(String name, String subject) throws Exception {
        sh("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-sha256", "-keyout", name + ".key", "-out", name + ".csr",
                "-subj", subject);
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

    /** A fresh trust directory with the CA, {@code crl} as its CRL (null: none) and its signing policy or not. */
    static Path trustDir(String crl, boolean policy) throws Exception {
        Path d = Files.createTempDirectory(dir, "trust");
        Files.copy(certs.resolve(hash + ".0"), d.resolve(hash + ".0"));
        if (crl != null) Files.copy(dir.resolve(crl), d.resolve(hash + ".r0"));
        if (policy) Files.copy(dir.resolve("policy"), d.resolve(hash + ".signing_policy"));
        return d;
    }

    static Path trustDirWith(String crl) throws Exception {
        return trustDir(crl, false);
    }

    static String validate(Path trust, CrlMode mode, X509Certificate user) throws CertificateException {
        return validate(trust, mode, NamespaceMode.IF_PRESENT, user);
    }

    static String validate(Path trust, CrlMode crl, NamespaceMode namespaces, X509Certificate user) throws CertificateException {
        return new ProxyChainValidator(trust, true, crl, namespaces).validate(new X509Certificate[] {user}).dn();
    }

    @Test
    void aSigningPolicyConfinesItsCaToItsNamespace() throws Exception {
        Path withPolicy = trustDir(null, true);
        assertThat(validate(withPolicy, CrlMode.IF_VALID, NamespaceMode.IF_PRESENT, alice)).isEqualTo("/DC=org/DC=test/CN=alice");
        assertThatThrownBy(() -> validate(withPolicy, CrlMode.IF_VALID, NamespaceMode.IF_PRESENT, outsider))
                .hasMessageContaining("/DC=org/DC=elsewhere/CN=outsider").hasMessageContaining("outside the namespace");
        assertThat(validate(withPolicy, CrlMode.IF_VALID, NamespaceMode.IGNORE, outsider)).endsWith("/CN=outsider");
        // no policy: if-present lets the CA sign any name, require refuses it
        Path without = trustDir(null, false);
        assertThat(validate(without, CrlMode.IF_VALID, NamespaceMode.IF_PRESENT, outsider)).endsWith("/CN=outsider");
        assertThatThrownBy(() -> validate(without, CrlMode.IF_VALID, NamespaceMode.REQUIRE, alice))
                .hasMessageContaining("has no signing policy");
        assertThat(validate(withPolicy, CrlMode.IF_VALID, NamespaceMode.REQUIRE, alice)).endsWith("/CN=alice");
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
