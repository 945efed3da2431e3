package dev.stagehand.api.security;

import jakarta.servlet.http.HttpServletRequest;
import java.util.List;
import org.apache.coyote.http11.AbstractHttp11Protocol;
import org.apache.tomcat.util.net.SSLHostConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.tomcat.ConfigurableTomcatWebServerFactory;
import org.springframework.boot.web.server.WebServerFactoryCustomizer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.security.authorization.AuthorizationDecision;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.config.http.SessionCreationPolicy;
import org.springframework.security.core.Authentication;
import org.springframework.security.core.context.SecurityContextHolder;
import org.springframework.security.web.SecurityFilterChain;
import org.springframework.security.web.authentication.AnonymousAuthenticationFilter;
import org.springframework.web.util.UrlPathHelper;

/**
 * Security of the REST API ({@code /api/**}; the console has its own chain): stateless, no cookies, no CSRF
 * (credentials travel with each call). Authentication by {@link ApiAuthenticator}; authorization by role
 * (GET and archiveinfo: viewer; other changes: operator; {@code /api/v1/admin/**}: admin) here, and by
 * experiment in the controllers. Refusals are RFC 9457 problem documents: 401 with
 * {@code WWW-Authenticate: Bearer}, 403 naming the role needed.
 */
@Configuration(proxyBeanMethods = false)
@EnableConfigurationProperties(ApiSecurityProperties.class)
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
class ApiSecurityConfiguration {

    private static final Logger log = LoggerFactory.getLogger(ApiSecurityConfiguration.class);

    @Bean
    SecurityFilterChain apiChain(HttpSecurity http, ApiSecurityProperties props, ApiTokens tokens, ApiAccounts accounts)
            throws Exception {
        seedAccounts(props, accounts);
        ApiAuthenticator authenticator = new ApiAuthenticator(adminToken(props), tokens, accounts,
                new ProxyChainValidator(props.certificates(), props.limitedProxies(), props.crlMode(),
                        props.namespaceMode()), new GridMapfile(props.gridMapfile()), new WlcgTokens(props.tokenIssuers()));
        http.securityMatcher("/api/**")
                .csrf(c -> c.disable())
                .sessionManagement(s -> s.sessionCreationPolicy(SessionCreationPolicy.STATELESS))
                .requestCache(r -> r.disable())
                .formLogin(f -> f.disable())
                .httpBasic(b -> b.disable())
                .logout(l -> l.disable())
                .addFilterBefore(authenticator, AnonymousAuthenticationFilter.class)
                .authorizeHttpRequests(a -> a.anyRequest().access((auth, ctx) ->
                        new AuthorizationDecision(allowed(auth.get(), ctx.getRequest()))))
                .exceptionHandling(e -> e
                        .authenticationEntryPoint((req, resp, ex) -> ApiProblems.write(resp, 401, "unauthenticated",
                                "this API needs authentication: a bearer token (Authorization: Bearer <token>), or a client "
                                        + "certificate or grid proxy over HTTPS", "Authorization", ApiProblems.REALM))
                        .accessDeniedHandler((req, resp, ex) -> {
                            Authentication auth = SecurityContextHolder.getContext().getAuthentication();
                            String scoped = auth != null && auth.getPrincipal() instanceof ApiUser u ? scopeRefusal(u, req) : null;
                            if (scoped != null) {
                                ApiProblems.write(resp, 403, "forbidden", scoped, "scope", null);
                                return;
                            }
                            ApiRole needed = required(req);
                            String who = req.getUserPrincipal() == null ? "this account" : "account '" + req.getUserPrincipal().getName() + "'";
                            ApiProblems.write(resp, 403, "forbidden", req.getMethod() + " " + req.getRequestURI() + " needs the "
                                    + needed.dbName() + " role; " + who + " does not have it", "role", null);
                        }));
        return http.build();
    }

    /**
     * The path a call is routed by: decoded, without the context path and {@code ;} parameters. The raw URI
     * would let {@code /api/v1/%61dmin/...}, which Spring MVC routes to the admin API, pass as an operator's call.
     */
    static String apiPath(HttpServletRequest req) {
        return UrlPathHelper.defaultInstance.getPathWithinApplication(req);
    }

    /** The role a call needs: reads are viewer's, changes operator's, the admin API admin's. */
    static ApiRole required(HttpServletRequest req) {
        String path = apiPath(req);
        if (path.startsWith("/api/v1/admin/") || path.equals("/api/v1/admin")) return ApiRole.ADMIN;
        String m = req.getMethod();
        if (m.equals("GET") || m.equals("HEAD") || m.equals("OPTIONS")) return ApiRole.VIEWER;
        if (m.equals("POST") && path.equals("/api/v1/archiveinfo")) return ApiRole.VIEWER; // a read with a body
        // sites, bottleneck links and what a site holds describe the grid, not one experiment's work: admin's
        if (path.startsWith("/api/v1/sites/") || path.startsWith("/api/v1/replication/links/")) return ApiRole.ADMIN;
        return ApiRole.OPERATOR;
    }

    private static boolean allowed(Authentication auth, HttpServletRequest req) {
        return auth != null && auth.getPrincipal() instanceof ApiUser u && u.role().compareTo(required(req)) >= 0
                && scopeRefusal(u, req) == null;
    }

    /**
     * Why a token limited by storage scopes may not make this call (null: it may). Such a token reads (GET,
     * archiveinfo) with {@code storage.read} or {@code storage.stage}, and stages, cancels, releases and
     * re-prioritises stage requests with {@code storage.stage}. Here only the kind of scope is checked: the
     * controllers check every file a call touches against the scopes' paths ({@link ExperimentAccess#withinScopes}).
     * Nothing else: rules, sites, archive registration and the admin API need an account's own credential.
     */
    static String scopeRefusal(ApiUser user, HttpServletRequest req) {
        StorageScopes scopes = user.scopes();
        if (scopes == null) return null;
        String path = apiPath(req);
        String m = req.getMethod();
        if (path.equals("/api/v1/whoami")) return null;
        StorageScopes.Op needed = null; // stays null for the admin API, sites and links: never by scopes
        if (required(req) == ApiRole.ADMIN) {
            // needs the account's own credential
        } else if (m.equals("GET") || m.equals("HEAD") || m.equals("OPTIONS")
                || (m.equals("POST") && path.equals("/api/v1/archiveinfo"))) {
            needed = StorageScopes.Op.READ;
        } else if (path.equals("/api/v1/stage") || path.startsWith("/api/v1/stage/") || path.startsWith("/api/v1/release/")
                || path.equals("/api/v1/requests") || path.startsWith("/api/v1/requests/")) {
            needed = StorageScopes.Op.STAGE;
        }
        if (needed == null) {
            return m + " " + path + " is not open to a token limited by storage scopes " + scopes.list()
                    + "; use the account's own token or certificate";
        }
        return scopes.grants(needed) ? null : m + " " + path + " needs a " + needed.scope() + " scope"
                + (needed == StorageScopes.Op.READ ? " (or storage.stage)" : "") + "; the token has " + scopes.list();
    }

    /** The built-in admin (every experiment) and the accounts declared in configuration, written at every start. */
    private static void seedAccounts(ApiSecurityProperties props, ApiAccounts accounts) {
        accounts.put(ApiAccounts.ADMIN, ApiRole.ADMIN, List.of(ApiUser.ALL_EXPERIMENTS));
        for (int i = 0; i < props.accounts().size(); i++) {
            ApiSecurityProperties.Account a = props.accounts().get(i);
            String where = "stagehand.security.accounts[" + i + "]";
            try {
                if (a.role() == null) throw new IllegalArgumentException("role: required (viewer, operator, admin)");
                accounts.put(a.name(), ApiRole.parse(a.role()), a.experiments() == null ? List.of() : a.experiments());
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(where + " (" + a.name() + "): " + e.getMessage(), e);
            }
        }
    }

    /** STAGEHAND_ADMIN_TOKEN, or a generated token printed once. */
    private static String adminToken(ApiSecurityProperties props) {
        String token = props.adminToken();
        if (token != null && !token.isBlank()) {
            if (token.strip().length() < 16) throw new IllegalArgumentException("stagehand.security.admin-token "
                    + "(STAGEHAND_ADMIN_TOKEN) must have at least 16 characters");
            return token.strip();
        }
        token = ApiTokens.generate();
        System.out.println("Stagehand API: generated bearer token for account '" + ApiAccounts.ADMIN + "': " + token
                + " (set STAGEHAND_ADMIN_TOKEN to choose one)");
        log.warn("no STAGEHAND_ADMIN_TOKEN set: an admin bearer token was generated and printed on standard output");
        return token;
    }

    /**
     * With {@code server.ssl} on, client certificates are asked for ({@code server.ssl.client-auth: want}) and
     * let through the handshake by {@link GridClientTrustManager}, so grid proxies reach the API's validation.
     */
    @Bean
    WebServerFactoryCustomizer<ConfigurableTomcatWebServerFactory> gridClientCertificates() {
        return factory -> factory.addConnectorCustomizers(connector -> {
            if (connector.getProtocolHandler() instanceof AbstractHttp11Protocol<?> p) {
                for (SSLHostConfig c : p.findSslHostConfigs()) c.setTrustManagerClassName(GridClientTrustManager.class.getName());
            }
        });
    }
}
