package dev.stagehand.recall.simulation;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.BufferedReader;
import java.io.StringReader;
import org.junit.jupiter.api.Test;

class WorkloadTest {

    static Workload parse(String text) throws Exception {
        return Workload.parse(new BufferedReader(new StringReader(text)), "test.csv");
    }

    static final String HEADER = "# comment\narrival_s,request,file,volume,offset_bytes,size_bytes,experiment,priority,dataset\n";

    @Test
    void sameFileInTwoRequestsIsOneFileAndOnTwoVolumesHasTwoCopies() throws Exception {
        Workload w = parse(HEADER + """
                0.0,r1,/a,V1,0,100,atlas,0,d
                0.0,r1,/b,V1,100,100,atlas,0,d
                5.5,r2,/a,V1,0,100,atlas,1,d
                7.0,r3,/b,V2,900,100,atlas,0,d
                """);
        assertThat(w.files()).hasSize(2);
        assertThat(w.files().get("/b").copies()).hasSize(2);
        assertThat(w.requests()).extracting(Workload.Request::id).containsExactly("r1", "r2", "r3");
        assertThat(w.requests().get(1).priority()).isEqualTo(1);
        assertThat(w.requests().get(1).files().get(0)).isSameAs(w.files().get("/a"));
    }

    @Test
    void badInputIsRejectedWithTheLine() {
        assertThatThrownBy(() -> parse(HEADER + "0.0,r1,/a,V1,zero,100,atlas,0,d\n"))
                .hasMessageContaining("test.csv:3");
        assertThatThrownBy(() -> parse(HEADER + "0.0,r1,/a,V1\n")).hasMessageContaining("expected 9 columns");
        assertThatThrownBy(() -> parse("arrival_s,request,file\n")).hasMessageContaining("lacks column volume");
        assertThatThrownBy(() -> parse(HEADER + "0.0,r1,/a,V1,0,100,atlas,0,d\n0.0,r2,/a,V1,5,100,atlas,0,d\n"))
                .hasMessageContaining("two offsets");
    }
}
