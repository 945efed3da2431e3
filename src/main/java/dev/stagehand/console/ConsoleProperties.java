package dev.stagehand.console;

import java.util.List;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * The console's settings ({@code stagehand.console.*}).
 *
 * @param adminPassword  password of the initial {@code admin} account; the built-in default takes it from
 *                       {@code STAGEHAND_ADMIN_PASSWORD}. Empty: one is generated at start-up and printed once.
 * @param users          further console logins: name and bcrypt hash of the password; role and experiments come
 *                       from the API account of the same name, else from {@code role} and {@code experiments} here
 * @param secureCookie   mark the session cookie Secure (set it when the console is served over HTTPS)
 */
@ConfigurationProperties("stagehand.console")
public record ConsoleProperties(
        @DefaultValue("") String adminPassword,
        @DefaultValue List<User> users,
        @DefaultValue("false") boolean secureCookie) {

    /**
     * A console login. {@code passwordHash} is a bcrypt hash ({@code $2a$}, {@code $2b$} or {@code $2y$}).
     * {@code role} (viewer, operator, admin) and {@code experiments} ({@code *}: all, the default) apply only
     * when no API account has this name: an API account's role and experiments always win, so one account
     * means the same in the API and the console.
     */
    public record User(String name, String passwordHash, String role, List<String> experiments) {}
}
