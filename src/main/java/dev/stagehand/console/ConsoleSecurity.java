package dev.stagehand.console;

import jakarta.servlet.SessionCookieConfig;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashSet;
import java.util.List;
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
import org.springframework.security.core.userdetails.User;
import org.springframework.security.core.userdetails.UserDetails;
import org.springframework.security.core.userdetails.UserDetailsService;
import org.springframework.security.crypto.bcrypt.BCryptPasswordEncoder;
import org.springframework.security.crypto.password.PasswordEncoder;
import org.springframework.security.provisioning.InMemoryUserDetailsManager;
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
                        .requestMatchers(HttpMethod.POST, "/console/volumes/**", "/console/drives/**").hasRole("ADMIN")
                        .requestMatchers(HttpMethod.POST, "/console/requests/**", "/console/transfers/**").hasRole("OPERATOR")
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
     * once) and the configured users. A bad entry stops start-up with a message naming it.
     */
    @Bean
    UserDetailsService consoleUsers(ConsoleProperties props, PasswordEncoder encoder) {
        List<UserDetails> users = new ArrayList<>();
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
        users.add(User.withUsername(ADMIN).password(encoder.encode(password)).roles(Role.ADMIN.name()).build());
        Set<String> names = new HashSet<>(Set.of(ADMIN));
        for (int i = 0; i < props.users().size(); i++) {
            ConsoleProperties.User u = props.users().get(i);
            String where = "stagehand.console.users[" + i + "]";
            if (u.name() == null || u.name().isBlank()) throw new IllegalArgumentException(where + ".name is missing");
            if (!names.add(u.name())) throw new IllegalArgumentException(where + ": user '" + u.name() + "' is defined twice");
            if (u.passwordHash() == null || !BCRYPT.matcher(u.passwordHash()).matches()) {
                throw new IllegalArgumentException(where + " (" + u.name() + "): password-hash must be a bcrypt hash ($2a$/$2b$/$2y$, 60 characters)");
            }
            Role role = Role.parse(u.role() == null ? "" : u.role());
            users.add(User.withUsername(u.name()).password(u.passwordHash()).roles(role.name()).build());
        }
        return new InMemoryUserDetailsManager(users);
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
