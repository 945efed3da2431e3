package dev.stagehand.api;

import static dev.stagehand.api.Problems.assertProblem;
import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.ItCatalog;
import dev.stagehand.api.ApiClient.Answer;
import dev.stagehand.api.security.ApiAccounts;
import dev.stagehand.api.security.ApiRole;
import dev.stagehand.api.security.ApiTokens;
import dev.stagehand.catalog.CatalogImporter;
import dev.stagehand.transfer.GsiFixture;
import java.io.ByteArrayInputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.PKCS8EncodedKeySpec;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import tools.jackson.databind.JsonNode;

/**
 * X.509 client certificates and grid proxies over real TLS: the service serves HTTPS from a Spring Boot SSL
 * bundle with client-auth "want"; a throwaway CA (GsiFixture: openssl + grid-proxy-init) issues user
 * certificates and RFC 3820, legacy, limited, independent and second-level proxies; the grid-mapfile maps DNs
 * to accounts declared in configuration. Covers the mapping of proxies to their end-entity DN, an unknown DN,
 * a DN mapped to a missing account, a certificate with a mapped DN from an untrusted CA, a refused proxy
 * type, grid-mapfile edits without a restart, bearer tokens over HTTPS, and submissions owned by the mapped account.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
        "stagehand.recall.enabled=false", "server.ssl.bundle=api", "server.ssl.client-auth=want",
        "stagehand.security.accounts[0].name=jane-x509", "stagehand.security.accounts[0].role=operator",
        "stagehand.security.accounts[0].experiments[0]=x509exp"})
class ApiCertificateIT {

    static final String ORG = GsiFixture.ORG;
    static GsiFixture gsi;
    static Path gridMap;

    @DynamicPropertySource
    static void tls(DynamicPropertyRegistry registry) throws Exception {
        Path dir = Path.of("target", "api-x509-" + UUID.randomUUID().toString().substring(0, 8)).toAbsolutePath();
        gsi = GsiFixture.create(dir);
        gridMap = dir.resolve("api-grid-mapfile");
        Files.writeString(gridMap, """
                # DN -> accounts; the first is used
                "%s/CN=jane" jane-x509,someone-else
                "%s/CN=ghost" ghost-account
                """.formatted(ORG, ORG));
        registry.add("spring.ssl.bundle.pem.api.keystore.certificate", () -> "file:" + dir.resolve("host.pem"));
        registry.add("spring.ssl.bundle.pem.api.keystore.private-key", () -> "file:" + dir.resolve("host.key"));
        registry.add("stagehand.security.certificates", () -> gsi.certDir.toString());
        registry.add("stagehand.security.grid-mapfile", () -> gridMap.toString());
    }

    @LocalServerPort
    int port;
    @Autowired
    ApiTokens tokens;
    @Autowired
    ApiAccounts accounts;
    @Autowired
    CatalogImporter importer;

    // ---- credentials made with the fixture's CA ----

    /** A user's certificate and key (made once per name). */
    static synchronized Path userCert(String name) throws Exception {
        if (!Files.exists(gsi.dir.resolve(name + ".pem"))) gsi.user(name, false);
        return gsi.dir.resolve(name + ".pem");
    }

    /** A proxy made by grid-proxy-init with these options from {@code name}'s certificate (or from another proxy). */
    static Path proxy(String name, String cert, String key, String out, String... options) throws Exception {
        userCert(name);
        List<String> cmd = new ArrayList<>(List.of("grid-proxy-init", "-q", "-cert", cert, "-key", key, "-out", out, "-hours", "2"));
        cmd.addAll(List.of(options));
        ProcessBuilder pb = new ProcessBuilder(cmd).directory(gsi.dir.toFile()).redirectErrorStream(true);
        pb.environment().put("X509_CERT_DIR", gsi.certDir.toString());
        Process p = pb.start();
        String output = new String(p.getInputStream().readAllBytes());
        assertThat(p.waitFor()).as(cmd + ": " + output).isZero();
        return gsi.dir.resolve(out);
    }

    /** An HTTPS client presenting the certificates and key in {@code pem} (leaf first), or none. */
    HttpsClient client(Path... pems) throws Exception {
        List<X509Certificate> chain = new ArrayList<>();
        PrivateKey key = null;
        for (Path pem : pems) {
            String text = Files.readString(pem);
            Matcher m = Pattern.compile("-----BEGIN ([A-Z ]+)-----(.*?)-----END \\1-----", Pattern.DOTALL).matcher(text);
            while (m.find()) {
                byte[] der = Base64.getMimeDecoder().decode(m.group(2));
                if (m.group(1).equals("CERTIFICATE")) {
                    chain.add((X509Certificate) CertificateFactory.getInstance("X.509").generateCertificate(new ByteArrayInputStream(der)));
                } else if (m.group(1).equals("PRIVATE KEY") && key == null) {
                    key = KeyFactory.getInstance("RSA").generatePrivate(new PKCS8EncodedKeySpec(der));
                }
            }
        }
        KeyStore ks = KeyStore.getInstance("PKCS12");
        ks.load(null, null);
        if (key != null) ks.setKeyEntry("me", key, "pw".toCharArray(), chain.toArray(Certificate[]::new));
        KeyManagerFactory kmf = KeyManagerFactory.getInstance("SunX509"); // presents the chain as it is, proxies included
        kmf.init(ks, "pw".toCharArray());
        KeyStore trust = KeyStore.getInstance("PKCS12");
        trust.load(null, null);
        try (var in = Files.newInputStream(gsi.dir.resolve("ca.pem"))) {
            trust.setCertificateEntry("ca", CertificateFactory.getInstance("X.509").generateCertificate(in));
        }
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(trust);
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(key == null ? null : kmf.getKeyManagers(), tmf.getTrustManagers(), null);
        return new HttpsClient(HttpClient.newBuilder().sslContext(ctx).version(HttpClient.Version.HTTP_1_1).build(), null);
    }

    record HttpsClient(HttpClient http, String token) {
        HttpsClient withToken(String t) {
            return new HttpsClient(http, t);
        }
    }

    Answer get(HttpsClient c, String path) throws Exception {
        var b = HttpRequest.newBuilder(URI.create("https://localhost:" + port + path)).GET();
        return send(c, b);
    }

    Answer post(HttpsClient c, String path, String body) throws Exception {
        var b = HttpRequest.newBuilder(URI.create("https://localhost:" + port + path)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body));
        return send(c, b);
    }

    private static Answer send(HttpsClient c, HttpRequest.Builder b) throws Exception {
        if (c.token() != null) b.header("Authorization", "Bearer " + c.token());
        HttpResponse<String> r = c.http().send(b.build(), HttpResponse.BodyHandlers.ofString());
        JsonNode json = null;
        try {
            json = r.body().isEmpty() ? null : ApiClient.JSON.readTree(r.body());
        } catch (RuntimeException notJson) {
            // asserted where JSON is expected
        }
        return new Answer(r.statusCode(), r.headers().firstValue("Content-Type").orElse(""), r.body(), json,
                r.headers().firstValue("Location").orElse(null), r.headers().firstValue("WWW-Authenticate").orElse(null));
    }

    void assertMappedToJane(Answer a) {
        assertThat(a.status()).as(a.body()).isEqualTo(200);
        assertThat(a.json().get("account").stringValue()).isEqualTo("jane-x509"); // the first account of the line
        assertThat(a.json().get("role").stringValue()).isEqualTo("operator");
        assertThat(a.json().get("authenticatedBy").stringValue()).isEqualTo("x509");
        assertThat(a.json().get("dn").stringValue()).isEqualTo(ORG + "/CN=jane"); // the proxy CNs are not part of it
    }

    // ---- tests ----

    @Test
    void proxiesOfAMappedUserMapToTheEndEntityDn() throws Exception {
        userCert("jane");
        // RFC 3820 proxy, as made by the fixture (proxy certificate, its key, the user certificate)
        assertMappedToJane(get(client(gsi.dir.resolve("jane-proxy-pkcs8.pem")), "/api/v1/whoami"));
        // the user certificate itself
        assertMappedToJane(get(client(gsi.dir.resolve("jane.pem"), gsi.dir.resolve("jane.key")), "/api/v1/whoami"));
        // legacy Globus proxy (CN=proxy), limited proxy, and a proxy signed by a proxy
        assertMappedToJane(get(client(proxy("jane", "jane.pem", "jane.key", "jane-legacy.pem", "-old")), "/api/v1/whoami"));
        assertMappedToJane(get(client(proxy("jane", "jane.pem", "jane.key", "jane-limited.pem", "-rfc", "-limited")), "/api/v1/whoami"));
        Path first = gsi.dir.resolve("jane-proxy-pkcs8.pem");
        Path second = proxy("jane", first.toString(), first.toString(), "jane-proxy2.pem", "-rfc");
        Answer twoLevels = get(client(second), "/api/v1/whoami");
        assertMappedToJane(twoLevels);
    }

    @Test
    void refusedChainsAndDnsGetClearProblems() throws Exception {
        // an independent proxy does not carry its issuer's identity
        Path independent = proxy("jane", "jane.pem", "jane.key", "jane-independent.pem", "-rfc", "-independent");
        assertProblem(get(client(independent), "/api/v1/whoami"), 401, "policy");
        // a proxy allowing one further proxy (path length 1; grid-proxy-init takes 0 as "no limit"): its child is
        // accepted, a grandchild is not
        Path one = proxy("jane", "jane.pem", "jane.key", "jane-pl1.pem", "-rfc", "-path-length", "1");
        Path child = proxy("jane", one.toString(), one.toString(), "jane-pl1-child.pem", "-rfc");
        assertMappedToJane(get(client(child), "/api/v1/whoami"));
        Path grandchild = proxy("jane", child.toString(), child.toString(), "jane-pl1-grandchild.pem", "-rfc");
        assertProblem(get(client(grandchild), "/api/v1/whoami"), 401, "allows 1 further proxies");
        // a DN missing from the grid-mapfile, even with a valid proxy
        userCert("eve");
        Answer eve = get(client(gsi.dir.resolve("eve-proxy-pkcs8.pem")), "/api/v1/whoami");
        assertProblem(eve, 403, ORG + "/CN=eve", "grid-mapfile");
        assertProblem(post(client(gsi.dir.resolve("eve-proxy-pkcs8.pem")), "/api/v1/stage", "{\"files\": []}"), 403, "grid-mapfile");
        // a mapped DN whose account does not exist
        userCert("ghost");
        assertProblem(get(client(gsi.dir.resolve("ghost-proxy-pkcs8.pem")), "/api/v1/whoami"), 403, "ghost-account", "does not exist");
        // jane's DN, issued by a CA the service does not trust
        Path other = gsi.dir.resolve("other-ca");
        Files.createDirectories(other);
        sh(other, "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256", "-days", "2", "-keyout", "ca.key", "-out", "ca.pem",
                "-subj", ORG + "/CN=Rogue CA", "-addext", "basicConstraints=critical,CA:true", "-addext", "keyUsage=critical,keyCertSign,cRLSign");
        sh(other, "openssl", "req", "-newkey", "rsa:2048", "-nodes", "-sha256", "-keyout", "jane.key", "-out", "jane.csr", "-subj", ORG + "/CN=jane");
        Files.writeString(other.resolve("ext"), "basicConstraints=CA:false\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n");
        sh(other, "openssl", "x509", "-req", "-in", "jane.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-sha256",
                "-days", "2", "-out", "jane.pem", "-extfile", "ext");
        Answer forged = get(client(other.resolve("jane.pem"), other.resolve("jane.key")), "/api/v1/whoami");
        assertProblem(forged, 401, "not trusted");
        assertThat(forged.wwwAuthenticate()).startsWith("Bearer");
    }

    @Test
    void withoutACertificateHttpsWantsABearerToken() throws Exception {
        HttpsClient none = client();
        Answer a = get(none, "/api/v1/requests");
        assertProblem(a, 401, "bearer token");
        assertThat(a.wwwAuthenticate()).startsWith("Bearer");
        Answer admin = get(none.withToken(tokens.create(ApiAccounts.ADMIN, "https test", null, "it").token()), "/api/v1/whoami");
        assertThat(admin.status()).isEqualTo(200);
        assertThat(admin.json().get("account").stringValue()).isEqualTo("admin");
        assertThat(admin.json().get("authenticatedBy").stringValue()).isEqualTo("token");
    }

    @Test
    void gridMapfileEditsApplyWithoutARestart() throws Exception {
        userCert("frank");
        HttpsClient frank = client(gsi.dir.resolve("frank-proxy-pkcs8.pem"));
        assertProblem(get(frank, "/api/v1/whoami"), 403, ORG + "/CN=frank");
        accounts.put("frank-acc", ApiRole.VIEWER, List.of("x509exp"));
        synchronized (ApiCertificateIT.class) {
            Files.writeString(gridMap, Files.readString(gridMap) + "\"" + ORG + "/CN=frank\" frank-acc\n");
            Files.setLastModifiedTime(gridMap, FileTime.from(Instant.now().plusSeconds(5)));
        }
        Answer now = get(frank, "/api/v1/whoami");
        assertThat(now.status()).as(now.body()).isEqualTo(200);
        assertThat(now.json().get("account").stringValue()).isEqualTo("frank-acc");
        assertThat(now.json().get("role").stringValue()).isEqualTo("viewer");
    }

    @Test
    void aRequestSubmittedWithAProxyIsOwnedByTheMappedAccountAndScopedToItsExperiment() throws Exception {
        userCert("jane");
        HttpsClient jane = client(gsi.dir.resolve("jane-proxy-pkcs8.pem"));
        ItCatalog mine = ItCatalog.load(importer, 3, "x509exp");
        ItCatalog theirs = ItCatalog.load(importer, 3, "x509other");
        Answer created = post(jane, "/api/v1/stage", ApiClient.json(Map.of("files", List.of(Map.of("path", mine.files.get(0))))));
        assertThat(created.status()).as(created.body()).isEqualTo(201);
        String id = created.json().get("requestId").stringValue();
        Answer native_ = get(jane, "/api/v1/requests/" + id);
        assertThat(native_.json().get("request").get("owner").stringValue()).isEqualTo("jane-x509");
        assertThat(native_.json().get("request").get("experiment").stringValue()).isEqualTo("x509exp");
        Answer refused = post(jane, "/api/v1/requests", ApiClient.json(Map.of("files", theirs.files)));
        assertProblem(refused, 400);
        assertThat(refused.json().get("errors").size()).isEqualTo(3);
        refused.json().get("errors").forEach(e -> assertThat(e.get("reason").stringValue()).isEqualTo("not in the catalog"));
    }

    @Test
    void aCertificateOnItsCasRevocationListIsRefused() throws Exception {
        userCert("mallory");
        Files.writeString(gridMap, Files.readString(gridMap) + "\"" + ORG + "/CN=mallory\" jane-x509\n");
        Path malloryCert = gsi.dir.resolve("mallory.pem"), malloryKey = gsi.dir.resolve("mallory.key");
        // no CRL yet: accepted (crl-mode if-valid)
        assertThat(get(client(malloryCert, malloryKey), "/api/v1/whoami").status()).isEqualTo(200);

        // the CA revokes mallory's certificate; its CRL is installed as fetch-crl does: written aside, renamed in
        Path caCert = gsi.dir.resolve("ca.pem");
        var ca = new dev.stagehand.api.security.OpensslCrls(gsi.dir.resolve("revocations"), gsi.dir.resolve("ca.key"), caCert);
        ca.revoke(malloryCert);
        Path crl = ca.crl("crl.pem");
        String hash = new String(new ProcessBuilder("openssl", "x509", "-hash", "-noout", "-in", caCert.toString()).start()
                .getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        Path aside = gsi.certDir.resolve(hash + ".r0.tmp-fetch-crl");
        Files.copy(crl, aside);
        Files.move(aside, gsi.certDir.resolve(hash + ".r0"), java.nio.file.StandardCopyOption.ATOMIC_MOVE);

        // the certificate and a proxy made from it are refused; another certificate of that CA is not
        assertProblem(get(client(malloryCert, malloryKey), "/api/v1/whoami"), 401, ORG + "/CN=mallory", "revoked");
        assertProblem(get(client(gsi.dir.resolve("mallory-proxy-pkcs8.pem")), "/api/v1/whoami"), 401, "revoked");
        userCert("jane");
        assertMappedToJane(get(client(gsi.dir.resolve("jane.pem"), gsi.dir.resolve("jane.key")), "/api/v1/whoami"));
    }

    private static void sh(Path dir, String... cmd) throws Exception {
        Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor()).as(List.of(cmd) + ": " + out).isZero();
    }
}
