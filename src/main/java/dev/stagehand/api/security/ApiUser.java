package dev.stagehand.api.security;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import org.springframework.security.authentication.AbstractAuthenticationToken;
import org.springframework.security.core.Authentication;
import org.springframework.security.core.GrantedAuthority;
import org.springframework.security.core.authority.SimpleGrantedAuthority;
import org.springframework.security.core.context.SecurityContextHolder;

/**
 * The authenticated caller of the API: an account, its role and experiments, and how it proved who it is
 * ({@code token}, {@code x509} with the end-entity DN of its certificate or proxy, or {@code jwt} with the
 * WLCG token's issuer, subject, groups and storage scopes).
 */
public record ApiUser(String account, ApiRole role, Set<String> experiments, String method, String dn, Jwt jwt) {

    /** What a WLCG JWT said; {@code scopes} null: no storage scopes, the account's rights apply unlimited. */
    public record Jwt(String issuer, String subject, List<String> groups, StorageScopes scopes) {}

    ApiUser(String account, ApiRole role, Set<String> experiments, String method, String dn) {
        this(account, role, experiments, method, dn, null);
    }

    /** The storage scopes limiting this caller (a WLCG token that carries some); null: none. */
    public StorageScopes scopes() {
        return jwt == null ? null : jwt.scopes();
    }

    public static final String ALL_EXPERIMENTS = "*";

    /** Admins, and accounts whose experiments include "*", see every experiment. */
    public boolean allExperiments() {
        return role == ApiRole.ADMIN || experiments.contains(ALL_EXPERIMENTS);
    }

    /** Whether requests of {@code experiment} (null: none) are visible to this caller. */
    public boolean sees(String experiment) {
        return allExperiments() || (experiment != null && experiments.contains(experiment));
    }

    /** The caller of the current API call (the API's filter chain admits no call without one). */
    public static ApiUser current() {
        Authentication a = SecurityContextHolder.getContext().getAuthentication();
        if (a != null && a.getPrincipal() instanceof ApiUser u) return u;
        throw new IllegalStateException("no authenticated API caller");
    }

    Authentication authentication() {
        List<GrantedAuthority> roles = new ArrayList<>();
        for (ApiRole r : ApiRole.values()) if (r.ordinal() <= role.ordinal()) roles.add(new SimpleGrantedAuthority("ROLE_" + r.name()));
        return new Token(this, roles);
    }

    private static final class Token extends AbstractAuthenticationToken {
        private final ApiUser user;

        Token(ApiUser user, Collection<? extends GrantedAuthority> authorities) {
            super(authorities);
            this.user = user;
            setAuthenticated(true);
        }

        @Override
        public Object getCredentials() {
            return "";
        }

        @Override
        public Object getPrincipal() {
            return user;
        }

        @Override
        public String getName() {
            return user.account();
        }
    }
}
