package dev.stagehand.tape;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.stagehand.platform.EventClock;
import dev.stagehand.platform.VirtualClock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** Drive state is written to PostgreSQL on every transition and read back by the next library. */
@SpringBootTest
class TapeLibraryPersistenceIT {

    static final String LIBRARY = "it-" + UUID.randomUUID().toString().substring(0, 8);

    @DynamicPropertySource
    static void props(DynamicPropertyRegistry r) {
        r.add("stagehand.tape.clock", () -> "virtual");
        r.add("stagehand.tape.library", () -> LIBRARY);
        r.add("stagehand.tape.drives", () -> "2");
        r.add("stagehand.tape.sim.root", () -> "target/tape-it");
        r.add("stagehand.recall.enabled", () -> "false"); // this test drives the library by hand
    }

    @Autowired
    TapeLibrary library;
    @Autowired
    EventClock clock;
    @Autowired
    DriveStateStore store;
    @Autowired
    JdbcTemplate jdbc;

    @Test
    void aTapeLeftMountedIsKnownAfterARestart() {
        assertThat(library).isInstanceOf(SimulatedLibrary.class);
        VirtualClock vc = (VirtualClock) clock;
        library.mount("drive01", "P00001");
        vc.runUntilIdle();
        Map<String, Object> row = jdbc.queryForMap(
                "SELECT state, volume_label, bytes_moved FROM tape_drive WHERE library = ? AND name = 'drive01'", LIBRARY);
        assertThat(row).containsEntry("state", "mounted_idle").containsEntry("volume_label", "P00001");

        SegmentRead s = new SegmentRead(1, "/p/1", "P00001", 0, 800_000_000L, null);
        library.read("drive01", List.of(s));
        vc.runUntilIdle();
        assertThat(jdbc.queryForObject("SELECT bytes_moved FROM tape_drive WHERE library = ? AND name = 'drive01'",
                Long.class, LIBRARY)).isEqualTo(800_000_000L);

        // a new library (the service restarted) starts from the persisted rows
        List<DriveStatus> persisted = store.load(LIBRARY);
        SimulatedLibrary restarted = SimulatedLibrary.builder(new VirtualClock()).name(LIBRARY).drives(2)
                .initialDrives(persisted).build();
        assertThat(restarted.drives()).containsExactly(
                new DriveStatus("drive01", DriveState.MOUNTED_IDLE, "P00001", 800_000_000L),
                new DriveStatus("drive02", DriveState.EMPTY, null, 0));

        library.dismount("drive01");
        vc.runUntilIdle();
        assertThat(jdbc.queryForMap("SELECT state, volume_label FROM tape_drive WHERE library = ? AND name = 'drive01'",
                LIBRARY)).containsEntry("state", "empty").containsEntry("volume_label", null);
    }

    /** The simulated driver: the down request is saved with the drive and read back by the next library. */
    @Test
    void aSimulatedDriveGoingDownIsStillGoingDownAfterARestart() {
        VirtualClock vc = (VirtualClock) clock;
        library.mount("drive02", "P00002");
        vc.runUntilIdle();
        library.setEnabled("drive02", false);
        vc.runUntilIdle();
        assertThat(jdbc.queryForObject("SELECT down_requested FROM tape_drive WHERE library = ? AND name = 'drive02'",
                Boolean.class, LIBRARY)).isTrue();

        VirtualClock restartedClock = new VirtualClock();
        SimulatedLibrary restarted = SimulatedLibrary.builder(restartedClock).name(LIBRARY).drives(2)
                .initialDrives(store.load(LIBRARY)).build();
        assertThat(restarted.drive("drive02")).isEqualTo(new DriveStatus("drive02", DriveState.MOUNTED_IDLE, "P00002", 0, true));
        SegmentRead s = new SegmentRead(2, "/p/2", "P00002", 0, 1_000_000L, null);
        java.util.concurrent.CompletableFuture<ReadResult> refused = restarted.read("drive02", List.of(s)).result(s);
        restartedClock.runUntilIdle();
        assertThat(refused).isCompletedExceptionally();
        restarted.dismount("drive02");
        restartedClock.runUntilIdle();
        assertThat(restarted.drive("drive02")).isEqualTo(new DriveStatus("drive02", DriveState.DISABLED, null, 0));

        library.setEnabled("drive02", true); // this library's drive: back in service, its volume unloaded
        library.dismount("drive02");
        vc.runUntilIdle();
        assertThat(jdbc.queryForMap("SELECT state, down_requested FROM tape_drive WHERE library = ? AND name = 'drive02'", LIBRARY))
                .containsEntry("state", "empty").containsEntry("down_requested", false);
    }

    /** One site script for every verb (its first argument), with the mount limit and the other calls' limit. */
    static TapeProperties.Script hsmScript(Path tmp, String body, Duration mountLimit, Duration limit) throws java.io.IOException {
        Path script = tmp.resolve("hsm.sh");
        Files.writeString(script, body);
        Files.setPosixFilePermissions(script, PosixFilePermissions.fromString("rwxr-xr-x"));
        return new TapeProperties.Script(List.of(script.toString(), "mount"), List.of(script.toString(), "read"),
                List.of(script.toString(), "write"), List.of(script.toString(), "dismount"), tmp.resolve("work"),
                mountLimit, limit, limit, limit, TapeProperties.WriteChecksum.TRUST_SOURCE);
    }

    /**
     * The script driver: a mount that timed out leaves its drive FAILED with the volume (where the cartridge is,
     * nobody knows); the HSM had not moved it and mounts it in another drive. That drive's row holds it now, so
     * a restart knows the tape is there (before, the row broke the one-drive index, was not written and the
     * drive came back EMPTY with a tape in it).
     */
    @Test
    void aVolumeMountedAfterItsMountTimedOutInAnotherDriveIsKnownWhereItIsAfterARestart(@TempDir Path tmp) throws Exception {
        String lib = "it-" + UUID.randomUUID().toString().substring(0, 8);
        TapeProperties.Script cfg = hsmScript(tmp, """
                #!/bin/sh
                # verb drive volume: the robot is slow to reach drive d1
                if [ "$1" = mount ] && [ "$2" = d1 ]; then sleep 10; fi
                """, Duration.ofSeconds(1), Duration.ofSeconds(30));
        ScriptLibrary hsm = new ScriptLibrary(new LibraryLayout(lib, List.of("d1", "d2"), 1), cfg, store, List.of());

        assertThatThrownBy(() -> hsm.mount("d1", "S00001").get(30, TimeUnit.SECONDS)).hasRootCauseInstanceOf(TapeFailure.class);
        assertThat(store.load(lib)).containsExactly(new DriveStatus("d1", DriveState.FAILED, "S00001", 0));
        hsm.mount("d2", "S00001").get(30, TimeUnit.SECONDS);

        ScriptLibrary restarted = new ScriptLibrary(new LibraryLayout(lib, List.of("d1", "d2"), 1), cfg, store, store.load(lib));
        assertThat(restarted.drives()).containsExactly(new DriveStatus("d1", DriveState.FAILED, null, 0),
                new DriveStatus("d2", DriveState.MOUNTED_IDLE, "S00001", 0));
    }

    /**
     * The service stops while a mount script runs: the row says mounting. The next library takes the drive for
     * FAILED with its volume (where the cartridge is, nobody knows), not for a mounted idle drive to read from.
     */
    @Test
    void aDrivePersistedMidMountIsFailedWithItsVolumeAfterARestart(@TempDir Path tmp) throws Exception {
        String lib = "it-" + UUID.randomUUID().toString().substring(0, 8);
        TapeProperties.Script cfg = hsmScript(tmp, """
                #!/bin/sh
                if [ "$1" = mount ]; then sleep 30; fi
                """, Duration.ofSeconds(60), Duration.ofSeconds(60));
        ScriptLibrary hsm = new ScriptLibrary(new LibraryLayout(lib, List.of("d1"), 1), cfg, store, List.of());
        java.util.concurrent.CompletableFuture<Void> mount = hsm.mount("d1", "S00002");
        assertThat(store.load(lib)).containsExactly(new DriveStatus("d1", DriveState.MOUNTING, "S00002", 0));

        ScriptLibrary restarted = new ScriptLibrary(new LibraryLayout(lib, List.of("d1"), 1), cfg, store, store.load(lib));
        assertThat(restarted.drives()).containsExactly(new DriveStatus("d1", DriveState.FAILED, "S00002", 0));
        mount.cancel(true); // kills the first library's mount script
    }

    /**
     * Drive down across a restart (the saved flag read back): a mounted drive taken down is still going down in the
     * next library (a list refused, DISABLED once unloaded), and one that failed while going down, or whose mount the
     * stop cut off (FAILED: where its cartridge is nobody knows), is DISABLED, not back in service, once recovered, as
     * without the restart.
     */
    @Test
    void aDriveGoingDownIsStillGoingDownAfterARestart(@TempDir Path tmp) throws Exception {
        String lib = "it-" + UUID.randomUUID().toString().substring(0, 8);
        TapeProperties.Script cfg = hsmScript(tmp, """
                #!/bin/sh
                # verb drive volume [list]: reads on d1 report every file; a read on d2 breaks the drive; d3 is slow to mount
                if [ "$1" = mount ] && [ "$2" = d3 ]; then sleep 30; fi
                if [ "$1" = read ] && [ "$2" = d2 ]; then sleep 1; exit 3; fi
                if [ "$1" = read ]; then while IFS="$(printf '\\t')" read -r id rest; do echo "OK $id 1"; done < "$4"; fi
                """, Duration.ofSeconds(30), Duration.ofSeconds(30));
        LibraryLayout layout = new LibraryLayout(lib, List.of("d1", "d2", "d3"), 1);
        ScriptLibrary hsm = new ScriptLibrary(layout, cfg, store, List.of());
        hsm.mount("d1", "D00001").get(30, TimeUnit.SECONDS);
        hsm.mount("d2", "D00002").get(30, TimeUnit.SECONDS);
        hsm.setEnabled("d1", false);
        SegmentRead onD2 = new SegmentRead(2, "/d/2", "D00002", 0, 100, tmp.resolve("f2"));
        ReadBatch breaking = hsm.read("d2", List.of(onD2));
        hsm.setEnabled("d2", false); // while its list runs: the drive then fails with its volume
        breaking.done().get(30, TimeUnit.SECONDS);
        java.util.concurrent.CompletableFuture<Void> cutOff = hsm.mount("d3", "D00003");
        hsm.setEnabled("d3", false);
        assertThat(store.load(lib)).containsExactly(new DriveStatus("d1", DriveState.MOUNTED_IDLE, "D00001", 0, true),
                new DriveStatus("d2", DriveState.FAILED, "D00002", 0, true),
                new DriveStatus("d3", DriveState.MOUNTING, "D00003", 0, true));

        ScriptLibrary restarted = new ScriptLibrary(layout, cfg, store, store.load(lib));
        assertThat(restarted.drives()).containsExactly(new DriveStatus("d1", DriveState.MOUNTED_IDLE, "D00001", 0, true),
                new DriveStatus("d2", DriveState.FAILED, "D00002", 0, true),
                new DriveStatus("d3", DriveState.FAILED, "D00003", 0, true));
        SegmentRead onD1 = new SegmentRead(1, "/d/1", "D00001", 0, 100, tmp.resolve("f1"));
        assertThatThrownBy(() -> restarted.read("d1", List.of(onD1)).result(onD1).get(30, TimeUnit.SECONDS))
                .hasCauseInstanceOf(TapeFailure.class).hasMessageContaining("DRIVE_DOWN");
        restarted.dismount("d1").get(30, TimeUnit.SECONDS);
        restarted.recover("d2").get(30, TimeUnit.SECONDS);
        restarted.recover("d3").get(30, TimeUnit.SECONDS);
        List<DriveStatus> down = List.of(new DriveStatus("d1", DriveState.DISABLED, null, 0),
                new DriveStatus("d2", DriveState.DISABLED, null, 0), new DriveStatus("d3", DriveState.DISABLED, null, 0));
        assertThat(restarted.drives()).isEqualTo(down);
        assertThat(store.load(lib)).isEqualTo(down);
        cutOff.cancel(true); // kills the first library's mount script
    }

    @Test
    void theTableRefusesInconsistentRows() {
        assertThatThrownBy(() -> jdbc.update(
                "INSERT INTO tape_drive (library, name, state, volume_label) VALUES (?, 'x', 'reading', NULL)", LIBRARY))
                .hasMessageContaining("tape_drive");
        jdbc.update("INSERT INTO tape_drive (library, name, state, volume_label) VALUES (?, 'y1', 'mounted_idle', 'DUP')", LIBRARY);
        assertThatThrownBy(() -> jdbc.update(
                "INSERT INTO tape_drive (library, name, state, volume_label) VALUES (?, 'y2', 'mounted_idle', 'DUP')", LIBRARY))
                .hasMessageContaining("tape_drive_volume_idx");
        jdbc.update("DELETE FROM tape_drive WHERE library = ? AND name LIKE 'y%'", LIBRARY);
    }
}
