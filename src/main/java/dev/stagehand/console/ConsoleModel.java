package dev.stagehand.console;

import java.security.Principal;
import org.springframework.security.web.csrf.CsrfToken;
import org.springframework.web.bind.annotation.ControllerAdvice;
import org.springframework.web.bind.annotation.ModelAttribute;

/** What every console page's layout needs, for every console controller. */
@ControllerAdvice(basePackageClasses = ConsoleModel.class)
class ConsoleModel {

    /** The CSRF token as htmx's hx-headers JSON, so every htmx request carries it. */
    @ModelAttribute("csrfHeaders")
    String csrfHeaders(CsrfToken token) {
        return token == null ? "{}" : "{\"" + token.getHeaderName() + "\": \"" + token.getToken() + "\"}";
    }

    @ModelAttribute("user")
    String user(Principal principal) {
        return principal == null ? null : principal.getName();
    }
}
