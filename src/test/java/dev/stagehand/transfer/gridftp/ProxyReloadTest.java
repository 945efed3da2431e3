package dev.stagehand.transfer.gridftp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.stagehand.transfer.MoverSettings;
import dev.stagehand.transfer.TransferFailure;
import java.io.OutputStream;
import java.math.BigInteger;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.Date;
import javax.security.auth.x500.X500Principal;
import org.bouncycastle.x509.X509V3CertificateGenerator;
import org.globus.gsi.X509Credential;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The mover reads the X.509 proxy again when cron (or a renewal service) writes a fresh one, and names the
 * file and its expiry when the proxy on disk has run out, instead of failing every gsiftp file until a restart.
 */
class ProxyReloadTest {

    @TempDir
    Path dir;

    private static KeyPair keys;

    /** A self-signed credential in the PEM form jglobus reads (traditional RSA key): enough to load it. */
    static void write(Path file, String cn, Instant notBefore, Instant notAfter) throws Exception {
        if (keys == null) {
            KeyPairGenerator g = KeyPairGenerator.getInstance("RSA");
            g.initialize(1024);
            keys = g.generateKeyPair();
        }
        X509V3CertificateGenerator g = new X509V3CertificateGenerator();
        X500Principal name = new X500Principal("CN=" + cn + ", O=Stagehand Test");
        g.setSerialNumber(BigInteger.valueOf(System.nanoTime()));
        g.setIssuerDN(name);
        g.setSubjectDN(name);
        g.setNotBefore(Date.from(notBefore));
        g.setNotAfter(Date.from(notAfter));
        g.setPublicKey(keys.getPublic());
        g.setSignatureAlgorithm("SHA256withRSA");
        X509Certificate cert = g.generate(keys.getPrivate());
        try (OutputStream out = Files.newOutputStream(file)) {
            new X509Credential(keys.getPrivate(), new X509Certificate[] {cert}).save(out);
        }
    }

    GridFtpMover mover(Path proxy) {
        return new GridFtpMover(MoverSettings.defaults().withSecurity(true, "SELF", proxy.toString(), dir.toString()), null);
    }

    @Test
    void aProxyRewrittenOnDiskIsUsedWithoutARestart() throws Exception {
        Path proxy = dir.resolve("x509up");
        Instant now = Instant.now();
        write(proxy, "first", now.minusSeconds(60), now.plus(Duration.ofHours(12)));
        GridFtpMover mover = mover(proxy);
        try {
            assertThat(mover.credential().getName().toString()).contains("first");
            write(proxy, "renewed", now.minusSeconds(60), now.plus(Duration.ofHours(12)));
            Files.setLastModifiedTime(proxy, FileTime.from(now.plusSeconds(5))); // cron's rewrite, a moment later
            assertThat(mover.credential().getName().toString()).contains("renewed");
        } finally {
            mover.close();
        }
    }

    @Test
    void aProxyNearItsEndIsReadAgainEvenIfItsFileTimeDidNotChange() throws Exception {
        Path proxy = dir.resolve("x509up");
        Instant now = Instant.now();
        write(proxy, "ending", now.minusSeconds(60), now.plus(Duration.ofMinutes(5)));
        FileTime written = Files.getLastModifiedTime(proxy);
        GridFtpMover mover = mover(proxy);
        try {
            assertThat(mover.credential().getName().toString()).contains("ending");
            write(proxy, "fresh", now.minusSeconds(60), now.plus(Duration.ofHours(12)));
            Files.setLastModifiedTime(proxy, written); // e.g. copied with its time kept
            assertThat(mover.credential().getName().toString()).contains("fresh");
        } finally {
            mover.close();
        }
    }

    @Test
    void anExpiredProxyOnDiskFailsNamingTheFileAndItsExpiry() throws Exception {
        Path proxy = dir.resolve("x509up");
        Instant now = Instant.now();
        write(proxy, "valid", now.minusSeconds(60), now.plus(Duration.ofHours(12)));
        GridFtpMover mover = mover(proxy);
        try {
            mover.credential();
            Instant expired = now.minus(Duration.ofHours(1)).truncatedTo(java.time.temporal.ChronoUnit.SECONDS);
            write(proxy, "old", now.minus(Duration.ofHours(13)), expired);
            Files.setLastModifiedTime(proxy, FileTime.from(now.plusSeconds(5)));
            assertThatThrownBy(mover::credential).isInstanceOfSatisfying(TransferFailure.class, f -> {
                assertThat(f.kind()).isEqualTo(TransferFailure.Kind.AUTHENTICATION);
                assertThat(f.getMessage()).contains(proxy.toString()).contains("expired at " + expired);
            });
        } finally {
            mover.close();
        }
    }

    @Test
    void aProxyFileCaughtHalfWrittenLeavesTheLoadedProxyInUse() throws Exception {
        Path proxy = dir.resolve("x509up");
        Instant now = Instant.now();
        write(proxy, "loaded", now.minusSeconds(60), now.plus(Duration.ofHours(12)));
        GridFtpMover mover = mover(proxy);
        try {
            assertThat(mover.credential().getName().toString()).contains("loaded");
            Files.writeString(proxy, "-----BEGIN CERTIFICATE-----\nMIIB"); // cron's rewrite, caught mid-way
            Files.setLastModifiedTime(proxy, FileTime.from(now.plusSeconds(5)));
            assertThat(mover.credential().getName().toString()).contains("loaded");
            write(proxy, "renewed", now.minusSeconds(60), now.plus(Duration.ofHours(12)));
            Files.setLastModifiedTime(proxy, FileTime.from(now.plusSeconds(10)));
            assertThat(mover.credential().getName().toString()).contains("renewed");
        } finally {
            mover.close();
        }
    }
}
