package dev.stagehand.tape;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.stagehand.platform.Durable;
import dev.stagehand.platform.ScaledClock;
import dev.stagehand.platform.VirtualClock;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A segment read is reported (its future completes, and the recall engine then commits the copy as cached) only
 * after the drivers forced its target to disk, in their own writing thread. A power cut cannot be made here: what
 * these tests prove is the order, through the drivers' {@link Durable} seam (each force is recorded with what the
 * file and its future looked like at that moment), and that a target that cannot be forced is never reported read.
 * That {@link Durable#FSYNC} really reaches the disk is the JDK's {@code FileChannel.force} (fsync(2)).
 */
class ForcedBeforeReportedTest {

    @TempDir
    Path tmp;

    /** What a force saw: the file's size, and whether its segment had been reported already. */
    record Seen(long size, boolean reported) {}

    final Map<Path, Seen> forced = new ConcurrentHashMap<>();
    final Map<Path, CompletableFuture<ReadResult>> futures = new ConcurrentHashMap<>();

    /** Records each force; the file's future, if already handed out, must not be done yet. */
    final Durable recording = file -> {
        CompletableFuture<ReadResult> f = futures.get(file);
        forced.put(file, new Seen(Files.size(file), f != null && f.isDone()));
        Durable.fsync(file); // and really forced, so the real path runs too
    };

    @Test
    void theScriptDriverForcesEachFileTheScriptWroteBeforeReportingIt() throws Exception {
        // writes each listed target, reports it without a checksum (the driver sums the file), a second apart,
        // so the first file's future is handed out well before it is reported
        Path script = script("""
                #!/bin/sh
                case "$1" in
                  read)
                    while IFS="$(printf '\\t')" read -r id off size target name; do
                      head -c "$size" /dev/zero > "$target"
                      sleep 1
                      echo "OK $id"
                    done < "$4" ;;
                esac
                """);
        ScriptLibrary lib = scriptLibrary(script, recording);
        lib.mount("d1", "V1").get(30, TimeUnit.SECONDS);
        Files.createDirectories(tmp.resolve("cache/0a"));
        SegmentRead a = new SegmentRead(10, "/f10", "V1", 0, 4096, tmp.resolve("cache/0a/10.1"));
        SegmentRead b = new SegmentRead(11, "/f11", "V1", 4096, 8192, tmp.resolve("cache/0a/11.2"));
        ReadBatch batch = lib.read("d1", List.of(a, b));
        futures.put(a.target(), batch.result(a));
        futures.put(b.target(), batch.result(b));
        batch.result(a).get(30, TimeUnit.SECONDS);
        batch.result(b).get(30, TimeUnit.SECONDS);
        assertThat(forced).containsOnlyKeys(a.target(), b.target());
        assertThat(forced.get(a.target())).isEqualTo(new Seen(4096, false));
        assertThat(forced.get(b.target())).isEqualTo(new Seen(8192, false));
    }

    @Test
    void aFileTheScriptDriverCannotForceIsNotReportedRead() throws Exception {
        Path script = script("""
                #!/bin/sh
                case "$1" in
                  read)
                    while IFS="$(printf '\\t')" read -r id off size target name; do
                      head -c "$size" /dev/zero > "$target"
                      echo "OK $id"
                    done < "$4" ;;
                esac
                """);
        ScriptLibrary lib = scriptLibrary(script, file -> { throw new IOException("EIO (test)"); });
        lib.mount("d1", "V1").get(30, TimeUnit.SECONDS);
        Files.createDirectories(tmp.resolve("cache"));
        SegmentRead a = new SegmentRead(10, "/f10", "V1", 0, 4096, tmp.resolve("cache/10.1"));
        ReadBatch batch = lib.read("d1", List.of(a));
        assertThatThrownBy(() -> batch.result(a).get(30, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                .cause().hasMessageContaining("cannot force").isInstanceOf(Durable.NotForced.class);
    }

    @Test
    void theSimulatedDriverForcesOnItsCopyingThreadBeforeReporting() throws Exception {
        try (ScaledClock clock = new ScaledClock(2000);
                SimulatedLibrary lib = SimulatedLibrary.builder(clock).drives(1).root(tmp.resolve("tape")).durable(recording)
                        .build()) {
            SegmentRead s = new SegmentRead(1, "/scaled/a", "S1", 1_000_000L, 3_000_000, tmp.resolve("cache/a"));
            lib.mount("drive01", "S1").get(30, TimeUnit.SECONDS);
            ReadBatch batch = lib.read("drive01", List.of(s));
            futures.put(s.target(), batch.result(s));
            batch.result(s).get(30, TimeUnit.SECONDS);
            assertThat(forced).containsOnlyKeys(s.target());
            assertThat(forced.get(s.target())).isEqualTo(new Seen(3_000_000, false));
        }
    }

    @Test
    void theSimulatedDriverForcesOnTheVirtualClockToo() {
        VirtualClock clock = new VirtualClock();
        SimulatedLibrary lib = SimulatedLibrary.builder(clock).drives(1).root(tmp.resolve("tape")).durable(recording).build();
        SegmentRead s = new SegmentRead(1, "/virtual/a", "S1", 0, 70_000, tmp.resolve("cache/a"));
        lib.mount("drive01", "S1");
        clock.runUntilIdle();
        ReadBatch batch = lib.read("drive01", List.of(s));
        futures.put(s.target(), batch.result(s));
        clock.runUntilIdle();
        assertThat(batch.result(s).join().segment()).isEqualTo(s);
        assertThat(forced).containsEntry(s.target(), new Seen(70_000, false));
    }

    @Test
    void aFileTheSimulatedDriverCannotForceIsNotReportedRead() {
        VirtualClock clock = new VirtualClock();
        SimulatedLibrary lib = SimulatedLibrary.builder(clock).drives(1).root(tmp.resolve("tape"))
                .durable(file -> { throw new IOException("EIO (test)"); }).build();
        SegmentRead s = new SegmentRead(1, "/virtual/a", "S1", 0, 70_000, tmp.resolve("cache/a"));
        lib.mount("drive01", "S1");
        clock.runUntilIdle();
        ReadBatch batch = lib.read("drive01", List.of(s));
        clock.runUntilIdle();
        assertThat(batch.result(s)).isCompletedExceptionally();
        assertThatThrownBy(() -> batch.result(s).join()).hasRootCauseMessage("EIO (test)")
                .cause().isInstanceOf(Durable.NotForced.class);
    }

    Path script(String text) throws IOException {
        Path script = tmp.resolve("hsm.sh");
        Files.writeString(script, text);
        Files.setPosixFilePermissions(script, PosixFilePermissions.fromString("rwxr-xr-x"));
        return script;
    }

    ScriptLibrary scriptLibrary(Path script, Durable durable) {
        Duration limit = Duration.ofSeconds(30);
        TapeProperties.Script cfg = new TapeProperties.Script(ScriptLibraryTest.cmd(script, "mount"),
                ScriptLibraryTest.cmd(script, "read"), ScriptLibraryTest.cmd(script, "write"),
                ScriptLibraryTest.cmd(script, "dismount"), tmp.resolve("work"), limit, limit, limit, limit,
                TapeProperties.WriteChecksum.TRUST_SOURCE);
        return new ScriptLibrary(new LibraryLayout("test", List.of("d1"), 1), cfg, LibraryEvents.NONE, List.of(), durable);
    }
}
