package dev.stagehand.recall.simulation;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.stagehand.recall.RecallSimulator;
import dev.stagehand.recall.SimulationReport;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Gap read-through, end to end on the simulated LTO-9 library (1 drive, 1 accessor), against times worked
 * out by hand from tape-model.md. Cw = 18e12 / 280 bytes; a locate on one wrap forward over g bytes costs
 * 4.3 + 60 g / Cw, streaming over it g / 400e6: reading through wins below about 2.74 GB.
 */
class ReadThroughTest {

    static final double CW = 18e12 / 280, MOUNT = 6.7 + 17, GB = 1e9 / 400e6;

    @TempDir Path dir;

    private Path workload(String... rows) throws Exception {
        StringBuilder sb = new StringBuilder("arrival_s,request,file,volume,offset_bytes,size_bytes,experiment,priority,dataset\n");
        for (String r : rows) sb.append(r).append('\n');
        Path p = dir.resolve("w.csv");
        Files.writeString(p, sb);
        return p;
    }

    @Test
    void smallGapsAreReadThroughAndLargeOnesLocated() throws Exception {
        // A: 1 GB at 1 GB (1 GB gap from BOT), B: 1 GB at 3 GB (1 GB gap), C: 0.5 GB at 10 GB (6 GB gap);
        // the mount moves 2.5 GB requested + 2 GB of gaps, under 5 GB: the rewind stays the short one
        Path w = workload("0,r1,/a,V1,1000000000,1000000000,e,0,d", "0,r1,/b,V1,3000000000,1000000000,e,0,d",
                "0,r1,/c,V1,10000000000,500000000,e,0,d");
        SimulationReport ta = RecallSimulator.run(w, 1, 1, "tape-aware", null);
        double locateC = 4.3 + 60 * 6e9 / CW; // 9.9 s: cheaper than streaming 6 GB (15 s)
        // mount, stream 1 GB, read A, stream 1 GB, read B, locate to C, read C
        assertEquals(MOUNT + GB + GB + GB + GB + locateC + GB / 2, ta.makespanSeconds(), 1e-6);
        assertEquals(3, ta.files());
        assertEquals(2_500_000_000L, ta.bytes()); // gap bytes are read but are not requested bytes
        assertEquals(locateC, ta.locateSecondsTotal(), 1e-6);

        // the greedy baseline locates every time: 5.233 s to A, 5.233 s to B, 9.9 s to C
        SimulationReport gr = RecallSimulator.run(w, 1, 1, "greedy", null);
        double locate1 = 4.3 + 60 * 1e9 / CW;
        assertEquals(MOUNT + locate1 + GB + locate1 + GB + locateC + GB / 2, gr.makespanSeconds(), 1e-6);
        assertEquals(2 * locate1 + locateC, gr.locateSecondsTotal(), 1e-6);
    }

    @Test
    void aGapIsNotReadWhenItWouldCostALongerRewindThanItSaves() throws Exception {
        // 4.5 GB requested: streaming the 1 GB gap saves 2.7 s but moves the mount past 5 GB, where the
        // rewind at dismount takes 110 s instead of 55 s; so the drive locates.
        Path w = workload("0,r1,/a,V1,0,2500000000,e,0,d", "0,r1,/b,V1,3500000000,2000000000,e,0,d");
        SimulationReport ta = RecallSimulator.run(w, 1, 1, "tape-aware", null);
        double locate = 4.3 + 60 * 1e9 / CW;
        assertEquals(MOUNT + 2.5e9 / 400e6 + locate + 2e9 / 400e6, ta.makespanSeconds(), 1e-6);
        assertEquals(locate, ta.locateSecondsTotal(), 1e-6);
    }
}
