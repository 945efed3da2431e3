package dev.stagehand.api.security;

import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.security.MessageDigest;
import java.nio.charset.StandardCharsets;
import java.security.cert.CertificateException;
import java.security.cert.X509Certificate;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.security.core.context.SecurityContext;
import org.springframework.security.core.context.SecurityContextHolder;
import org.springframework.web.filter.OncePerRequestFilter;

/**
 * Who is calling: a bearer token ({@code Authorization: Bearer ...}: the admin token from the environment, a
 * token from {@code api_token}, or a WLCG JWT of a configured issuer, {@link WlcgTokens}) or, without one, the client certificate or grid proxy the TLS handshake
 * received, validated by {@link ProxyChainValidator} and mapped by the grid-mapfile. A call with bad
 * credentials is refused here (401; 403 for a valid certificate whose DN has no account); a call with none
 * goes on unauthenticated and the chain's authorization answers 401.
 */
final class ApiAuthenticator extends OncePerRequestFilter {

    private static final Logger log = LoggerFactory.getLogger(ApiAuthenticator.class);
    static final String CERTIFICATES = "jakarta.servlet.request.X509Certificate";

    private final byte[] adminTokenHash;
    private final ApiTokens tokens;
    private final ApiAccounts accounts;
    private final ProxyChainValidator validator;
    private final GridMapfile gridMap;
    private final WlcgTokens jwts;

    ApiAuthenticator(String adminToken, ApiTokens tokens, ApiAccounts accounts, ProxyChainValidator validator, GridMapfile gridMap,
                     WlcgTokens jwts) {
        this.adminTokenHash = ApiTokens.sha256(adminToken).getBytes(StandardCharsets.US_ASCII);
        this.tokens = tokens;
        this.accounts = accounts;
        this.validator = validator;
        this.gridMap = gridMap;
        this.jwts = jwts;
    }

    @Override
    protected void doFilterInternal(HttpServletRequest req, HttpServletResponse resp, FilterChain chain)
            throws ServletException, IOException {
        String header = req.getHeader("Authorization");
        ApiUser user;
        if (header != null) {
            if (!header.regionMatches(true, 0, "Bearer ", 0, 7)) {
                ApiProblems.write(resp, 401, "unauthenticated", "only bearer tokens are accepted in the Authorization header "
                        + "(Authorization: Bearer <token>)", "Authorization", ApiProblems.REALM + ", error=\"invalid_request\"");
                return;
            }
            String token = header.substring(7).strip();
            boolean admin = MessageDigest.isEqual(ApiTokens.sha256(token).getBytes(StandardCharsets.US_ASCII), adminTokenHash);
            if (!admin && jwts.configured() && WlcgTokens.looksLikeJwt(token)) {
                user = jwtUser(token, resp);
                if (user == null) return;
                authenticated(user, req, resp, chain);
                return;
            }
            Optional<String> account = admin ? Optional.of(ApiAccounts.ADMIN) : tokens.account(token);
            Optional<ApiAccounts.Account> a = account.flatMap(accounts::find);
            if (a.isEmpty()) {
                ApiProblems.write(resp, 401, "invalid-token", "the bearer token is not valid: unknown, revoked or expired",
                        "Authorization", ApiProblems.REALM + ", error=\"invalid_token\"");
                return;
            }
            user = new ApiUser(a.get().name(), a.get().role(), a.get().experiments(), "token", null);
        } else if (req.getAttribute(CERTIFICATES) instanceof X509Certificate[] certs && certs.length > 0) {
            ProxyChainValidator.Identity id;
            try {
                id = validator.validate(certs);
            } catch (CertificateException e) {
                log.info("client certificate refused: {}", e.getMessage());
                ApiProblems.write(resp, 401, "invalid-certificate", "the client certificate is not accepted: " + e.getMessage(),
                        "certificate", ApiProblems.REALM);
                return;
            }
            List<String> names = gridMap.accounts(id.dn());
            if (names.isEmpty()) {
                ApiProblems.write(resp, 403, "unknown-dn", "the certificate DN " + id.dn() + " is not in the grid-mapfile; "
                        + "ask the service's administrators to map it to an account", "certificate", null);
                return;
            }
            Optional<ApiAccounts.Account> a = accounts.find(names.getFirst());
            if (a.isEmpty()) {
                ApiProblems.write(resp, 403, "unknown-account", "the certificate DN " + id.dn() + " maps to account '"
                        + names.getFirst() + "', which does not exist", "certificate", null);
                return;
            }
            user = new ApiUser(a.get().name(), a.get().role(), a.get().experiments(), "x509", id.dn());
        } else {
            chain.doFilter(req, resp); // no credentials: authorization decides (401 for the API)
            return;
        }
        authenticated(user, req, resp, chain);
    }

    private static void authenticated(ApiUser user, HttpServletRequest req, HttpServletResponse resp, FilterChain chain)
            throws ServletException, IOException {
        SecurityContext ctx = SecurityContextHolder.createEmptyContext();
        ctx.setAuthentication(user.authentication());
        SecurityContextHolder.setContext(ctx);
        chain.doFilter(req, resp);
    }

    /**
     * The caller a WLCG token names, or null when it was refused (the answer is written). Storage scopes cap the
     * account's role: stage rights make at most an operator, read rights a viewer; a scoped token is never an admin.
     */
    private ApiUser jwtUser(String token, HttpServletResponse resp) throws IOException {
        WlcgTokens.Verified v;
        try {
            v = jwts.verify(token);
        } catch (WlcgTokens.Refused r) {
            log.info("bearer token refused: {}", r.getMessage());
            if (r.status == 401) {
                ApiProblems.write(resp, 401, "invalid-token", r.getMessage(), "Authorization", ApiProblems.REALM + ", error=\"invalid_token\"");
            } else {
                ApiProblems.write(resp, r.status, "unknown-account", r.getMessage(), "Authorization", null);
            }
            return null;
        }
        Optional<ApiAccounts.Account> a = accounts.find(v.account());
        if (a.isEmpty()) {
            ApiProblems.write(resp, 403, "unknown-account", "the token of issuer " + v.issuer() + " for subject " + v.subject()
                    + " maps to account '" + v.account() + "', which does not exist", "Authorization", null);
            return null;
        }
        ApiRole role = a.get().role();
        if (v.scopes() != null) {
            ApiRole cap = v.scopes().grants(StorageScopes.Op.STAGE) ? ApiRole.OPERATOR : ApiRole.VIEWER;
            if (role.compareTo(cap) > 0) role = cap;
        }
        return new ApiUser(a.get().name(), role, a.get().experiments(), "jwt", null,
                new ApiUser.Jwt(v.issuer(), v.subject(), v.groups(), v.scopes()));
    }
}
