package dev.stagehand.api.security;

import java.net.URI;
import java.nio.file.Path;
import java.util.List;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * {@code stagehand.security.*}: who may call the REST API. Documented in config/application.yml.
 *
 * @param adminToken      bearer token of the built-in {@code admin} account; the built-in default takes it
 *                        from {@code STAGEHAND_ADMIN_TOKEN}. Empty: one is generated at start-up and printed once.
 * @param gridMapfile     grid-mapfile mapping certificate DNs to account names ({@code "DN" account[,account]})
 * @param certificates    trusted CA certificates for client certificates: a directory of PEM files (the
 *                        {@code X509_CERT_DIR} layout: {@code *.0}, {@code *.pem}) or one PEM bundle
 * @param limitedProxies  accept limited proxies (they may stage and read; Globus uses them for data movement)
 * @param crlMode         revocation by the CRLs in {@code certificates} ({@code <hash>.r0}, kept current by
 *                        fetch-crl): {@code if-valid} (a CA with a current CRL is checked, one without is
 *                        accepted), {@code require} (every CA must have a current CRL), {@code ignore}
 * @param namespaceMode   the CAs' {@code <hash>.signing_policy} namespaces in {@code certificates}:
 *                        {@code if-present} (a CA with a policy may sign only the names it lists), {@code require}
 *                        (a CA without one is refused), {@code ignore}
 * @param accounts        accounts declared here, written to the database at every start (the admin API adds more)
 * @param tokenIssuers    token issuers (OIDC providers such as an experiment's INDIGO IAM) whose WLCG JWT bearer
 *                        tokens are accepted, and how their tokens map to accounts
 */
@ConfigurationProperties("stagehand.security")
public record ApiSecurityProperties(
        @DefaultValue("") String adminToken,
        @DefaultValue("/etc/grid-security/grid-mapfile") Path gridMapfile,
        @DefaultValue("/etc/grid-security/certificates") Path certificates,
        @DefaultValue("true") boolean limitedProxies,
        @DefaultValue("if-valid") ProxyChainValidator.CrlMode crlMode,
        @DefaultValue("if-present") ProxyChainValidator.NamespaceMode namespaceMode,
        @DefaultValue List<Account> accounts,
        @DefaultValue List<TokenIssuer> tokenIssuers) {

    /** A declared account: name, role (viewer, operator, admin), experiments ("*": all). */
    public record Account(String name, String role, List<String> experiments) {}

    /**
     * A trusted token issuer.
     *
     * @param issuer    the {@code iss} claim, exactly (https; http only on loopback, for tests)
     * @param jwks      the issuer's key set; empty: the {@code jwks_uri} of {@code <issuer>/.well-known/openid-configuration}
     * @param audiences accepted {@code aud} values, one of which a token must name (default: WLCG's
     *                  {@code https://wlcg.cern.ch/jwt/v1/any})
     * @param groups    {@code wlcg.groups} entries mapped to accounts, the first listed that the token has wins
     * @param account   the account of a token none of {@code groups} matches; empty: such tokens are refused (403)
     * @param basePath  the catalog path that storage scope paths are relative to ({@code storage.stage:/x} on base
     *                  {@code /cms} covers {@code /cms/x/...})
     */
    public record TokenIssuer(String issuer, URI jwks, List<String> audiences, List<GroupAccount> groups, String account,
                              String basePath) {}

    /** Tokens carrying {@code wlcg.groups} entry {@code group} act as {@code account}. */
    public record GroupAccount(String group, String account) {}
}
