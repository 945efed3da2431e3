package dev.stagehand.api.requests;

import java.util.Optional;
import java.util.UUID;

/** Request ids in URLs: only the canonical 36-character form, since {@link UUID#fromString} also takes "1-2-3-4-5". */
public final class RequestIds {

    private RequestIds() {}

    /** The id, or empty when {@code id} is not a canonical UUID. */
    public static Optional<UUID> parse(String id) {
        try {
            if (id.length() == 36) return Optional.of(UUID.fromString(id));
        } catch (IllegalArgumentException ignored) {
            // not a UUID
        }
        return Optional.empty();
    }
}
