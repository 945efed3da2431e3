package dev.stagehand.archive.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.ItDb;
import dev.stagehand.archive.ArchiveBuffer.ArchiveFileStatus;
import dev.stagehand.archive.ArchiveBuffer.UnverifiedCopy;
import dev.stagehand.archive.ArchiveBuffer.WrittenCopy;
import dev.stagehand.archive.ArchiveProperties;
import dev.stagehand.archive.NewArchiveFile;
import dev.stagehand.tape.DriveRoles;
import dev.stagehand.tape.LibraryEvents;
import dev.stagehand.tape.LibraryLayout;
import dev.stagehand.tape.ScriptLibrary;
import dev.stagehand.tape.TapeProperties;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;
import org.springframework.util.unit.DataSize;

/**
 * Copies a site script wrote without reporting a checksum (config/examples/script-driver/dirlib.sh reports none;
 * write-checksum trust-source) are kept as unverified on their segments, for operators to list.
 */
// the same context as ArchivePathIT (each distinct context keeps a connection pool open for the whole run)
@SpringBootTest(properties = {"stagehand.recall.enabled=false", "stagehand.transfer.queue.enabled=false"})
class UnverifiedCopiesIT {

    static final long MB = 1_000_000;
    static final Path DIRLIB = Path.of("config/examples/script-driver/dirlib.sh").toAbsolutePath();

    @Autowired JdbcTemplate jdbc;
    @Autowired TransactionTemplate tx;
    @TempDir Path tmp;

    final String tag = UUID.randomUUID().toString().substring(0, 8);

    @BeforeEach
    @AfterEach
    void retireLeftovers() {
        ItDb.retireArchiveBuffer(jdbc);
        jdbc.update("UPDATE archive_volume SET family = coalesce(family, 'retired'), copy_no = coalesce(copy_no, 1), state = 'full', "
                + "claimed_by = NULL WHERE state <> 'full'");
    }

    static List<String> cmd(List<String> base, String verb) {
        List<String> c = new ArrayList<>(base);
        c.add(verb);
        return c;
    }

    @Test
    void copiesWrittenWithoutAChecksumFromTheScriptAreKeptUnverifiedAndListed() throws Exception {
        String pool = "U" + tag;
        Files.createDirectories(tmp.resolve("lib/slots/" + pool));
        List<String> base = List.of(DIRLIB.toString(), tmp.resolve("lib").toString());
        ScriptLibrary lib = new ScriptLibrary(new LibraryLayout("u" + tag, List.of("drive01", "drive02"), 1),
                new TapeProperties.Script(cmd(base, "mount"), cmd(base, "read"), cmd(base, "write"), cmd(base, "dismount"),
                        tmp.resolve("work"), Duration.ofSeconds(30), Duration.ofSeconds(30), Duration.ofSeconds(30),
                        Duration.ofSeconds(30), TapeProperties.WriteChecksum.TRUST_SOURCE), LibraryEvents.NONE, List.of());
        ArchiveProperties p = new ArchiveProperties(true, tmp.resolve("landing"), DataSize.ofBytes(500 * MB), 0.8, 0.5,
                Duration.ofSeconds(30), 10_000, "it", Map.of("single", 1), "single", Map.of(), DataSize.ofBytes(100 * MB),
                new ArchiveProperties.Pool("X", 0, List.of(pool)),
                new ArchiveProperties.Flush(Duration.ZERO, DataSize.ofBytes(1), Duration.ZERO, DataSize.ofGigabytes(1), 2,
                        Duration.ofMinutes(10), Duration.ofMinutes(1), Duration.ZERO),
                new ArchiveProperties.Watch(false, Duration.ofSeconds(10)), Duration.ofSeconds(30), "it-" + UUID.randomUUID());
        JdbcArchiveBuffer buffer = new JdbcArchiveBuffer(jdbc, tx, p, 100 * MB, List.of());
        ArchiveFlusher flusher = new ArchiveFlusher(jdbc, tx, lib, new DriveRoles(1).writeDrives(lib.layout()), p, 100 * MB,
                e -> { }, p.instanceId());
        flusher.start();
        List<NewArchiveFile> files = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            Path f = tmp.resolve("landing/ds-" + tag + "/f" + i);
            Files.createDirectories(f.getParent());
            byte[] data = new byte[10_000 + i];
            new Random(i).nextBytes(data);
            Files.write(f, data);
            files.add(new NewArchiveFile(f.toString(), (long) data.length, null, "ds-" + tag, "it", null, "single"));
        }
        List<ArchiveFileStatus> registered = buffer.register(files);
        List<Long> ids = registered.stream().map(ArchiveFileStatus::fileId).toList();
        List<String> names = registered.stream().map(ArchiveFileStatus::name).toList();
        long until = System.nanoTime() + 60_000_000_000L;
        while (jdbc.queryForObject("SELECT count(*) FROM archive_file WHERE file_id = ANY(?) AND state = 'archived'", Integer.class,
                (Object) ids.toArray(Long[]::new)) < ids.size() && System.nanoTime() < until) {
            flusher.poll();
            Thread.sleep(100);
        }
        assertThat(jdbc.queryForList("SELECT verified FROM segment WHERE file_id = ANY(?)", Boolean.class, (Object) ids.toArray(Long[]::new)))
                .as("both copies on tape, neither confirmed by the script").containsExactly(false, false);
        // an operator lists them (GET /api/v1/archive/unverified-copies), and sees it in each file's status
        assertThat(buffer.unverifiedCopies(null, 1000)).filteredOn(c -> c.volume().equals(pool))
                .extracting(UnverifiedCopy::name).containsExactlyElementsOf(names);
        assertThat(buffer.unverifiedCopies(Set.of("other-" + tag), 1000)).as("another experiment's view")
                .noneMatch(c -> c.volume().equals(pool));
        assertThat(buffer.fileByName(names.getFirst()).orElseThrow().segments()).extracting(WrittenCopy::verified)
                .containsExactly(false);
    }
}
