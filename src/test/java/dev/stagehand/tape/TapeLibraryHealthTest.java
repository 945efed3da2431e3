package dev.stagehand.tape;

import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.platform.VirtualClock;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;

/** The tape library's health: drives usable, and for the script driver whether its calls reach the HSM. */
class TapeLibraryHealthTest {

    @TempDir Path tmp;

    @Test
    void upWhileADriveIsUsableDownWhenNone() {
        SimulatedLibrary lib = SimulatedLibrary.builder(new VirtualClock()).name("h").drives(2).accessors(1).root(tmp).build();
        Health h = TapeLibraryHealth.check(lib, "simulated");
        assertThat(h.getStatus()).isEqualTo(Status.UP);
        assertThat(h.getDetails()).containsEntry("usableDrives", 2).containsEntry("library", "h");
        lib.setEnabled("drive01", false);
        assertThat(TapeLibraryHealth.check(lib, "simulated").getStatus()).isEqualTo(Status.UP);
        lib.setEnabled("drive02", false);
        Health down = TapeLibraryHealth.check(lib, "simulated");
        assertThat(down.getStatus()).isEqualTo(Status.DOWN);
        assertThat(down.getDetails()).containsEntry("reason", "no usable drive").containsEntry("drives", Map.of("disabled", 2));
        lib.setEnabled("drive02", true);
        assertThat(TapeLibraryHealth.check(lib, "simulated").getStatus()).isEqualTo(Status.UP);
    }

    TapeProperties.Script script(List<String> cmd) {
        return script(cmd, Duration.ofSeconds(10));
    }

    TapeProperties.Script script(List<String> cmd, Duration readTimeout) {
        return new TapeProperties.Script(cmd, cmd, cmd, cmd, tmp.resolve("work"), Duration.ofSeconds(10),
                readTimeout, Duration.ofSeconds(10), Duration.ofSeconds(10), TapeProperties.WriteChecksum.TRUST_SOURCE);
    }

    /**
     * One read list over its limit (a slow list; 12 h in production) used to mark the library DOWN until the next
     * call answered: readiness failed on a library that was working. Only calls timing out several times in a row
     * say the HSM does not answer; one call it answers brings it back.
     */
    @Test
    void oneTimedOutListLeavesTheScriptDriverUpSeveralInARowTakeItDown() throws Exception {
        Path hsm = tmp.resolve("hsm.sh");
        java.nio.file.Files.writeString(hsm, """
                #!/bin/sh
                # DRIVE VOLUME [LIST]: a list call (the only one with a list file) takes for ever
                if [ $# -eq 3 ]; then sleep 30; fi
                """);
        java.nio.file.Files.setPosixFilePermissions(hsm, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
        ScriptLibrary slow = new ScriptLibrary(new LibraryLayout("hsm", List.of("drive01"), 1),
                script(List.of(hsm.toString()), Duration.ofMillis(300)), LibraryEvents.NONE, List.of());
        assertThat(slow.mount("drive01", "V1")).succeedsWithin(Duration.ofSeconds(10));
        SegmentRead s = new SegmentRead(1, "/f1", "V1", 0, 100, tmp.resolve("cache/f1"));

        assertThat(slow.read("drive01", List.of(s)).done()).succeedsWithin(Duration.ofSeconds(10));
        assertThat(slow.lastCall().outcome()).isEqualTo("timed-out");
        Health one = TapeLibraryHealth.check(slow, "script");
        assertThat(one.getStatus()).isEqualTo(Status.UP);
        assertThat(one.getDetails()).containsEntry("timeoutsInRow", 1);

        for (int i = 1; i < ScriptLibrary.TIMEOUTS_UNREACHABLE; i++)
            assertThat(slow.read("drive01", List.of(s)).done()).succeedsWithin(Duration.ofSeconds(10));
        Health down = TapeLibraryHealth.check(slow, "script");
        assertThat(down.getStatus()).isEqualTo(Status.DOWN);
        assertThat((String) down.getDetails().get("reason")).contains("3 calls in a row timed out", "read-list", "not reachable");

        assertThat(slow.dismount("drive01")).succeedsWithin(Duration.ofSeconds(10)); // the HSM answers again
        assertThat(TapeLibraryHealth.check(slow, "script").getStatus()).isEqualTo(Status.UP);
        assertThat(slow.timeoutsInRow()).isZero();
    }

    @Test
    void scriptDriverIsDownWhenItsLastCallCouldNotRunAndUpAgainOnceACallAnswers() {
        ScriptLibrary unreachable = new ScriptLibrary(new LibraryLayout("hsm", List.of("drive01"), 1),
                script(List.of(tmp.resolve("no-such-hsm-command").toString())), LibraryEvents.NONE, List.of());
        assertThat(TapeLibraryHealth.check(unreachable, "script").getStatus()).isEqualTo(Status.UP); // nothing tried yet
        assertThat(unreachable.mount("drive01", "V1")).failsWithin(Duration.ofSeconds(10));
        Health down = TapeLibraryHealth.check(unreachable, "script");
        assertThat(down.getStatus()).isEqualTo(Status.DOWN);
        assertThat((String) down.getDetails().get("reason")).contains("mount", "not-run", "not reachable");
        @SuppressWarnings("unchecked")
        Map<String, Object> last = (Map<String, Object>) down.getDetails().get("lastCall");
        assertThat(last).containsEntry("command", "mount").containsEntry("outcome", "not-run").containsKey("failure");

        // a script that answers, even with a refusal (exit 4: volume unavailable), means the library is reachable
        ScriptLibrary refusing = new ScriptLibrary(new LibraryLayout("hsm", List.of("drive01"), 1),
                script(List.of("sh", "-c", "exit 4", "x")), LibraryEvents.NONE, List.of());
        assertThat(refusing.mount("drive01", "V1")).failsWithin(Duration.ofSeconds(10));
        Health up = TapeLibraryHealth.check(refusing, "script");
        assertThat(up.getStatus()).isEqualTo(Status.UP);
        assertThat(up.getDetails().get("lastCall")).asString().contains("outcome=failed", "exit=4");

        ScriptLibrary fine = new ScriptLibrary(new LibraryLayout("hsm", List.of("drive01"), 1),
                script(List.of("true")), LibraryEvents.NONE, List.of());
        assertThat(fine.mount("drive01", "V1")).succeedsWithin(Duration.ofSeconds(10));
        assertThat(TapeLibraryHealth.check(fine, "script").getStatus()).isEqualTo(Status.UP);
        assertThat(fine.lastCall().outcome()).isEqualTo("ok");
    }
}
