package dev.stagehand.api.security;

import java.util.Locale;

/** API roles; each includes the rights of the ones below it. */
public enum ApiRole {
    /** reads its experiments' requests, lists them, asks archiveinfo */
    VIEWER,
    /** also submits, cancels, releases and deletes its experiments' requests */
    OPERATOR,
    /** every experiment; manages accounts and tokens */
    ADMIN;

    public String dbName() {
        return name().toLowerCase(Locale.ROOT);
    }

    public static ApiRole parse(String s) {
        try {
            return valueOf(s.trim().toUpperCase(Locale.ROOT));
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("unknown role '" + s + "' (allowed: viewer, operator, admin)");
        }
    }
}
