package dev.stagehand.api;

import static dev.stagehand.api.Problems.assertProblem;
import static org.assertj.core.api.Assertions.assertThat;

import com.nimbusds.jose.JOSEObjectType;
import com.nimbusds.jose.JWSAlgorithm;
import com.nimbusds.jose.JWSHeader;
import com.nimbusds.jose.crypto.ECDSASigner;
import com.nimbusds.jose.crypto.RSASSASigner;
import com.nimbusds.jose.jwk.Curve;
import com.nimbusds.jose.jwk.ECKey;
import com.nimbusds.jose.jwk.JWK;
import com.nimbusds.jose.jwk.JWKSet;
import com.nimbusds.jose.jwk.RSAKey;
import com.nimbusds.jose.jwk.gen.ECKeyGenerator;
import com.nimbusds.jose.jwk.gen.RSAKeyGenerator;
import com.nimbusds.jwt.JWTClaimsSet;
import com.nimbusds.jwt.SignedJWT;
import com.sun.net.httpserver.HttpServer;
import dev.stagehand.ItCatalog;
import dev.stagehand.api.ApiClient.Answer;
import dev.stagehand.api.security.ApiAccounts;
import dev.stagehand.api.security.ApiRole;
import dev.stagehand.catalog.CatalogImporter;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Date;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import tools.jackson.databind.JsonNode;

/**
 * WLCG JWT bearer tokens over real HTTP, from two token issuers served by a loopback HTTP server (OIDC discovery and
 * JWKS, as an INDIGO IAM publishes them): one found by discovery, mapping {@code wlcg.groups} to accounts, the
 * other with its key set configured, a default account and a base path. Covers group mapping, signature,
 * expiry, audience, unknown issuers and keys, key rotation without a restart, EC keys, storage scopes limiting
 * the calls and the paths a token may stage and read, and tokens that map to no account.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = "stagehand.recall.enabled=false")
class ApiJwtIT {

    static final String AUDIENCE = "https://tape.example.org";
    static final AtomicReference<JWKSet> iamKeys = new AtomicReference<>();
    static final AtomicInteger keyFetches = new AtomicInteger();
    static final RSAKey iamKey = rsa("iam-1"), otherKey = rsa("other-1");
    static HttpServer server;
    static String iam, other;

    @DynamicPropertySource
    static void issuers(DynamicPropertyRegistry registry) throws Exception {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        String base = "http://127.0.0.1:" + server.getAddress().getPort();
        iam = base + "/iam/";
        other = base + "/other";
        iamKeys.set(new JWKSet(iamKey.toPublicJWK()));
        serve("/iam/.well-known/openid-configuration", () -> "{\"issuer\": \"" + iam + "\", \"jwks_uri\": \"" + base + "/iam/jwk\"}");
        serve("/iam/jwk", () -> {
            keyFetches.incrementAndGet();
            return iamKeys.get().toString();
        });
        serve("/other/keys", () -> new JWKSet(List.of(otherKey.toPublicJWK(), ecKey.toPublicJWK())).toString());
        server.start();
        // all here: a list bound from two property sources would take only the higher one's entries
        String key = "stagehand.security.token-issuers";
        registry.add(key + "[0].issuer", () -> iam);
        registry.add(key + "[0].audiences[0]", () -> AUDIENCE);
        registry.add(key + "[0].groups[0].group", () -> "/jwtexp/production");
        registry.add(key + "[0].groups[0].account", () -> "jwt-prod");
        registry.add(key + "[0].groups[1].group", () -> "/jwtexp");
        registry.add(key + "[0].groups[1].account", () -> "jwt-user");
        registry.add(key + "[1].issuer", () -> other);
        registry.add(key + "[1].jwks", () -> base + "/other/keys");
        registry.add(key + "[1].account", () -> "jwt-default");
        registry.add(key + "[1].base-path", () -> "/it");
    }

    static final ECKey ecKey = ec("other-ec");

    static void serve(String path, java.util.function.Supplier<String> body) {
        server.createContext(path, x -> {
            byte[] b = body.get().getBytes(StandardCharsets.UTF_8);
            x.getResponseHeaders().add("Content-Type", "application/json");
            x.sendResponseHeaders(200, b.length);
            x.getResponseBody().write(b);
            x.close();
        });
    }

    @AfterAll
    static void stop() {
        if (server != null) server.stop(0);
    }

    @LocalServerPort
    int port;
    @Autowired
    CatalogImporter importer;
    @Autowired
    ApiAccounts accounts;
    @Autowired
    JdbcTemplate jdbc;

    final String experiment = "jwtexp-" + UUID.randomUUID().toString().substring(0, 8);
    ItCatalog catalog, sibling;

    @BeforeEach
    void setUp() {
        accounts.put("jwt-prod", ApiRole.OPERATOR, List.of(experiment));
        accounts.put("jwt-user", ApiRole.VIEWER, List.of(experiment));
        accounts.put("jwt-default", ApiRole.ADMIN, List.of(experiment));
        catalog = ItCatalog.load(importer, 4, experiment);
        sibling = ItCatalog.load(importer, 2, experiment);
    }

    // ---- tokens ----

    static RSAKey rsa(String kid) {
        try {
            return new RSAKeyGenerator(2048).keyID(kid).generate();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    static ECKey ec(String kid) {
        try {
            return new ECKeyGenerator(Curve.P_256).keyID(kid).generate();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    static JWTClaimsSet.Builder claims(String issuer, String audience) {
        Instant now = Instant.now();
        return new JWTClaimsSet.Builder().issuer(issuer).subject("user-" + UUID.randomUUID()).audience(audience)
                .issueTime(Date.from(now)).expirationTime(Date.from(now.plusSeconds(600))).jwtID(UUID.randomUUID().toString())
                .claim("wlcg.ver", "1.0");
    }

    static String sign(JWK key, JWTClaimsSet claims) {
        try {
            boolean rsa = key instanceof RSAKey;
            SignedJWT jwt = new SignedJWT(new JWSHeader.Builder(rsa ? JWSAlgorithm.RS256 : JWSAlgorithm.ES256).keyID(key.getKeyID())
                    .type(JOSEObjectType.JWT).build(), claims);
            jwt.sign(rsa ? new RSASSASigner((RSAKey) key) : new ECDSASigner((ECKey) key));
            return jwt.serialize();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    ApiClient with(String token) {
        return new ApiClient(port, token);
    }

    ApiClient iamToken(String scope, String... groups) {
        JWTClaimsSet.Builder c = claims(iam, AUDIENCE).claim("wlcg.groups", List.of(groups));
        if (scope != null) c.claim("scope", scope);
        return with(sign(iamKey, c.build()));
    }

    static String stage(List<String> files) {
        return ApiClient.json(Map.of("files", files.stream().map(f -> Map.of("path", f)).toList()));
    }

    // ---- tests ----

    @Test
    void aTokenOfADiscoveredIssuerActsAsTheAccountOfItsFirstMappedGroup() {
        ApiClient prod = iamToken("openid", "/jwtexp", "/jwtexp/production");
        Answer me = prod.get("/api/v1/whoami");
        assertThat(me.status()).as(me.body()).isEqualTo(200);
        assertThat(me.json().get("account").stringValue()).isEqualTo("jwt-prod"); // the first listed mapping that matches
        assertThat(me.json().get("authenticatedBy").stringValue()).isEqualTo("jwt");
        assertThat(me.json().get("jwt").get("issuer").stringValue()).isEqualTo(iam);
        assertThat(me.json().get("jwt").get("scopes").isNull()).isTrue(); // no storage scopes: the account's own rights
        Answer created = prod.post("/api/v1/stage", stage(catalog.files));
        assertThat(created.status()).as(created.body()).isEqualTo(201);
        String id = created.json().get("requestId").stringValue();
        assertThat(jdbc.queryForObject("SELECT owner FROM stage_request WHERE id = ?::uuid", String.class, id)).isEqualTo("jwt-prod");
        assertThat(prod.get("/api/v1/stage/" + id).status()).isEqualTo(200);

        ApiClient user = iamToken(null, "/jwtexp");
        assertThat(user.get("/api/v1/whoami").json().get("account").stringValue()).isEqualTo("jwt-user");
        assertThat(user.get("/api/v1/stage/" + id).status()).isEqualTo(200); // same experiment, a viewer
        assertProblem(user.post("/api/v1/stage", stage(catalog.files)), 403, "operator");
        assertThat(prod.delete("/api/v1/stage/" + id).status()).isEqualTo(200);
    }

    @Test
    void invalidTokensAre401WithTheReasonAndChangeNothing() {
        long before = jdbc.queryForObject("SELECT count(*) FROM stage_request WHERE experiment = ?", Long.class, experiment);
        Instant past = Instant.now().minusSeconds(3600);
        Map<String, String> cases = Map.of(
                sign(iamKey, claims(iam, AUDIENCE).claim("wlcg.groups", List.of("/jwtexp/production"))
                        .issueTime(Date.from(past.minusSeconds(600))).expirationTime(Date.from(past)).build()), "expired",
                sign(iamKey, claims(iam, "https://elsewhere.example.org").claim("wlcg.groups", List.of("/jwtexp/production")).build()),
                "audience",
                sign(rsa("iam-1"), claims(iam, AUDIENCE).claim("wlcg.groups", List.of("/jwtexp/production")).build()), "signature",
                sign(iamKey, claims("https://rogue.example.org/", AUDIENCE).build()), "not accepted here",
                sign(rsa("nobody-knows"), claims(other, WLCG_ANY).build()), "no matching key",
                sign(iamKey, claims(iam, AUDIENCE).claim("wlcg.groups", "/jwtexp/production").build()), "wlcg.groups");
        for (Map.Entry<String, String> c : cases.entrySet()) {
            Answer a = with(c.getKey()).post("/api/v1/stage", stage(catalog.files));
            assertProblem(a, 401);
            assertThat(a.json().get("detail").stringValue()).as(c.getValue()).containsIgnoringCase(c.getValue());
            assertThat(a.wwwAuthenticate()).contains("invalid_token");
        }
        // shaped like a JWT but not one
        assertProblem(with("eyJnot.a.jwt").get("/api/v1/whoami"), 401);
        assertThat(jdbc.queryForObject("SELECT count(*) FROM stage_request WHERE experiment = ?", Long.class, experiment)).isEqualTo(before);
    }

    static final String WLCG_ANY = "https://wlcg.cern.ch/jwt/v1/any";

    @Test
    void aRotatedKeyIsFetchedWithoutARestart() {
        assertThat(iamToken(null, "/jwtexp").get("/api/v1/whoami").status()).isEqualTo(200);
        RSAKey next = rsa("iam-2");
        iamKeys.set(new JWKSet(List.of(iamKey.toPublicJWK(), next.toPublicJWK())));
        int fetches = keyFetches.get();
        Answer a = with(sign(next, claims(iam, AUDIENCE).claim("wlcg.groups", List.of("/jwtexp")).build())).get("/api/v1/whoami");
        assertThat(a.status()).as(a.body()).isEqualTo(200);
        assertThat(keyFetches.get()).isGreaterThan(fetches); // an unknown key id made it read the key set again
    }

    @Test
    void storageScopesLimitCallsAndPathsBeneathTheIssuersBasePath() {
        String dir = catalog.prefix.substring("/it".length()); // the other issuer's base path is /it
        // the default account is an admin, but a token with storage scopes is at most an operator
        ApiClient stager = with(sign(otherKey, claims(other, WLCG_ANY).claim("scope", "openid storage.stage:" + dir).build()));
        Answer me = stager.get("/api/v1/whoami");
        assertThat(me.json().get("account").stringValue()).isEqualTo("jwt-default");
        assertThat(me.json().get("role").stringValue()).isEqualTo("operator");
        assertThat(me.json().get("jwt").get("scopes").get(0).stringValue()).isEqualTo("storage.stage:" + catalog.prefix);

        // a file outside the scope: 403 naming it, nothing submitted
        List<String> mixed = List.of(catalog.files.get(0), sibling.files.get(0));
        Answer refused = stager.post("/api/v1/stage", stage(mixed));
        assertProblem(refused, 403, "storage.stage");
        JsonNode entry = refused.json().get("errors").get(0);
        assertThat(entry.get("path").stringValue()).isEqualTo(sibling.files.get(0));
        assertThat(entry.get("reason").stringValue()).contains(catalog.prefix);
        assertThat(refused.json().get("errors").size()).isEqualTo(1);
        assertProblem(stager.post("/api/v1/requests", ApiClient.json(Map.of("files", mixed))), 403, "storage.stage");

        Answer ok = stager.post("/api/v1/stage", stage(catalog.files));
        assertThat(ok.status()).as(ok.body()).isEqualTo(201);
        String id = ok.json().get("requestId").stringValue();
        assertThat(stager.post("/api/v1/stage/" + id + "/cancel", ApiClient.json(Map.of("paths", catalog.files.subList(0, 1))))
                .status()).isEqualTo(200);

        // archiveinfo answers within the scope and names the scope for the rest
        Answer info = stager.post("/api/v1/archiveinfo", ApiClient.json(Map.of("paths", mixed)));
        assertThat(info.status()).as(info.body()).isEqualTo(200);
        assertThat(info.json().get(0).has("locality")).isTrue();
        assertThat(info.json().get(1).get("error").stringValue()).contains("storage.read");

        // calls scopes do not cover: an admin's account or not, they need the account's own credential
        assertProblem(stager.get("/api/v1/admin/accounts"), 403, "storage scopes");
        assertProblem(stager.post("/api/v1/replication/rules", "{}"), 403, "storage scopes");

        // read-only scope: a viewer that cannot stage
        ApiClient reader = with(sign(ecKey, claims(other, WLCG_ANY).claim("scope", "storage.read:/").build()));
        assertThat(reader.get("/api/v1/whoami").json().get("role").stringValue()).isEqualTo("viewer");
        assertThat(reader.get("/api/v1/stage/" + id).status()).isEqualTo(200);
        assertProblem(reader.post("/api/v1/stage", stage(catalog.files)), 403, "storage.stage");
        assertThat(stager.delete("/api/v1/stage/" + id).status()).isEqualTo(200);
    }

    /** The request's state and priority, and how many of its files are cancelled or released: what a refusal must leave. */
    String stateOf(String id) {
        return jdbc.queryForObject("""
                SELECT r.state || ' p' || r.priority || ' c' || count(*) FILTER (WHERE f.state = 'cancelled')
                       || ' r' || count(*) FILTER (WHERE f.released)
                  FROM stage_request r JOIN stage_request_file f ON f.request_id = r.id WHERE r.id = ?::uuid
                 GROUP BY r.id""", String.class, id);
    }

    /** 403 naming the scope needed, the token's scope path and {@code outside}, with one error entry per such file. */
    static void assertOutside(Answer a, String scope, String granted, List<String> outside) {
        assertProblem(a, 403, scope, granted);
        for (String p : outside) assertThat(a.json().get("detail").stringValue()).contains(p);
        List<String> named = new java.util.ArrayList<>();
        a.json().get("errors").forEach(e -> named.add(e.get("path").stringValue()));
        assertThat(named).containsExactlyElementsOf(outside);
    }

    @Test
    void aStageScopeCoversEveryFileACallOnARequestTouches() {
        String dir = catalog.prefix.substring("/it".length()); // the other issuer's base path is /it
        ApiClient stager = with(sign(otherKey, claims(other, WLCG_ANY).claim("scope", "storage.stage:" + dir).build()));
        // requests of the same experiment by an unscoped production account: one beyond the token's scope, one reaching into it
        ApiClient prod = iamToken(null, "/jwtexp/production");
        String production = prod.post("/api/v1/stage", stage(sibling.files)).json().get("requestId").stringValue();
        List<String> both = List.of(catalog.files.get(0), catalog.files.get(1), sibling.files.get(0), sibling.files.get(1));
        String mixed = prod.post("/api/v1/stage", stage(both)).json().get("requestId").stringValue();
        String productionBefore = stateOf(production), mixedBefore = stateOf(mixed);
        assertThat(productionBefore).isEqualTo("submitted p0 c0 r0");

        // named files beyond the scope (WLCG and native), and whole-request calls on a request holding such files
        List<String> one = sibling.files.subList(0, 1);
        String named = ApiClient.json(Map.of("paths", one));
        assertOutside(stager.post("/api/v1/stage/" + production + "/cancel", named), "storage.stage", catalog.prefix, one);
        assertProblem(stager.post("/api/v1/stage/" + production + "/cancel", named), 403, "1 of the named files are outside");
        assertOutside(stager.post("/api/v1/release/" + production, named), "storage.stage", catalog.prefix, one);
        assertOutside(stager.post("/api/v1/requests/" + production + "/cancel", ApiClient.json(Map.of("files", one))),
                "storage.stage", catalog.prefix, one);
        assertOutside(stager.delete("/api/v1/stage/" + production), "storage.stage", catalog.prefix, sibling.files);
        assertOutside(stager.post("/api/v1/requests/" + production + "/cancel", null), "storage.stage", catalog.prefix, sibling.files);
        assertOutside(stager.post("/api/v1/requests/" + production + "/release", null), "storage.stage", catalog.prefix, sibling.files);
        assertOutside(stager.put("/api/v1/requests/" + production + "/priority", "{\"priority\": 500}"), "storage.stage",
                catalog.prefix, sibling.files);
        // the whole request: only the files beyond the scope are named, with their place in the request
        Answer all = stager.post("/api/v1/requests/" + mixed + "/cancel", null);
        assertOutside(all, "storage.stage", catalog.prefix, sibling.files);
        assertThat(all.json().get("errors").get(0).get("index").intValue()).isEqualTo(2);
        assertOutside(stager.put("/api/v1/requests/" + mixed + "/priority", "{\"priority\": -500}"), "storage.stage",
                catalog.prefix, sibling.files);
        assertThat(stateOf(production)).isEqualTo(productionBefore);
        assertThat(stateOf(mixed)).isEqualTo(mixedBefore);

        // a read scope reads a request only when it may read all of it, whatever page is asked for
        ApiClient reader = with(sign(ecKey, claims(other, WLCG_ANY).claim("scope", "storage.read:" + dir).build()));
        assertOutside(reader.get("/api/v1/stage/" + production), "storage.read", catalog.prefix, sibling.files);
        assertProblem(reader.get("/api/v1/stage/" + production), 403, "2 of the request's files are outside");
        assertOutside(reader.get("/api/v1/requests/" + mixed + "?fileLimit=1"), "storage.read", catalog.prefix, sibling.files);

        // within the scope: named files of the mixed request, and every call on a request of the scope's files
        assertThat(stager.post("/api/v1/stage/" + mixed + "/cancel", ApiClient.json(Map.of("paths", catalog.files.subList(0, 1))))
                .status()).isEqualTo(200);
        assertThat(stateOf(mixed)).isEqualTo("submitted p0 c1 r0");
        Answer mine = stager.post("/api/v1/stage", stage(catalog.files.subList(2, 4)));
        assertThat(mine.status()).as(mine.body()).isEqualTo(201);
        String own = mine.json().get("requestId").stringValue();
        assertThat(reader.get("/api/v1/stage/" + own).status()).isEqualTo(200);
        assertThat(reader.get("/api/v1/requests/" + own).status()).isEqualTo(200);
        assertThat(stager.put("/api/v1/requests/" + own + "/priority", "{\"priority\": 7}").status()).isEqualTo(200);
        assertThat(stager.post("/api/v1/requests/" + own + "/release", null).status()).isEqualTo(200);
        assertThat(stateOf(own)).isEqualTo("submitted p7 c0 r2");
        assertThat(stager.post("/api/v1/requests/" + own + "/cancel", null).status()).isEqualTo(200);
        assertThat(stager.delete("/api/v1/stage/" + own).status()).isEqualTo(200);
        assertThat(prod.delete("/api/v1/stage/" + production).status()).isEqualTo(200);
        assertThat(prod.delete("/api/v1/stage/" + mixed).status()).isEqualTo(200);
    }

    /**
     * A request is checked against a token's scopes by its smallest and largest path when that settles it, else
     * path by path: either way the answers are those of reading every path. Names at a scope path's edges: the
     * scope path itself, and a sibling ("a-b") that sorts between the scope path and its files.
     */
    @Test
    void aScopeCheckByARequestsFirstAndLastPathAnswersAsReadingEveryPath() {
        String p = "/it/" + UUID.randomUUID();
        List<String> names = List.of(p + "/a", p + "/a/f1", p + "/a/f2", p + "/a-b/f3", p + "/b/f4");
        StringBuilder csv = new StringBuilder("file,volume,offset_bytes,size_bytes,experiment,dataset\n");
        for (int i = 0; i < names.size(); i++) {
            csv.append(names.get(i)).append(",JE").append(p, 4, 9).append(',').append(i * 1000).append(",1000,")
                    .append(experiment).append(",ds-edge-").append(p, 4, 12).append('\n'); // a dataset per run: it keeps its experiment
        }
        importer.importStream(new java.io.ByteArrayInputStream(csv.toString().getBytes(StandardCharsets.UTF_8)), "edges");
        ApiClient prod = iamToken(null, "/jwtexp/production");
        java.util.function.Function<List<String>, String> submit = files -> prod.post("/api/v1/stage", stage(files))
                .json().get("requestId").stringValue();
        String within = submit.apply(List.of(p + "/a/f2", p + "/a/f1"));
        String edge = submit.apply(List.of(p + "/a/f1", p + "/a"));
        String sib = submit.apply(List.of(p + "/a/f1", p + "/a-b/f3", p + "/a/f2"));
        String spread = submit.apply(List.of(p + "/a/f1", p + "/b/f4"));
        assertThat(jdbc.queryForList("SELECT first_path, last_path FROM stage_request WHERE id = ?::uuid", within).getFirst())
                .containsValues(p + "/a/f1", p + "/a/f2");
        String dir = p.substring("/it".length()); // the other issuer's base path is /it
        ApiClient a = with(sign(ecKey, claims(other, WLCG_ANY).claim("scope", "storage.read:" + dir + "/a").build()));
        ApiClient ab = with(sign(ecKey, claims(other, WLCG_ANY)
                .claim("scope", "storage.read:" + dir + "/a storage.read:" + dir + "/b").build()));
        for (boolean bounds : List.of(true, false)) {
            if (!bounds) { // as requests from before V30: no bounds recorded, every path read
                jdbc.update("UPDATE stage_request SET first_path = NULL, last_path = NULL WHERE id = ANY(?::uuid[])",
                        (Object) new String[] {within, edge, sib, spread});
            }
            for (String api : List.of("/api/v1/stage/", "/api/v1/requests/")) {
                assertThat(a.get(api + within).status()).isEqualTo(200);
                assertThat(a.get(api + edge).status()).isEqualTo(200);
                assertOutside(a.get(api + sib), "storage.read", p + "/a", List.of(p + "/a-b/f3"));
                assertOutside(a.get(api + spread), "storage.read", p + "/a", List.of(p + "/b/f4"));
                assertThat(ab.get(api + spread).status()).isEqualTo(200);
                assertOutside(ab.get(api + sib), "storage.read", p + "/a", List.of(p + "/a-b/f3"));
            }
        }
        for (String id : List.of(within, edge, sib, spread)) assertThat(prod.delete("/api/v1/stage/" + id).status()).isEqualTo(200);
    }

    @Test
    void aReadScopeLimitsWhichArchivedFilesATokenReads() {
        // two catalog files registered in the archive buffer (already evicted: nothing to flush)
        for (String f : List.of(catalog.files.get(0), sibling.files.get(0))) {
            jdbc.update("""
                    INSERT INTO archive_file (file_id, path, size_bytes, adler32, family, storage_class, copies, state)
                    SELECT id, '/nonexistent' || name, size_bytes, '00000001', 'jwt-it', 'single', 1, 'evicted' FROM file WHERE name = ?""", f);
        }
        String dir = catalog.prefix.substring("/it".length());
        ApiClient reader = with(sign(ecKey, claims(other, WLCG_ANY).claim("scope", "storage.read:" + dir).build()));
        assertThat(reader.get("/api/v1/archive/files?name=" + catalog.files.get(0)).status()).isEqualTo(200);
        assertOutside(reader.get("/api/v1/archive/files?name=" + sibling.files.get(0)), "storage.read", catalog.prefix,
                sibling.files.subList(0, 1));
        long id = jdbc.queryForObject("SELECT id FROM file WHERE name = ?", Long.class, sibling.files.get(0));
        assertProblem(reader.get("/api/v1/archive/files/" + id), 403, "storage.read", sibling.files.get(0));
    }

    @Test
    void aValidTokenWithoutAMappedGroupOrAccountIs403NamingIt() {
        assertProblem(iamToken(null, "/somebody-else").get("/api/v1/whoami"), 403, "maps to no account", "/somebody-else");
        accounts.delete("jwt-default");
        try {
            assertProblem(with(sign(otherKey, claims(other, WLCG_ANY).build())).get("/api/v1/whoami"), 403, "jwt-default", "does not exist");
        } finally {
            accounts.put("jwt-default", ApiRole.ADMIN, List.of(experiment));
        }
    }
}
