package dev.stagehand.console;

import java.security.Principal;
import org.springframework.security.web.csrf.CsrfToken;
import org.springframework.web.bind.annotation.ControllerAdvice;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.ModelAttribute;
import org.springframework.web.server.ResponseStatusException;
import org.springframework.web.servlet.ModelAndView;

/** What every console page's layout needs, for every console controller. */
@ControllerAdvice(basePackageClasses = ConsoleModel.class)
@org.springframework.core.annotation.Order(org.springframework.core.Ordered.HIGHEST_PRECEDENCE) // before the service-wide problem details
class ConsoleModel {

    /** The CSRF token as htmx's hx-headers JSON, so every htmx request carries it. */
    @ModelAttribute("csrfHeaders")
    String csrfHeaders(CsrfToken token) {
        return token == null ? "{}" : "{\"" + token.getHeaderName() + "\": \"" + token.getToken() + "\"}";
    }

    /**
     * A refusal (404 for an unknown or another experiment's request, 400 for a bad filter) as a console page,
     * not the API's problem JSON (problem details are on for the whole service).
     */
    @ExceptionHandler(ResponseStatusException.class)
    ModelAndView refused(ResponseStatusException e) {
        ModelAndView page = new ModelAndView(e.getStatusCode().value() == 404 ? "error/404" : "error/console-status");
        page.setStatus(e.getStatusCode());
        page.addObject("status", e.getStatusCode().value());
        page.addObject("reason", e.getReason());
        return page;
    }

    @ModelAttribute("user")
    String user(Principal principal) {
        return principal == null ? null : principal.getName();
    }

    /** Whether the user may read the audit log, so the navigation shows it. */
    @ModelAttribute("admin")
    boolean admin(Principal principal) {
        return principal instanceof org.springframework.security.core.Authentication a && a.getPrincipal() instanceof ConsoleUser u
                && u.admin();
    }

    /** Whether the user sees the site's pages (every experiment), so the navigation shows them. */
    @ModelAttribute("siteWide")
    boolean siteWide(Principal principal) {
        return principal instanceof org.springframework.security.core.Authentication a && a.getPrincipal() instanceof ConsoleUser u
                && u.siteWide();
    }
}
