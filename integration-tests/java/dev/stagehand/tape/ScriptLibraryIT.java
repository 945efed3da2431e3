package dev.stagehand.tape;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.zip.Adler32;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The script driver against the example directory-backed library, config/examples/script-driver/dirlib.sh. */
class ScriptLibraryIT {

    static final Path SCRIPT = Path.of("config/examples/script-driver/dirlib.sh").toAbsolutePath();

    @TempDir
    Path tmp;
    Path root;
    final List<String> log = new ArrayList<>();

    @BeforeEach
    void volumes() throws Exception {
        root = tmp.resolve("lib");
        Path v1 = Files.createDirectories(root.resolve("slots/V1"));
        Random r = new Random(3);
        long offset = 0;
        for (int i = 0; i < 3; i++) {
            byte[] b = new byte[100_000 + i];
            r.nextBytes(b);
            Files.write(v1.resolve(Long.toString(offset)), b);
            offset += b.length;
        }
        Files.createDirectories(root.resolve("slots/V2"));
    }

    ScriptLibrary library(Duration readTimeout) {
        List<String> base = List.of(SCRIPT.toString(), root.toString());
        TapeProperties.Script cfg = new TapeProperties.Script(cmd(base, "mount"), cmd(base, "read"), cmd(base, "write"),
                cmd(base, "dismount"), tmp.resolve("work"), Duration.ofSeconds(30), readTimeout, Duration.ofSeconds(30),
                Duration.ofSeconds(30), TapeProperties.WriteChecksum.TRUST_SOURCE);
        LibraryEvents events = new LibraryEvents() {
            @Override
            public synchronized void driveChanged(String library, DriveStatus s, java.time.Instant at) {
                log.add(s.drive() + " " + s.state());
            }
        };
        return new ScriptLibrary(new LibraryLayout("dirlib", List.of("drive01", "drive02"), 1), cfg, events, List.of());
    }

    static List<String> cmd(List<String> base, String verb) {
        List<String> c = new ArrayList<>(base);
        c.add(verb);
        return c;
    }

    static <T> T get(CompletableFuture<T> f) throws Exception {
        return f.get(30, TimeUnit.SECONDS);
    }

    static TapeFailure failure(CompletableFuture<?> f) throws Exception {
        try {
            f.get(30, TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
            assertThat(e.getCause()).isInstanceOf(TapeFailure.class);
            return (TapeFailure) e.getCause();
        }
        throw new AssertionError("did not fail");
    }

    static long adler(Path p) throws Exception {
        Adler32 a = new Adler32();
        a.update(Files.readAllBytes(p));
        return a.getValue();
    }

    @Test
    void mountReadListWriteAndDismount() throws Exception {
        ScriptLibrary lib = library(Duration.ofSeconds(30));
        get(lib.mount("drive01", "V1"));
        assertThat(lib.drives().get(0)).isEqualTo(new DriveStatus("drive01", DriveState.MOUNTED_IDLE, "V1", 0));
        assertThat(root.resolve("drives/drive01/V1")).isDirectory();

        SegmentRead a = new SegmentRead(1, "/d/a", "V1", 0, 100_000, tmp.resolve("cache/a"));
        SegmentRead c = new SegmentRead(3, "/d/c with space", "V1", 200_001, 100_002, tmp.resolve("cache/c"));
        SegmentRead bad = new SegmentRead(9, "/d/missing", "V1", 999, 10, tmp.resolve("cache/x"));
        ReadBatch batch = lib.read("drive01", List.of(a, bad, c));
        get(batch.done());
        ReadResult ra = get(batch.result(a));
        assertThat(Files.readAllBytes(tmp.resolve("cache/a"))).isEqualTo(Files.readAllBytes(root.resolve("drives/drive01/V1/0")));
        assertThat(ra.adler32()).isEqualTo(adler(tmp.resolve("cache/a")));
        assertThat(get(batch.result(c)).adler32()).isEqualTo(adler(root.resolve("drives/drive01/V1/200001")));
        TapeFailure f = failure(batch.result(bad));
        assertThat(f.kind()).isEqualTo(TapeFailure.Kind.MEDIA_ERROR);
        assertThat(f.getMessage()).contains("no segment at offset 999");

        Path src = tmp.resolve("new");
        Files.write(src, new byte[] {1, 2, 3, 4, 5});
        FileWrite w = new FileWrite(42, "/d/new", src, 5);
        waitIdle(lib, "drive01");
        WriteBatch wb = lib.write("drive01", List.of(w));
        WriteBatch.WrittenSegment ws = get(wb.result(w));
        assertThat(ws.offsetBytes()).isEqualTo(300_003);
        assertThat(ws.adler32()).isEqualTo(adler(src));
        assertThat(ws.verified()).as("dirlib.sh reports no checksum: the source's sum, not confirmed from the volume").isFalse();
        waitIdle(lib, "drive01");
        get(lib.dismount("drive01"));
        assertThat(root.resolve("slots/V1/300003")).hasBinaryContent(new byte[] {1, 2, 3, 4, 5});
        assertThat(lib.drives().get(0)).isEqualTo(new DriveStatus("drive01", DriveState.EMPTY, null, 0));
        assertThat(log).contains("drive01 MOUNTING", "drive01 MOUNTED_IDLE", "drive01 READING", "drive01 WRITING",
                "drive01 UNLOADING", "drive01 EMPTY");
    }

    /** A file's future completes before the script's exit is seen; wait for the drive to be idle again. */
    static void waitIdle(ScriptLibrary lib, String drive) throws InterruptedException {
        for (int i = 0; i < 300; i++) {
            if (lib.drives().stream().anyMatch(d -> d.drive().equals(drive) && d.state() == DriveState.MOUNTED_IDLE)) return;
            Thread.sleep(50);
        }
        throw new AssertionError("drive " + drive + " did not become idle: " + lib.drives());
    }

    @Test
    void clientMetadataReachesTheScriptInASideFileAndTheListKeepsItsFiveColumns() throws Exception {
        ScriptLibrary lib = library(Duration.ofSeconds(30));
        get(lib.mount("drive01", "V1"));
        SegmentRead a = new SegmentRead(1, "/d/a", "V1", 0, 100_000, tmp.resolve("cache/a"),
                "{\"activity\":\"reprocessing\",\"note\":\"tab\\there\"}");
        SegmentRead b = new SegmentRead(2, "/d/b", "V1", 100_000, 100_001, tmp.resolve("cache/b"));
        ReadBatch batch = lib.read("drive01", List.of(a, b));
        get(batch.done());
        assertThat(get(batch.result(a)).adler32()).isEqualTo(adler(tmp.resolve("cache/a")));
        assertThat(get(batch.result(b)).adler32()).isEqualTo(adler(tmp.resolve("cache/b")));
        // one line for the file with metadata, none for the other; the JSON's escaped tab stays escaped
        assertThat(Files.readAllLines(root.resolve("read-metadata.log")))
                .containsExactly("V1 1 {\"activity\":\"reprocessing\",\"note\":\"tab\\there\"}");
        waitIdle(lib, "drive01");
        try (var left = Files.list(tmp.resolve("work"))) { // the side file goes with the call
            assertThat(left.map(p -> p.getFileName().toString())).noneMatch(n -> n.startsWith("read-metadata"));
        }

        // a list without metadata gets no variable, and the script logs nothing
        SegmentRead c = new SegmentRead(3, "/d/c", "V1", 200_001, 100_002, tmp.resolve("cache/c"));
        ReadBatch plain = lib.read("drive01", List.of(c));
        get(plain.done());
        get(plain.result(c));
        assertThat(Files.readAllLines(root.resolve("read-metadata.log"))).hasSize(1);
    }

    /**
     * CTA's drive "down": a drive disabled while it holds a volume finishes its list, refuses a new one (DRIVE_DOWN),
     * and is DISABLED once unloaded.
     */
    @Test
    void aMountedDriveDisabledGoesDownOnceItsVolumeIsUnloaded() throws Exception {
        ScriptLibrary lib = library(Duration.ofSeconds(30));
        get(lib.mount("drive01", "V1"));
        SegmentRead a = new SegmentRead(1, "/d/a", "V1", 0, 100_000, tmp.resolve("cache/a"));
        ReadBatch batch = lib.read("drive01", List.of(a));
        lib.setEnabled("drive01", false); // the list under way ends
        assertThat(lib.drives().get(0).downRequested()).isTrue();
        get(batch.done());
        assertThat(get(batch.result(a)).adler32()).isEqualTo(adler(tmp.resolve("cache/a")));
        assertThat(lib.drives().get(0).state()).isEqualTo(DriveState.MOUNTED_IDLE);
        SegmentRead b = new SegmentRead(2, "/d/b", "V1", 100_000, 100_000, tmp.resolve("cache/b"));
        assertThat(failure(lib.read("drive01", List.of(b)).result(b)).kind()).as("no new list").isEqualTo(TapeFailure.Kind.DRIVE_DOWN);
        get(lib.dismount("drive01"));
        assertThat(lib.drives().get(0).state()).isEqualTo(DriveState.DISABLED);
        assertThat(log.getLast()).isEqualTo("drive01 DISABLED");
        lib.setEnabled("drive01", true);
        assertThat(lib.drives().get(0).state()).isEqualTo(DriveState.EMPTY);
    }

    @Test
    void missingVolumeIsUnavailableAndTheDriveStaysEmpty() throws Exception {
        ScriptLibrary lib = library(Duration.ofSeconds(30));
        TapeFailure f = failure(lib.mount("drive01", "NOPE"));
        assertThat(f.kind()).isEqualTo(TapeFailure.Kind.VOLUME_UNAVAILABLE);
        assertThat(f.getMessage()).contains("not in the library");
        assertThat(lib.drives().get(0).state()).isEqualTo(DriveState.EMPTY);
    }

    @Test
    void brokenDriveFailsAndIsMarkedFailedUntilRepaired() throws Exception {
        ScriptLibrary lib = library(Duration.ofSeconds(30));
        Files.createDirectories(root.resolve("drives"));
        Files.writeString(root.resolve("drives/drive02.broken"), "");
        assertThat(failure(lib.mount("drive02", "V2")).kind()).isEqualTo(TapeFailure.Kind.DRIVE_FAILURE);
        assertThat(lib.drives().get(1)).isEqualTo(new DriveStatus("drive02", DriveState.FAILED, "V2", 0));
        assertThat(failure(lib.mount("drive02", "V2")).kind()).isEqualTo(TapeFailure.Kind.DRIVE_FAILURE);
        Files.delete(root.resolve("drives/drive02.broken"));
        lib.recover("drive02").get();
        get(lib.mount("drive02", "V2"));
        assertThat(lib.drives().get(1).state()).isEqualTo(DriveState.MOUNTED_IDLE);
    }

    @Test
    void aReadListOverItsTimeLimitIsKilledAndFailsWithTimeout() throws Exception {
        ScriptLibrary lib = library(Duration.ofSeconds(1));
        get(lib.mount("drive01", "V1"));
        Files.writeString(root.resolve("slow"), "30");
        SegmentRead a = new SegmentRead(1, "/d/a", "V1", 0, 100_000, tmp.resolve("cache/a"));
        long t0 = System.nanoTime();
        ReadBatch batch = lib.read("drive01", List.of(a));
        TapeFailure f = failure(batch.result(a));
        assertThat(f.kind()).isEqualTo(TapeFailure.Kind.TIMEOUT);
        assertThat((System.nanoTime() - t0) / 1e9).isLessThan(20); // killed, not waited for (sleep 30)
        waitIdle(lib, "drive01");
        Files.delete(root.resolve("slow"));
        get(lib.dismount("drive01"));
    }

    @Test
    void cancellingAReadListKillsTheCall() throws Exception {
        ScriptLibrary lib = library(Duration.ofSeconds(60));
        get(lib.mount("drive01", "V1"));
        Files.writeString(root.resolve("slow"), "30");
        SegmentRead a = new SegmentRead(1, "/d/a", "V1", 0, 100_000, tmp.resolve("cache/a"));
        ReadBatch batch = lib.read("drive01", List.of(a));
        Thread.sleep(300);
        batch.cancelAll();
        assertThat(batch.result(a)).isCancelled();
        waitIdle(lib, "drive01");
    }

    @Test
    void unconfiguredCommandsAreRefusedClearly() {
        TapeProperties.Script empty = new TapeProperties.Script(List.of(), List.of(), List.of(), List.of(), tmp,
                Duration.ofSeconds(1), Duration.ofSeconds(1), Duration.ofSeconds(1), Duration.ofSeconds(1), TapeProperties.WriteChecksum.TRUST_SOURCE);
        assertThatThrownBy(() -> new ScriptLibrary(new LibraryLayout("x", List.of("d"), 1), empty, LibraryEvents.NONE, List.of()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("stagehand.tape.script.mount");
    }
}
