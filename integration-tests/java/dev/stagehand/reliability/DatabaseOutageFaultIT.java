package dev.stagehand.reliability;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * PostgreSQL stopped for 20 s in the middle of a recall + transfer run: the service keeps running (its
 * pollers and engine callbacks wait the outage out, logging it once), the pool reconnects by itself, and
 * the run completes with nothing lost and no operator action.
 */
class DatabaseOutageFaultIT {

    @Test
    @Timeout(value = 600, unit = TimeUnit.SECONDS) // a hang guard, not a speed limit
    void serviceRidesOutADatabaseStop() throws Exception {
        try (FaultRig rig = new FaultRig("DbOutage")) {
            rig.catalog(4, 20, false, 7);
            ServiceProcess s = rig.service("node-a", Map.of()).start();
            rig.submitAll(s, 4);
            rig.awaitFilesDone(10, Duration.ofSeconds(60));
            int before = rig.filesDone();
            rig.pg.halt();
            rig.faults++;
            long stopped = System.nanoTime();
            while (System.nanoTime() - stopped < TimeUnit.SECONDS.toNanos(20)) {
                s.checkAlive();
                Thread.sleep(500);
            }
            rig.pg.resume();
            boolean ended = rig.awaitEnd(Duration.ofSeconds(300));
            s.checkAlive();
            long outageLines = s.logLines("database unreachable");
            FaultRig.Report r = rig.report("postgres-stop-20s", "PostgreSQL stopped 20 s after " + before
                    + " files were delivered; outage logged " + outageLines + " time(s)");
            FaultRig.assertNothingLost(ended, r);
            assertThat(before).as("the outage fell in the middle of the run").isLessThan(rig.files.size());
            assertThat(r.reads().duplicates()).as("no re-reads: nothing was killed").isZero();
            assertThat(outageLines).as("the outage is logged, once per outage rather than per attempt").isBetween(1L, 4L);
        }
    }
}
