package dev.stagehand.tape;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The script driver's drive bookkeeping, against a small HSM script that reports every file at once and
 * then takes a second to tidy up before it exits: what a caller sees as the last file lands is a drive still
 * busy with the script.
 */
class ScriptLibraryTest {

    static final String HSM = """
            #!/bin/sh
            # verb drive volume [list]: reports each listed file at once, then tidies up for a second; a read
            # delivers an empty file (Adler32 1)
            log="$(dirname "$0")/calls.log"
            verb=$1
            echo "$verb start" >> "$log"
            case "$verb" in
              read|write)
                while IFS="$(printf '\\t')" read -r id off size target name; do
                  if [ "$verb" = read ]; then
                    mkdir -p "$(dirname "$target")"; : > "$target"; echo "OK $id 1"
                  else echo "OK $id 0 1"; fi
                done < "$4"
                sleep 1 ;;
            esac
            echo "$verb end" >> "$log"
            """;

    @TempDir
    Path tmp;
    Path work;
    ScriptLibrary lib;

    @BeforeEach
    void library() throws Exception {
        Path script = tmp.resolve("hsm.sh");
        Files.writeString(script, HSM);
        Files.setPosixFilePermissions(script, PosixFilePermissions.fromString("rwxr-xr-x"));
        work = tmp.resolve("work");
        Duration limit = Duration.ofSeconds(30);
        TapeProperties.Script cfg = new TapeProperties.Script(cmd(script, "mount"), cmd(script, "read"),
                cmd(script, "write"), cmd(script, "dismount"), work, limit, limit, limit, limit, TapeProperties.WriteChecksum.TRUST_SOURCE);
        lib = new ScriptLibrary(new LibraryLayout("test", List.of("d1"), 1), cfg, LibraryEvents.NONE, List.of());
        get(lib.mount("d1", "V1"));
    }

    static List<String> cmd(Path script, String verb) {
        return List.of(script.toString(), verb);
    }

    static <T> T get(CompletableFuture<T> f) throws Exception {
        return f.get(30, TimeUnit.SECONDS);
    }

    SegmentRead segment(long id) {
        return new SegmentRead(id, "/f" + id, "V1", id * 100, 100, tmp.resolve("cache/f" + id));
    }

    DriveState state() {
        return lib.drives().get(0).state();
    }

    List<String> calls() throws Exception {
        return Files.readAllLines(tmp.resolve("calls.log"));
    }

    @Test
    void mountsUnderWayOnOtherDrivesAreCountedAgainstTheAccessorsNotDismounts() throws Exception {
        // a mount or dismount waits for a file "go-VERB" beside the script: under way until the test says
        Path script = tmp.resolve("gated.sh");
        Files.writeString(script, """
                #!/bin/sh
                while [ ! -f "$(dirname "$0")/go-$1" ]; do sleep 0.05; done
                """);
        Files.setPosixFilePermissions(script, PosixFilePermissions.fromString("rwxr-xr-x"));
        Duration limit = Duration.ofSeconds(30);
        TapeProperties.Script cfg = new TapeProperties.Script(cmd(script, "mount"), cmd(script, "read"),
                cmd(script, "write"), cmd(script, "dismount"), tmp.resolve("gated-work"), limit, limit, limit, limit,
                TapeProperties.WriteChecksum.TRUST_SOURCE);
        ScriptLibrary three = new ScriptLibrary(new LibraryLayout("three", List.of("d1", "d2", "d3"), 1), cfg,
                LibraryEvents.NONE, List.of());
        List<String> recall = List.of("d1", "d2");

        CompletableFuture<Void> archiveMount = three.mount("d3", "W1"); // the archive's write drive
        assertThat(three.exchangesUnderWayBesides(recall)).as("the archive's mount under way").isEqualTo(1);
        assertThat(three.reserveMount("d1", recall, 1)).as("one accessor exchange, taken by the archive").isFalse();
        assertThat(three.reserveMount("d1", recall, 2)).isTrue();
        assertThat(three.exchangesUnderWayBesides(List.of("d1", "d2", "d3"))).as("its own are the caller's to count").isZero();

        Files.writeString(tmp.resolve("go-mount"), "");
        get(archiveMount);
        assertThat(three.exchangesUnderWayBesides(recall)).isZero();

        CompletableFuture<Void> archiveDismount = three.dismount("d3");
        assertThat(three.drives().get(2).state()).isEqualTo(DriveState.UNLOADING);
        assertThat(three.exchangesUnderWayBesides(recall)).as("a dismount holds an accessor only at its end: not counted").isZero();
        Files.writeString(tmp.resolve("go-dismount"), "");
        get(archiveDismount);
    }

    @Test
    void aListIsDoneOnlyOnceTheDriveIsFreeAgain() throws Exception {
        ReadBatch read = lib.read("d1", List.of(segment(1)));
        get(read.done());
        assertThat(state()).isEqualTo(DriveState.MOUNTED_IDLE);

        // the archive path: on done() it writes the next list or dismounts
        FileWrite w = new FileWrite(7, "/w", Files.writeString(tmp.resolve("src"), "x"), 1);
        WriteBatch write = lib.write("d1", List.of(w));
        get(write.done());
        assertThat(state()).isEqualTo(DriveState.MOUNTED_IDLE);
        assertThat(get(write.result(w)).offsetBytes()).isZero();
        get(lib.dismount("d1"));
        assertThat(state()).isEqualTo(DriveState.EMPTY);
    }

    @Test
    void aReadOrDismountAskedAsTheLastFileLandsWaitsForTheScriptToExit() throws Exception {
        SegmentRead last = segment(1);
        ReadBatch first = lib.read("d1", List.of(last));
        get(first.result(last));
        assertThat(state()).as("the script is still tidying up").isEqualTo(DriveState.READING);

        // what the recall engine does once every file of its list is recorded
        SegmentRead next = segment(2);
        ReadBatch second = lib.read("d1", List.of(next));
        CompletableFuture<Void> dismount = lib.dismount("d1");
        assertThat(get(second.result(next)).adler32()).isEqualTo(1);
        get(dismount);

        assertThat(first.done()).isDone();
        assertThat(second.done()).isDone();
        assertThat(state()).isEqualTo(DriveState.EMPTY);
        assertThat(calls()).containsExactly("mount start", "mount end", "read start", "read end", "read start",
                "read end", "dismount start", "dismount end");
    }

    /**
     * A drive an operator takes down runs the list under way, but a list asked after that (the scheduler sees the
     * down only at its next round) is refused with DRIVE_DOWN, not run; the drive is DISABLED once unloaded.
     */
    @Test
    void aListAskedOfADriveGoingDownIsRefusedNotRun() throws Exception {
        SegmentRead first = segment(1);
        ReadBatch running = lib.read("d1", List.of(first));
        lib.setEnabled("d1", false);
        SegmentRead next = segment(2);
        ReadBatch refused = lib.read("d1", List.of(next));
        FileWrite w = new FileWrite(7, "/w", Files.writeString(tmp.resolve("src"), "x"), 1);
        WriteBatch write = lib.write("d1", List.of(w));
        assertThat(get(running.result(first)).adler32()).isEqualTo(1);
        for (CompletableFuture<?> f : List.of(refused.result(next), write.result(w))) {
            ExecutionException e = org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class, () -> get(f));
            assertThat(e.getCause()).isInstanceOf(TapeFailure.class);
            assertThat(((TapeFailure) e.getCause()).kind()).isEqualTo(TapeFailure.Kind.DRIVE_DOWN);
        }
        get(write.done());
        assertThat(lib.drives().get(0)).isEqualTo(new DriveStatus("d1", DriveState.MOUNTED_IDLE, "V1", 100, true));
        get(lib.dismount("d1"));
        assertThat(state()).isEqualTo(DriveState.DISABLED);
        assertThat(calls()).containsExactly("mount start", "mount end", "read start", "read end", "dismount start", "dismount end");
    }

    @Test
    void aListFileThatCannotBeWrittenFailsTheListAndLeavesTheDriveIdle() throws Exception {
        Files.delete(work);
        Files.writeString(work, "the work directory is gone; a file is in its place");

        SegmentRead s = segment(1);
        ReadBatch read = lib.read("d1", List.of(s));
        get(read.done());
        TapeFailure f = failure(read.result(s));
        assertThat(f.kind()).isEqualTo(TapeFailure.Kind.DRIVE_FAILURE);
        assertThat(f.getMessage()).contains("cannot write the read list file under " + work);
        assertThat(lib.lastCall().outcome()).isEqualTo("not-run");
        assertThat(state()).isEqualTo(DriveState.MOUNTED_IDLE);

        Path src = Files.writeString(tmp.resolve("src"), "x");
        FileWrite w = new FileWrite(7, "/w", src, 1);
        WriteBatch write = lib.write("d1", List.of(w));
        get(write.done());
        assertThat(failure(write.result(w)).getMessage()).contains("cannot write the write list file under " + work);
        assertThat(state()).isEqualTo(DriveState.MOUNTED_IDLE);

        Files.delete(work); // the operator clears the disk: the drive dismounts as usual
        get(lib.dismount("d1"));
        assertThat(state()).isEqualTo(DriveState.EMPTY);
        assertThat(calls()).containsExactly("mount start", "mount end", "dismount start", "dismount end");
    }

    /**
     * A site script that reports a file read without its checksum but delivered nothing (a wrong target path, a
     * copy that died behind the wrapper): the segment fails typed, so the recall sends the file to another copy
     * instead of putting it back to be read again, for ever.
     */
    @Test
    void aFileReportedReadButNotDeliveredFailsAsAMediaError() throws Exception {
        ScriptLibrary liar = mountedWith("liar.sh", """
                #!/bin/sh
                if [ "$1" = read ]; then
                  while IFS="$(printf '\\t')" read -r id rest; do echo "OK $id"; done < "$4"
                fi
                """);
        SegmentRead s = segment(1);
        ReadBatch read = liar.read("d1", List.of(s));
        get(read.done());
        TapeFailure f = failure(read.result(s));
        assertThat(f.kind()).isEqualTo(TapeFailure.Kind.MEDIA_ERROR);
        assertThat(f.getMessage()).contains("script reported /f1 read but " + s.target() + " is not readable");
        assertThat(liar.drives().get(0).state()).isEqualTo(DriveState.MOUNTED_IDLE);
    }

    /**
     * Read reports whose checksum is written as the catalog takes it (0x…, upper case) or cannot be taken at all
     * (more than 32 bits): the first is compared as given, the second ignored; both files carry their own sum.
     * Either used to throw while the line was parsed: the file then failed as DRIVE_FAILURE and the recall took the
     * drive out of service.
     */
    @Test
    void aReadReportsChecksumWithAPrefixIsTakenAndOneThatCannotBeIsSummedHere() throws Exception {
        SegmentRead one = segment(1), two = segment(2);
        Files.createDirectories(two.target().getParent());
        Files.writeString(one.target(), "delivered one");
        Files.writeString(two.target(), "delivered");
        long sumOne = ScriptLibrary.adler32(one.target());
        ScriptLibrary prefixed = mountedWith("prefixed.sh", """
                #!/bin/sh
                if [ "$1" = read ]; then
                  while IFS="$(printf '\\t')" read -r id rest; do
                    if [ "$id" = 1 ]; then echo "OK $id 0x%08X"; else echo "OK $id 1ffffffff"; fi
                  done < "$4"
                fi
                """.formatted(sumOne));
        ReadBatch read = prefixed.read("d1", List.of(one, two));
        get(read.done());
        assertThat(get(read.result(one)).adler32()).isEqualTo(sumOne);
        assertThat(get(read.result(two)).adler32()).isEqualTo(ScriptLibrary.adler32(two.target()));
        assertThat(prefixed.drives().get(0).state()).isEqualTo(DriveState.MOUNTED_IDLE);
    }

    /**
     * A script that reports the catalog's (right) Adler32 for a file whose bytes on disk are not the file's (corrupted
     * on their way to disk, or the script reports the HSM's stored sum without looking at what it wrote): the sum on
     * disk counts, and the mismatch fails the read as a MEDIA_ERROR naming both sums. The script's sum used to be
     * taken as the file's, so the cache's commit found it equal to the catalog's and pinned the bad copy as good.
     */
    @Test
    void aReadWhoseBytesDoNotSumToTheScriptsReportedAdler32IsRefused() throws Exception {
        Path original = Files.writeString(tmp.resolve("original"), "the file as archived");
        long catalog = ScriptLibrary.adler32(original);
        ScriptLibrary corrupting = mountedWith("corrupting.sh", """
                #!/bin/sh
                if [ "$1" = read ]; then
                  while IFS="$(printf '\\t')" read -r id off size target name; do
                    mkdir -p "$(dirname "$target")"
                    printf 'the file as ARCHIVED' > "$target"
                    echo "OK $id %08x"
                  done < "$4"
                fi
                """.formatted(catalog));
        SegmentRead s = segment(1);
        ReadBatch read = corrupting.read("d1", List.of(s));
        get(read.done());
        long onDisk = ScriptLibrary.adler32(s.target());
        assertThat(onDisk).isNotEqualTo(catalog);
        TapeFailure f = failure(read.result(s));
        assertThat(f.kind()).isEqualTo(TapeFailure.Kind.MEDIA_ERROR);
        assertThat(f.getMessage()).contains(String.format("Adler32 %08x", catalog))
                .contains(String.format("sums to %08x", onDisk));
        assertThat(corrupting.drives().get(0).state()).isEqualTo(DriveState.MOUNTED_IDLE);
    }

    /**
     * A write report without an Adler32: nothing here can read the tape copy back. By default the copy carries the
     * buffer file's sum and says it is unverified; with write-checksum: required the file fails. The source's sum
     * used to pass as the tape copy's own, so the archive "verified" the copy against the source it was made from.
     */
    @Test
    void aWriteReportedWithoutAChecksumIsUnverifiedOrRefusedWhenOneIsRequired() throws Exception {
        String script = """
                #!/bin/sh
                if [ "$1" = write ]; then
                  while IFS="$(printf '\\t')" read -r id rest; do
                    if [ "$id" = 1 ]; then echo "OK $id 0"; else echo "OK $id 100 0x0000002A"; fi
                  done < "$4"
                fi
                """;
        FileWrite bare = new FileWrite(1, "/bare", Files.writeString(tmp.resolve("bare"), "bare bytes"), 10);
        FileWrite summed = new FileWrite(2, "/summed", Files.writeString(tmp.resolve("summed"), "summed"), 6);

        ScriptLibrary trusting = mountedWith("trusting.sh", script);
        WriteBatch write = trusting.write("d1", List.of(bare, summed));
        get(write.done());
        WriteBatch.WrittenSegment unverified = get(write.result(bare)), verified = get(write.result(summed));
        assertThat(unverified.verified()).isFalse();
        assertThat(unverified.adler32()).isEqualTo(ScriptLibrary.adler32(bare.source()));
        assertThat(verified.verified()).isTrue();
        assertThat(verified.adler32()).isEqualTo(0x2a);

        ScriptLibrary strict = mountedWith("strict.sh", script, TapeProperties.WriteChecksum.REQUIRED);
        WriteBatch refused = strict.write("d1", List.of(bare, summed));
        get(refused.done());
        assertThat(refused.result(bare)).failsWithin(Duration.ofSeconds(1)).withThrowableThat()
                .withMessageContaining("no Adler32 of what reached the volume").withMessageContaining("write-checksum");
        assertThat(get(refused.result(summed)).verified()).isTrue();
        assertThat(strict.drives().get(0).state()).isEqualTo(DriveState.MOUNTED_IDLE);
    }

    /**
     * Drives persisted mid-mount or mid-dismount (the service stopped while the script ran): where the cartridge is,
     * nobody knows, so they come back FAILED with their volume, as after a mount that timed out. A drive that was
     * reading has its tape mounted and comes back idle. The mounting drive used to come back MOUNTED_IDLE, and the
     * scheduler sent its next read list to a drive that may hold no tape.
     */
    @Test
    void aDriveRestoredMidMountOrDismountIsFailedWithItsVolume() {
        Duration limit = Duration.ofSeconds(30);
        List<String> cmd = List.of("true");
        TapeProperties.Script cfg = new TapeProperties.Script(cmd, cmd, cmd, cmd, work, limit, limit, limit, limit,
                TapeProperties.WriteChecksum.TRUST_SOURCE);
        ScriptLibrary restarted = new ScriptLibrary(new LibraryLayout("test", List.of("d1", "d2", "d3"), 1), cfg,
                LibraryEvents.NONE, List.of(new DriveStatus("d1", DriveState.MOUNTING, "V1", 0),
                        new DriveStatus("d2", DriveState.UNLOADING, "V2", 700), new DriveStatus("d3", DriveState.READING, "V3", 300)));
        assertThat(restarted.drives()).containsExactly(new DriveStatus("d1", DriveState.FAILED, "V1", 0),
                new DriveStatus("d2", DriveState.FAILED, "V2", 700), new DriveStatus("d3", DriveState.MOUNTED_IDLE, "V3", 300));
        SegmentRead s = new SegmentRead(1, "/f1", "V1", 0, 100, tmp.resolve("cache/f1"));
        assertThat(restarted.read("d1", List.of(s)).result(s)).failsWithin(Duration.ofSeconds(1)).withThrowableThat()
                .withMessageContaining("drive is FAILED");
    }

    /** A library run by {@code script} (written to {@code file}), with V1 mounted in its one drive d1. */
    ScriptLibrary mountedWith(String file, String script) throws Exception {
        return mountedWith(file, script, TapeProperties.WriteChecksum.TRUST_SOURCE);
    }

    ScriptLibrary mountedWith(String file, String script, TapeProperties.WriteChecksum writeChecksum) throws Exception {
        Path path = tmp.resolve(file);
        Files.writeString(path, script);
        Files.setPosixFilePermissions(path, PosixFilePermissions.fromString("rwxr-xr-x"));
        Duration limit = Duration.ofSeconds(30);
        TapeProperties.Script cfg = new TapeProperties.Script(cmd(path, "mount"), cmd(path, "read"),
                cmd(path, "write"), cmd(path, "dismount"), work, limit, limit, limit, limit, writeChecksum);
        ScriptLibrary lib = new ScriptLibrary(new LibraryLayout("test", List.of("d1"), 1), cfg, LibraryEvents.NONE, List.of());
        get(lib.mount("d1", "V1"));
        return lib;
    }

    static TapeFailure failure(CompletableFuture<?> f) throws Exception {
        try {
            get(f);
        } catch (ExecutionException e) {
            assertThat(e.getCause()).isInstanceOf(TapeFailure.class);
            return (TapeFailure) e.getCause();
        }
        throw new AssertionError("did not fail");
    }
}
