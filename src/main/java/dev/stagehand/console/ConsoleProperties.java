package dev.stagehand.console;

import java.util.List;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * The console's settings ({@code stagehand.console.*}).
 *
 * @param adminPassword  password of the initial {@code admin} account; the built-in default takes it from
 *                       {@code STAGEHAND_ADMIN_PASSWORD}. Empty: one is generated at start-up and printed once.
 * @param users          further accounts: name, bcrypt hash of the password, role (viewer, operator, admin)
 * @param secureCookie   mark the session cookie Secure (set it when the console is served over HTTPS)
 */
@ConfigurationProperties("stagehand.console")
public record ConsoleProperties(
        @DefaultValue("") String adminPassword,
        @DefaultValue List<User> users,
        @DefaultValue("false") boolean secureCookie) {

    /** A console account. {@code passwordHash} is a bcrypt hash ({@code $2a$}, {@code $2b$} or {@code $2y$}). */
    public record User(String name, String passwordHash, String role) {}
}
