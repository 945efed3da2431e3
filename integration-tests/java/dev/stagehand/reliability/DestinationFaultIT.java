package dev.stagehand.reliability;

import dev.stagehand.transfer.GridFtpServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The GridFTP destination stopped (SIGSTOP: transfers stall, the mover's stall detection aborts and retries
 * them) and resumed; then killed outright and started again on its port: every file is delivered intact.
 */
class DestinationFaultIT {

    @Test
    @Timeout(value = 600, unit = TimeUnit.SECONDS) // a hang guard, not a speed limit
    void stalledAndKilledDestination() throws Exception {
        try (FaultRig rig = new FaultRig("Destination")) {
            rig.catalog(4, 20, false, 11);
            ServiceProcess s = rig.service("node-a", Map.of()).start();
            rig.submitAll(s, 4);
            rig.awaitFilesDone(5, Duration.ofSeconds(60));
            int atStop = rig.filesDone();
            List<Long> stopped = new ArrayList<>(rig.destination.children());
            stopped.add(0, rig.destination.pid());
            for (long pid : stopped) GridFtpServer.signal(pid, "STOP");
            rig.faults++;
            Thread.sleep(7_000); // longer than the stall timeout (4 s), with seconds to spare
            for (long pid : stopped) GridFtpServer.signal(pid, "CONT");
            rig.awaitFilesDone(atStop + 10, Duration.ofSeconds(60));
            int atKill = rig.filesDone();
            rig.destination.kill();
            rig.faults++;
            Thread.sleep(5_000);
            rig.restartDestination();
            boolean ended = rig.awaitEnd(Duration.ofSeconds(300));
            s.checkAlive();
            FaultRig.Report r = rig.report("gridftp-destination", "destination SIGSTOPped 7 s after " + atStop
                    + " files and resumed; killed after " + atKill + " files and restarted 5 s later");
            FaultRig.assertNothingLost(ended, r);
        }
    }
}
