package dev.stagehand.tape;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.MapConfigurationPropertySource;

/** stagehand.tape.* binds to the documented defaults, and every model parameter can be overridden. */
class TapePropertiesTest {

    static TapeProperties bind(Map<String, String> props) {
        return new Binder(new MapConfigurationPropertySource(props)).bindOrCreate("stagehand.tape", TapeProperties.class);
    }

    @Test
    void defaultsAreTheReferenceLto9Library() {
        TapeProperties p = bind(Map.of());
        assertThat(p.driver()).isEqualTo(TapeProperties.Driver.SIMULATED);
        assertThat(p.clock()).isEqualTo(TapeProperties.ClockKind.REAL);
        assertThat(p.scale()).isEqualTo(60);
        assertThat(p.library()).isEqualTo("sim");
        assertThat(p.drives()).isEqualTo(4);
        assertThat(p.accessors()).isEqualTo(1);
        assertThat(p.sim().model()).isEqualTo(TapeModel.lto9());
        assertThat(p.sim().mountTimeout()).isEqualTo(Duration.ofMinutes(15));
        assertThat(p.sim().faults().badSegments()).isEmpty();
        assertThat(p.script().writeChecksum()).isEqualTo(TapeProperties.WriteChecksum.TRUST_SOURCE);
    }

    @Test
    void overrides() {
        TapeProperties p = bind(Map.of(
                "stagehand.tape.clock", "virtual",
                "stagehand.tape.drives", "16",
                "stagehand.tape.sim.model.load-seconds", "20",
                "stagehand.tape.sim.model.bytes-per-second", "300000000",
                "stagehand.tape.sim.faults.bad-segments[0]", "V1:/a/b",
                "stagehand.tape.script.mount", "/bin/hsm,mount",
                "stagehand.tape.script.write-checksum", "required"));
        assertThat(p.clock()).isEqualTo(TapeProperties.ClockKind.VIRTUAL);
        assertThat(p.drives()).isEqualTo(16);
        assertThat(p.sim().model().loadSeconds()).isEqualTo(20);
        assertThat(p.sim().model().bytesPerSecond()).isEqualTo(3e8);
        assertThat(p.sim().model().accessorMoveSeconds()).isEqualTo(6.7);
        assertThat(p.sim().faults().plan().isBad("V1", "/a/b")).isTrue();
        assertThat(p.script().mount()).containsExactly("/bin/hsm", "mount");
        assertThat(p.script().writeChecksum()).isEqualTo(TapeProperties.WriteChecksum.REQUIRED);
    }
}
