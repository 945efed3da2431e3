package dev.stagehand.reliability;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A cache directory far too small for the run (4 MB for ~35 MB of files): staging waits for space that
 * delivered files free, nothing fails, nothing is read twice, and every file arrives intact.
 */
class CacheFullFaultIT {

    @Test
    @Timeout(value = 600, unit = TimeUnit.SECONDS) // a hang guard, not a speed limit
    void smallCacheFillsAndDrains() throws Exception {
        try (FaultRig rig = new FaultRig("CacheFull")) {
            rig.catalog(4, 15, false, 17);
            long total = rig.sizes.values().stream().mapToLong(Long::longValue).sum();
            ServiceProcess s = rig.service("node-a", Map.of("stagehand.cache.directories[0].capacity", "4MB",
                    "stagehand.recall.cache-batch-bytes", "1500000")).start();
            rig.submitAll(s, 3);
            rig.faults = 1;
            boolean ended = rig.awaitEnd(Duration.ofSeconds(300));
            s.checkAlive();
            Long peak = rig.jdbc.queryForObject("SELECT max(used_bytes + reserved_bytes) FROM cache_directory", Long.class);
            FaultRig.Report r = rig.report("cache-full", String.format("cache directory of 4 MB for %.1f MB of files", total / 1e6));
            FaultRig.assertNothingLost(ended, r);
            assertThat(total).isGreaterThan(8 * 4_000_000L);
            assertThat(peak).as("the cache never overfilled").isLessThanOrEqualTo(4_000_000L);
            assertThat(r.reads().duplicates()).as("nothing read twice").isZero();
        }
    }
}
