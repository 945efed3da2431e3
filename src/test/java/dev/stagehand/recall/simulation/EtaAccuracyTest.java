package dev.stagehand.recall.simulation;

import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.recall.RecallSimulator;
import dev.stagehand.recall.SimulationReport;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The ETA accuracy figure of a simulation: the engine's own ETA two minutes in, against the completion. */
class EtaAccuracyTest {

    @TempDir Path dir;

    @Test
    void aRequestAloneOnTheLibraryGetsAnEtaThatHolds() throws Exception {
        // one tape, nothing else queued and nothing arriving later: the engine's model is the library's, so
        // the ETA it gives is when the request completes (mount, locate, 400 GB at 400 MB/s)
        Path w = dir.resolve("w.csv");
        Files.writeString(w, """
                arrival_s,request,file,volume,offset_bytes,size_bytes,experiment,priority,dataset
                0,long,/a,V1,100000000000,200000000000,e,0,d
                0,long,/b,V1,900000000000,200000000000,e,0,d
                30,short,/c,V2,0,1000000000,e,0,d
                """);
        SimulationReport r = RecallSimulator.run(w, 2, 1, "tape-aware", null);
        assertThat(r.latencyMax()).isGreaterThan(1000);
        assertThat(r.eta().requests()).isEqualTo(1); // "short" took less than 10 minutes: left out
        assertThat(r.eta().errorP90()).isLessThan(0.02);
        assertThat(r.summary()).contains("ETA error           p50 ");
    }
}
