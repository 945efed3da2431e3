package dev.stagehand.api.tape;

import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * {@code stagehand.api.wlcg.*}: the WLCG Tape REST API. Documented in config/application.yml.
 *
 * @param sitename          what discovery names this site
 * @param endpointUri       the API's public base URI for discovery (behind a proxy); empty: from the request
 * @param maxActiveRequests open stage requests (submitted or active) beyond which a new one gets 429
 * @param maxActiveFiles    open files (queued or staging) beyond which a new request gets 429
 * @param maxActiveRequestsPerAccount the same limit for the requests of one account
 * @param maxActiveFilesPerAccount    the same limit for the files of one account
 * @param retryAfter        the Retry-After a 429 carries
 */
@ConfigurationProperties("stagehand.api.wlcg")
public record TapeRestProperties(
        @DefaultValue("stagehand") String sitename,
        @DefaultValue("") String endpointUri,
        @DefaultValue("10000") long maxActiveRequests,
        @DefaultValue("2000000") long maxActiveFiles,
        @DefaultValue("5000") long maxActiveRequestsPerAccount,
        @DefaultValue("1000000") long maxActiveFilesPerAccount,
        @DefaultValue("60s") Duration retryAfter) {

    public TapeRestProperties {
        if (maxActiveRequests < 1 || maxActiveFiles < 1 || maxActiveRequestsPerAccount < 1 || maxActiveFilesPerAccount < 1)
            throw new IllegalArgumentException("stagehand.api.wlcg.max-active-requests, max-active-files and their "
                    + "-per-account forms must be at least 1");
        if (retryAfter == null || retryAfter.isNegative())
            throw new IllegalArgumentException("stagehand.api.wlcg.retry-after must not be negative");
    }
}
