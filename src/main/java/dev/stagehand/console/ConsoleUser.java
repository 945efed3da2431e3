package dev.stagehand.console;

import java.security.Principal;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.springframework.security.core.Authentication;
import org.springframework.security.core.GrantedAuthority;
import org.springframework.security.core.authority.SimpleGrantedAuthority;
import org.springframework.security.core.userdetails.User;

/**
 * A logged-in console user: its role and the experiments it may see, as the API account of the same name
 * has them. Admins and accounts with {@code *} are site-wide (authority {@code SITE_WIDE}): they see the
 * site's pages (drives, volumes, timeline, transfers, archive) and every experiment; the others see their
 * experiments' requests and datasets only.
 */
final class ConsoleUser extends User {

    static final String ALL = "*";
    static final String SITE_WIDE = "SITE_WIDE";

    private final Role role;
    private final Set<String> experiments;

    ConsoleUser(String name, String passwordHash, Role role, Set<String> experiments) {
        super(name, passwordHash, authorities(role, experiments));
        this.role = role;
        this.experiments = Set.copyOf(experiments);
    }

    private static List<GrantedAuthority> authorities(Role role, Set<String> experiments) {
        // the roles below this one too, as the API's users carry them: rules need no role hierarchy
        List<GrantedAuthority> out = new ArrayList<>();
        for (Role r : Role.values()) if (r.ordinal() <= role.ordinal()) out.add(new SimpleGrantedAuthority("ROLE_" + r.name()));
        if (siteWide(role, experiments)) out.add(new SimpleGrantedAuthority(SITE_WIDE));
        return out;
    }

    private static boolean siteWide(Role role, Set<String> experiments) {
        return role == Role.ADMIN || experiments.contains(ALL);
    }

    boolean admin() {
        return role == Role.ADMIN;
    }

    boolean siteWide() {
        return siteWide(role, experiments);
    }

    /** Whether requests and datasets of {@code experiment} (null: none) are this user's to see. */
    boolean sees(String experiment) {
        return siteWide() || (experiment != null && experiments.contains(experiment));
    }

    /** The experiments to filter lists by, or null for all. */
    Set<String> scope() {
        return siteWide() ? null : experiments;
    }

    Set<String> experiments() {
        return experiments;
    }

    /** The console user behind {@code principal} (a form login's authentication). */
    static ConsoleUser of(Principal principal) {
        if (principal instanceof Authentication a && a.getPrincipal() instanceof ConsoleUser u) return u;
        throw new IllegalStateException("not a console login: " + principal);
    }
}
