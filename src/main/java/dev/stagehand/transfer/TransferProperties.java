package dev.stagehand.transfer;

import java.time.Duration;
import java.util.List;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * {@code stagehand.transfer.*}: the movers and the transfer queue (documented in config/application.yml).
 *
 * @param mover               how files are moved
 * @param queue               how the service drains the transfer_job table
 * @param existingDestination what a queued transfer does about a file already at its destination
 */
@ConfigurationProperties("stagehand.transfer")
public record TransferProperties(@DefaultValue MoverSettings mover, @DefaultValue Queue queue,
                                 @DefaultValue ExistingDestination existingDestination) {

    public TransferProperties {
        if (existingDestination == null) existingDestination = new ExistingDestination(false, List.of());
    }

    /**
     * A queued transfer whose destination holds a file it did not write itself (it looks before its first write):
     * the same file (size and the catalog's Adler32, else the source's) is done without sending it; another one
     * fails it for good (DESTINATION_EXISTS, left as it is: FTS3's default) unless overwriting is enabled for that
     * destination. A file the transfer itself began writing (an earlier claim of the same row) is always resumed
     * or written over, and so is one a row that asked to overwrite goes to ({@link TransferQueue.Request#overwrite()}:
     * replication's, at a replica's own path).
     *
     * @param overwrite      overwrite another file at any destination (FTS3's overwrite = true)
     * @param overwriteUnder destination URL prefixes where another file is overwritten, e.g. a shared area
     *                       where recall destinations may hold stale files ({@code gsiftp://dtn.site-a:2811/scratch/})
     */
    public record ExistingDestination(@DefaultValue("false") boolean overwrite, @DefaultValue List<String> overwriteUnder) {
        public ExistingDestination {
            overwriteUnder = overwriteUnder == null ? List.of() : List.copyOf(overwriteUnder);
            for (String prefix : overwriteUnder) {
                if (prefix == null || !prefix.matches("(?i)(gsi)?ftp://[^/]+/.*"))
                    throw new IllegalArgumentException("stagehand.transfer.existing-destination.overwrite-under: not a "
                            + "gsiftp:// or ftp:// URL with a path: " + prefix);
            }
        }

        /** Whether another file at {@code destination} is overwritten. */
        public boolean overwrites(java.net.URI destination) {
            if (overwrite) return true;
            String url = destination.toString();
            return overwriteUnder.stream().anyMatch(url::startsWith);
        }
    }

    /**
     * @param enabled      drain transfer_job in this service
     * @param pollInterval how often to look for queued rows when idle (rows queued by this instance wake it at once)
     * @param batchSize    rows claimed at once
     * @param maxInFlight  rows handed to the movers and not yet finished, at most
     * @param lease        how long a claim holds without renewal (renewed every third of it)
     * @param instanceId   names this instance's claims; a restart under the same name takes its rows back at
     *                     once instead of waiting for their leases. Must differ between running instances.
     *                     Empty: host name and process id (a restart waits for the leases)
     * @param outage       what happens to files whose destination (or source) cannot be reached
     * @param maxLapses    claims of a row that end with no outcome (its lease lapsed, or its instance restarted
     *                     while holding it) before it fails: a file that takes down every instance moving it
     *                     would otherwise be claimed for ever
     */
    public record Queue(@DefaultValue("true") boolean enabled, @DefaultValue("1s") Duration pollInterval,
                        @DefaultValue("200") int batchSize, @DefaultValue("2000") int maxInFlight,
                        @DefaultValue("2m") Duration lease, @DefaultValue("") String instanceId,
                        @DefaultValue Outage outage, @DefaultValue("5") int maxLapses) {
        public Queue {
            if (maxLapses < 1) throw new IllegalArgumentException("stagehand.transfer.queue.max-lapses must be >= 1, not " + maxLapses);
            // each of these stops the drainer, spins it, or lets other instances take rows still moving here
            if (batchSize < 1 || maxInFlight < 1)
                throw new IllegalArgumentException("stagehand.transfer.queue.batch-size and max-in-flight must be >= 1");
            if (!lease.isPositive()) throw new IllegalArgumentException("stagehand.transfer.queue.lease must be > 0");
            // leases are renewed between polls: a poll as long as the lease lets them lapse while files move
            if (!pollInterval.isPositive() || pollInterval.compareTo(lease.dividedBy(2)) >= 0)
                throw new IllegalArgumentException("stagehand.transfer.queue.poll-interval must be > 0 and shorter than half the lease ("
                        + lease + "), not " + pollInterval);
        }
    }

    /**
     * A file whose other end refused, timed out or stalled through all the mover's attempts is put back in
     * the queue rather than failed, and claimed again after {@code delay}, doubled per put-back up to
     * {@code maxDelay}; once its outage has lasted {@code giveUpAfter} it fails (an operator can retry it).
     *
     * @param delay       wait before the first claim after an outage failure
     * @param maxDelay    longest wait between claims
     * @param giveUpAfter how long an outage may last before the file fails; 0: fail at once (no put-back)
     */
    public record Outage(@DefaultValue("30s") Duration delay, @DefaultValue("10m") Duration maxDelay,
                         @DefaultValue("24h") Duration giveUpAfter) {
        public Outage {
            if (delay.isNegative() || maxDelay.isNegative() || giveUpAfter.isNegative())
                throw new IllegalArgumentException("stagehand.transfer.queue.outage durations must not be negative");
        }
    }
}
