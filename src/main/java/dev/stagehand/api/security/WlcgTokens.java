package dev.stagehand.api.security;

import com.nimbusds.jose.JOSEException;
import com.nimbusds.jose.JOSEObjectType;
import com.nimbusds.jose.JWSAlgorithm;
import com.nimbusds.jose.jwk.source.JWKSource;
import com.nimbusds.jose.jwk.source.JWKSourceBuilder;
import com.nimbusds.jose.proc.BadJOSEException;
import com.nimbusds.jose.proc.DefaultJOSEObjectTypeVerifier;
import com.nimbusds.jose.proc.JWSVerificationKeySelector;
import com.nimbusds.jose.proc.SecurityContext;
import com.nimbusds.jose.util.DefaultResourceRetriever;
import com.nimbusds.jose.util.JSONObjectUtils;
import com.nimbusds.jose.util.ResourceRetriever;
import com.nimbusds.jwt.JWTClaimsSet;
import com.nimbusds.jwt.JWTParser;
import com.nimbusds.jwt.SignedJWT;
import com.nimbusds.jwt.proc.DefaultJWTClaimsVerifier;
import com.nimbusds.jwt.proc.DefaultJWTProcessor;
import java.io.IOException;
import java.net.InetAddress;
import java.net.URI;
import java.net.URL;
import java.text.ParseException;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * WLCG JWT bearer tokens (WLCG Common JWT Profile 1.0), the credential FTS3, Rucio and gfal2 present besides X.509
 * proxies. A token is accepted when a configured issuer signed it (RSA or EC; keys from the issuer's JWKS, fetched
 * on first use, cached, fetched again for an unknown key id so that key rotation needs no restart), it has not
 * expired (60 s of clock skew), and its {@code aud} names one of the issuer's accepted audiences. Its
 * {@code wlcg.groups} map it to an account; its storage scopes, if any, limit what it may do ({@link StorageScopes}).
 */
final class WlcgTokens {

    /** A token that passed: who issued it, whom it names, its groups and scopes, and the account it acts as. */
    record Verified(String issuer, String subject, List<String> groups, StorageScopes scopes, String account) {}

    /** A refused token: 401 (not valid) or 403 (valid, but no account for it), with the reason. */
    static final class Refused extends Exception {
        final int status;

        Refused(int status, String message) {
            super(message);
            this.status = status;
        }
    }

    static final String ANY_AUDIENCE = "https://wlcg.cern.ch/jwt/v1/any";
    private static final Pattern JWT_SHAPE = Pattern.compile("eyJ[A-Za-z0-9_-]*\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+");
    private static final Set<JWSAlgorithm> ALGORITHMS;
    static {
        Set<JWSAlgorithm> a = new HashSet<>(JWSAlgorithm.Family.RSA);
        a.addAll(JWSAlgorithm.Family.EC);
        ALGORITHMS = Set.copyOf(a);
    }
    private static final ResourceRetriever HTTP = new DefaultResourceRetriever(5_000, 5_000, 1 << 20);

    private final Map<String, Issuer> issuers = new LinkedHashMap<>();

    /** Checks the configuration at start-up: a bad entry stops the service with its index and reason. */
    WlcgTokens(List<ApiSecurityProperties.TokenIssuer> config) {
        for (int i = 0; i < config.size(); i++) {
            ApiSecurityProperties.TokenIssuer c = config.get(i);
            String where = "stagehand.security.token-issuers[" + i + "]";
            if (c.issuer() == null || c.issuer().isBlank()) throw new IllegalArgumentException(where + ".issuer: required");
            requireSecure(where + ".issuer", URI.create(c.issuer().strip()));
            if (c.jwks() != null) requireSecure(where + ".jwks", c.jwks());
            List<ApiSecurityProperties.GroupAccount> groups = c.groups() == null ? List.of() : c.groups();
            for (int g = 0; g < groups.size(); g++) {
                ApiSecurityProperties.GroupAccount ga = groups.get(g);
                if (ga.group() == null || ga.group().isBlank() || ga.account() == null || ga.account().isBlank()) {
                    throw new IllegalArgumentException(where + ".groups[" + g + "]: both group and account are required");
                }
            }
            String base = c.basePath() == null || c.basePath().isBlank() ? "/" : c.basePath().strip();
            if (StorageScopes.join(base, "/") == null) {
                throw new IllegalArgumentException(where + ".base-path: '" + base + "' is not an absolute catalog path");
            }
            List<String> audiences = c.audiences() == null || c.audiences().isEmpty() ? List.of(ANY_AUDIENCE) : c.audiences();
            String account = c.account() == null || c.account().isBlank() ? null : c.account().strip();
            if (issuers.put(c.issuer().strip(), new Issuer(c.issuer().strip(), c.jwks(), audiences, groups, account, base)) != null) {
                throw new IllegalArgumentException(where + ".issuer: " + c.issuer() + " is listed twice");
            }
        }
    }

    boolean configured() {
        return !issuers.isEmpty();
    }

    /** A JWS compact serialisation: three base64url parts, a JSON header first. Other bearer tokens never look so. */
    static boolean looksLikeJwt(String token) {
        return JWT_SHAPE.matcher(token).matches();
    }

    Verified verify(String token) throws Refused {
        String iss;
        List<String> aud;
        try {
            if (!(JWTParser.parse(token) instanceof SignedJWT jwt)) throw new Refused(401, "the token is not a signed JWT");
            iss = jwt.getJWTClaimsSet().getIssuer();
            aud = jwt.getJWTClaimsSet().getAudience();
        } catch (ParseException e) {
            throw new Refused(401, "the token is not a readable JWT: " + e.getMessage());
        }
        Issuer issuer = iss == null ? null : issuers.get(iss);
        if (issuer == null) {
            throw new Refused(401, "tokens of issuer " + (iss == null ? "(none named)" : "'" + iss + "'")
                    + " are not accepted here; trusted issuers: " + issuers.keySet());
        }
        JWTClaimsSet claims;
        try {
            claims = issuer.processor().process(token, null);
        } catch (BadJOSEException | JOSEException | ParseException e) {
            // the claims are checked after the signature: the audiences named here are the issuer's
            String why = e.getMessage() != null && e.getMessage().contains("aud claim")
                    ? "its audience " + aud + " is none of the accepted " + issuer.audiences : e.getMessage();
            throw new Refused(401, "the token of issuer " + iss + " is not valid: " + why);
        }
        List<String> groups;
        String scope;
        try {
            groups = claims.getStringListClaim("wlcg.groups");
            scope = claims.getStringClaim("scope");
        } catch (ParseException e) {
            throw new Refused(401, "the token of issuer " + iss + " is not valid: " + e.getMessage());
        }
        groups = groups == null ? List.of() : groups;
        StorageScopes scopes = StorageScopes.parse(scope, issuer.basePath);
        String account = issuer.account;
        for (ApiSecurityProperties.GroupAccount g : issuer.groups) {
            if (groups.contains(g.group())) {
                account = g.account();
                break;
            }
        }
        if (account == null) {
            throw new Refused(403, "the token of issuer " + iss + " for subject " + claims.getSubject() + " with groups "
                    + groups + " maps to no account; ask the service's administrators to map one of its groups");
        }
        return new Verified(iss, claims.getSubject(), groups, scopes, account);
    }

    private static void requireSecure(String key, URI uri) {
        if (uri.getHost() == null || uri.getScheme() == null) throw new IllegalArgumentException(key + ": '" + uri + "' is not a URL");
        if (uri.getScheme().equalsIgnoreCase("https")) return;
        try {
            if (uri.getScheme().equalsIgnoreCase("http") && InetAddress.getByName(uri.getHost()).isLoopbackAddress()) return;
        } catch (IOException e) {
            // not resolvable: refused below like any other non-https URL
        }
        throw new IllegalArgumentException(key + ": '" + uri + "' must be https (plain http only on loopback)");
    }

    /** One issuer; its verifier is made at the first token, when discovery (a network call) can tell its keys. */
    private static final class Issuer {
        final String iss;
        final URI jwks;
        final List<String> audiences;
        final List<ApiSecurityProperties.GroupAccount> groups;
        final String account;
        final String basePath;
        private volatile DefaultJWTProcessor<SecurityContext> processor;

        Issuer(String iss, URI jwks, List<String> audiences, List<ApiSecurityProperties.GroupAccount> groups, String account,
               String basePath) {
            this.iss = iss;
            this.jwks = jwks;
            this.audiences = audiences;
            this.groups = groups;
            this.account = account;
            this.basePath = basePath;
        }

        DefaultJWTProcessor<SecurityContext> processor() throws Refused {
            DefaultJWTProcessor<SecurityContext> p = processor;
            if (p != null) return p;
            synchronized (this) {
                if (processor != null) return processor;
                URL keys = keySetUrl();
                JWKSource<SecurityContext> source = JWKSourceBuilder.<SecurityContext>create(keys, HTTP).retrying(true).build();
                p = new DefaultJWTProcessor<>();
                p.setJWSTypeVerifier(new DefaultJOSEObjectTypeVerifier<>(JOSEObjectType.JWT, new JOSEObjectType("at+jwt"), null));
                p.setJWSKeySelector(new JWSVerificationKeySelector<>(ALGORITHMS, source));
                p.setJWTClaimsSetVerifier(new DefaultJWTClaimsVerifier<>(Set.copyOf(audiences),
                        new JWTClaimsSet.Builder().issuer(iss).build(), Set.of("sub", "exp"), null));
                processor = p;
                return p;
            }
        }

        /** The configured key set, else the discovered one; a failed discovery is tried again at the next token. */
        private URL keySetUrl() throws Refused {
            try {
                if (jwks != null) return jwks.toURL();
                URI discovery = URI.create(iss.replaceAll("/+$", "") + "/.well-known/openid-configuration");
                String uri = JSONObjectUtils.getString(JSONObjectUtils.parse(HTTP.retrieveResource(discovery.toURL()).getContent()), "jwks_uri");
                if (uri == null) throw new IOException(discovery + " names no jwks_uri");
                URI found = URI.create(uri);
                requireSecure("jwks_uri", found);
                return found.toURL();
            } catch (IOException | ParseException | IllegalArgumentException e) {
                throw new Refused(401, "the keys of issuer " + iss + " cannot be fetched to check the token: " + e.getMessage());
            }
        }
    }
}
