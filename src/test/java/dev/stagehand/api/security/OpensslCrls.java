package dev.stagehand.api.security;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** A test CA's revocations with {@code openssl ca}: its database in a directory, revoked certificates, CRLs. */
public final class OpensslCrls {

    private final Path dir;
    private final String caKey, caCert;

    public OpensslCrls(Path dir, Path caKey, Path caCert) throws Exception {
        this.dir = Files.createDirectories(dir);
        this.caKey = caKey.toAbsolutePath().toString();
        this.caCert = caCert.toAbsolutePath().toString();
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
    }

    public void revoke(Path cert) throws Exception {
        openssl("-revoke", cert.toAbsolutePath().toString());
    }

    /** A CRL listing what was revoked so far, written to {@code name} in the directory. */
    public Path crl(String name) throws Exception {
        openssl("-gencrl", "-out", name);
        return dir.resolve(name);
    }

    private void openssl(String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("openssl", "ca", "-config", "ca.cnf", "-keyfile", caKey, "-cert", caCert));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor()).as(cmd + ": " + out).isZero();
    }
}
