package dev.stagehand.reliability;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Tape faults given to a separate service process through its properties: a drive that fails half-way
 * through a read (its cartridge stuck in it), bad segments (media errors) and a silently corrupted segment
 * (caught by the cache's checksum; the copy of that file read first, whichever volume). Every file has a
 * second copy on another volume; every request completes from the good copies, intact.
 */
class TapeFaultIT {

    @Test
    @Timeout(value = 600, unit = TimeUnit.SECONDS) // a hang guard, not a speed limit
    void driveFailureBadAndCorruptSegments() throws Exception {
        try (FaultRig rig = new FaultRig("TapeFaults")) {
            rig.catalog(4, 15, true, 13);
            Map<String, String> faults = new LinkedHashMap<>();
            faults.put("stagehand.tape.drives", "3");
            faults.put("stagehand.tape.sim.faults.failing-drives[0]", "drive01");
            String[] bad = {rig.files.get(3), rig.files.get(20), rig.files.get(41)};
            for (int i = 0; i < bad.length; i++) {
                faults.put("stagehand.tape.sim.faults.bad-segments[" + i + "]", rig.volumeOf(bad[i]) + ":" + bad[i]);
            }
            String corrupt = rig.files.get(33);
            // the copy read first is the corrupt one: the scheduler may read either copy (a mounted volume's
            // copy is preferred), and the test needs the refused copy to be read whichever it picks
            faults.put("stagehand.tape.sim.faults.corrupt-segments[0]", "*:" + corrupt);
            rig.faults = 2 + bad.length;
            ServiceProcess s = rig.service("node-a", faults).start();
            rig.submitAll(s, 4);
            boolean ended = rig.awaitEnd(Duration.ofSeconds(300));
            FaultRig.Report r = rig.report("tape-faults", "drive01 fails mid-read (cartridge stuck), " + bad.length
                    + " bad segments, 1 corrupt segment");
            FaultRig.assertNothingLost(ended, r, 1);
            assertThat(r.reads().perFile().get(corrupt)).as("the corrupted file: refused copy, then the good one").isEqualTo(2);
            assertThat(r.reads().failed()).as("failed reads: bad segments and the failing drive").isGreaterThanOrEqualTo(bad.length + 1);
            assertThat(rig.jdbc.queryForObject("SELECT count(*) FROM segment WHERE state = 'suspect'", Integer.class))
                    .as("the corrupt copy is marked suspect").isEqualTo(1);
            assertThat(rig.jdbc.queryForObject("SELECT state FROM tape_drive WHERE name = 'drive01'", String.class))
                    .isEqualTo("failed");
        }
    }
}
