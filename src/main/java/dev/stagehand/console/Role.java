package dev.stagehand.console;

import java.util.Locale;

/** Console roles; each includes the rights of the ones below it. */
enum Role {
    /** reads every page except the audit log */
    VIEWER,
    /** also cancels requests, changes priorities, retries transfers */
    OPERATOR,
    /** also disables, enables and marks volumes and drives, and reads the audit log */
    ADMIN;

    static Role parse(String s) {
        try {
            return valueOf(s.trim().toUpperCase(Locale.ROOT));
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("unknown console role '" + s + "' (allowed: viewer, operator, admin)");
        }
    }
}
