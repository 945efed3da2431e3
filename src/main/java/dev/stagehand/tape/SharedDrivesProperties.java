package dev.stagehand.tape;

import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * Several service instances driving one physical library through the script driver
 * ({@code stagehand.tape.shared-drives.*}): each drive is leased in PostgreSQL ({@code drive_lease}) by the
 * instance using it, so no two mount on the same drive. Off: this instance takes every drive as its own.
 *
 * @param enabled    lease drives (every instance sharing the library must set it)
 * @param instanceId names this instance's leases; empty: host name and process id (a restart under a new name
 *                   waits for its predecessor's leases to lapse). Use the same name as stagehand.recall.instance-id
 * @param lease      a drive lease lapses unless renewed within this; another instance then takes the drive over
 *                   as its holder left it (renewed every quarter of it)
 */
@ConfigurationProperties("stagehand.tape.shared-drives")
public record SharedDrivesProperties(
        @DefaultValue("false") boolean enabled,
        @DefaultValue("") String instanceId,
        @DefaultValue("2m") Duration lease) {

    public SharedDrivesProperties {
        if (lease == null || lease.toMillis() < 1000)
            throw new IllegalArgumentException("stagehand.tape.shared-drives.lease must be at least 1s, was " + lease);
    }
}
