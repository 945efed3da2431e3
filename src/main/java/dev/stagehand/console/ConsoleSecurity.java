package dev.stagehand.console;

import jakarta.servlet.SessionCookieConfig;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.web.servlet.ServletContextInitializer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.http.HttpMethod;
import org.springframework.security.access.hierarchicalroles.RoleHierarchy;
import org.springframework.security.access.hierarchicalroles.RoleHierarchyImpl;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import dev.stagehand.api.Accounts;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.security.authorization.AuthorityAuthorizationManager;
import org.springframework.security.authorization.AuthorizationManagers;
import org.springframework.security.core.userdetails.UserDetailsService;
import org.springframework.security.core.userdetails.UsernameNotFoundException;
import org.springframework.security.crypto.bcrypt.BCryptPasswordEncoder;
import org.springframework.security.crypto.password.PasswordEncoder;
import org.springframework.security.web.SecurityFilterChain;
import org.springframework.security.web.header.writers.ReferrerPolicyHeaderWriter;

/**
 * Security of the console only: form login under {@code /console/**}, roles viewer &lt; operator &lt; admin,
 * CSRF tokens on every change (htmx sends the token as a header), HttpOnly + SameSite=Lax session cookie
 * (Secure when configured). Everything outside {@code /console/**} (the REST APIs, actuator, WebJars) is not
 * matched by this chain; API security is a separate concern.
 */
@Configuration(proxyBeanMethods = false)
@EnableConfigurationProperties(ConsoleProperties.class)
// only where a web server runs: CLI commands that start Spring without one (catalog import) need no console
@org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication(
        type = org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication.Type.SERVLET)
class ConsoleSecurity {

    private static final Logger log = LoggerFactory.getLogger(ConsoleSecurity.class);
    private static final Pattern BCRYPT = Pattern.compile("^\\$2[aby]\\$\\d\\d\\$[./A-Za-z0-9]{53}$");
    static final String ADMIN = "admin";

    @Bean
    SecurityFilterChain consoleChain(HttpSecurity http) throws Exception {
        http.securityMatcher("/console", "/console/**")
                .authorizeHttpRequests(a -> a
                        .requestMatchers("/console/login", "/console/assets/**").permitAll()
                        .requestMatchers("/console/audit", "/console/audit/**").hasRole("ADMIN")
                        .requestMatchers(HttpMethod.POST, "/console/volumes/**", "/console/drives/**", "/console/cache/**").hasRole("ADMIN")
                        // the site's pages: only for users who see every experiment
                        .requestMatchers(HttpMethod.POST, "/console/transfers/**", "/console/archive/**").access(AuthorizationManagers.allOf(
                                AuthorityAuthorizationManager.hasRole("OPERATOR"), AuthorityAuthorizationManager.hasAuthority(ConsoleUser.SITE_WIDE)))
                        .requestMatchers(HttpMethod.GET, "/console/overview/**", "/console/timeline/**", "/console/transfers/**",
                                "/console/volumes/**", "/console/archive/**").hasAuthority(ConsoleUser.SITE_WIDE)
                        // requests and datasets: every user, scoped to its experiments by the pages
                        .requestMatchers(HttpMethod.POST, "/console/requests/**").hasRole("OPERATOR")
                        .requestMatchers(HttpMethod.GET, "/console", "/console/**").hasRole("VIEWER")
                        .anyRequest().denyAll())
                .formLogin(f -> f.loginPage("/console/login").defaultSuccessUrl("/console", false).permitAll())
                .logout(l -> l.logoutUrl("/console/logout").logoutSuccessUrl("/console/login?logout"))
                .headers(h -> h
                        .contentSecurityPolicy(c -> c.policyDirectives(
                                "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'"))
                        .referrerPolicy(r -> r.policy(ReferrerPolicyHeaderWriter.ReferrerPolicy.SAME_ORIGIN)));
        return http.build();
    }

    @Bean
    static RoleHierarchy consoleRoleHierarchy() {
        return RoleHierarchyImpl.fromHierarchy("ROLE_ADMIN > ROLE_OPERATOR\nROLE_OPERATOR > ROLE_VIEWER");
    }

    @Bean
    PasswordEncoder consolePasswordEncoder() {
        return new BCryptPasswordEncoder();
    }

    /**
     * The initial {@code admin} (password from {@code STAGEHAND_ADMIN_PASSWORD}, else generated and printed
     * once) and the configured logins. A bad entry stops start-up with a message naming it. Role and
     * experiments are looked up at each login: the API account of the same name when there is one (one
     * account namespace), else the login's own {@code role} and {@code experiments}.
     */
    @Bean
    UserDetailsService consoleUsers(ConsoleProperties props, PasswordEncoder encoder, ObjectProvider<Accounts> accounts) {
        record Login(String hash, Role role, Set<String> experiments) {}
        Map<String, Login> logins = new HashMap<>();
        String password = props.adminPassword();
        if (password == null || password.isBlank()) {
            byte[] random = new byte[15];
            new SecureRandom().nextBytes(random);
            password = Base64.getUrlEncoder().withoutPadding().encodeToString(random);
            String line = "Stagehand console: generated password for user '" + ADMIN + "': " + password
                    + " (set STAGEHAND_ADMIN_PASSWORD to choose one)";
            System.out.println(line);
            log.warn("no STAGEHAND_ADMIN_PASSWORD set: a console password for '{}' was generated and printed on standard output", ADMIN);
        }
        logins.put(ADMIN, new Login(encoder.encode(password), Role.ADMIN, Set.of(ConsoleUser.ALL)));
        for (int i = 0; i < props.users().size(); i++) {
            ConsoleProperties.User u = props.users().get(i);
            String where = "stagehand.console.users[" + i + "]";
            if (u.name() == null || u.name().isBlank()) throw new IllegalArgumentException(where + ".name is missing");
            if (logins.containsKey(u.name())) throw new IllegalArgumentException(where + ": user '" + u.name() + "' is defined twice");
            if (u.passwordHash() == null || !BCRYPT.matcher(u.passwordHash()).matches()) {
                throw new IllegalArgumentException(where + " (" + u.name() + "): password-hash must be a bcrypt hash ($2a$/$2b$/$2y$, 60 characters)");
            }
            Role role = u.role() == null || u.role().isBlank() ? null : Role.parse(u.role());
            Set<String> experiments = u.experiments() == null || u.experiments().isEmpty() ? Set.of(ConsoleUser.ALL) : Set.copyOf(u.experiments());
            logins.put(u.name(), new Login(u.passwordHash(), role, experiments));
        }
        return name -> {
            Login login = logins.get(name);
            if (login == null) throw new UsernameNotFoundException("no console login " + name);
            Accounts api = accounts.getIfAvailable();
            Optional<Accounts.Account> account = ADMIN.equals(name) || api == null ? Optional.empty() : api.find(name);
            if (account.isPresent()) {
                Accounts.Account a = account.get();
                return new ConsoleUser(name, login.hash(), Role.parse(a.role()), a.experiments());
            }
            if (login.role() == null) {
                log.warn("console login '{}' refused: no API account of that name and no role in stagehand.console.users", name);
                throw new UsernameNotFoundException("console login " + name + " has no account");
            }
            return new ConsoleUser(name, login.hash(), login.role(), login.experiments());
        };
    }

    /** HttpOnly, SameSite=Lax session cookie; Secure when {@code stagehand.console.secure-cookie}. */
    @Bean
    ServletContextInitializer consoleSessionCookie(ConsoleProperties props) {
        return servletContext -> {
            SessionCookieConfig c = servletContext.getSessionCookieConfig();
            c.setHttpOnly(true);
            c.setSecure(props.secureCookie());
            c.setAttribute("SameSite", "Lax");
        };
    }
}
