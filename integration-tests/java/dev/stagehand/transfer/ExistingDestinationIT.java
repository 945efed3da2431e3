package dev.stagehand.transfer;

import static dev.stagehand.transfer.AnonymousMoverIT.adler;
import static dev.stagehand.transfer.AnonymousMoverIT.file;
import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * A file already at a queued transfer's destination, in the real database, drained by the service's mover into a
 * real GridFTP server (overwriting not enabled: the default). A file the transfer did not write is never
 * written over nor deleted: the same file is done without sending, another one fails it (DESTINATION_EXISTS).
 * A file the row began writing itself (an earlier claim) is still written over.
 */
@SpringBootTest(properties = {"stagehand.transfer.queue.poll-interval=100ms", "stagehand.transfer.mover.stall-timeout=5s",
        "stagehand.transfer.mover.backoff=100ms", "stagehand.transfer.mover.split-bytes=8388608"})
class ExistingDestinationIT {

    static GridFtpScratch scratch;
    static Path root;
    static Path dst;
    static GridFtpServer server;

    @Autowired
    TransferQueue queue;

    @Autowired
    JdbcTemplate jdbc;

    @BeforeAll
    static void start() throws Exception {
        scratch = GridFtpScratch.create("stagehand-existing-it");
        root = scratch.root;
        dst = root.resolve("dst");
        GridFtpServer.openUp(dst);
        server = scratch.anonymous("server");
    }

    @AfterAll
    static void stop() throws Exception {
        if (scratch != null) scratch.close();
    }

    /** Another's file at {@code name} under dst: {@code size} bytes from {@code seed}, writable by the server's account. */
    static Path foreign(String name, int size, long seed) throws Exception {
        Path p = file(dst, name, size, seed);
        Files.setPosixFilePermissions(p, java.nio.file.attribute.PosixFilePermissions.fromString("rw-rw-rw-"));
        return p;
    }

    static URI url(String name) {
        return URI.create(server.url(dst) + "/" + name);
    }

    TransferJob ended(long id) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (!queue.job(id).finished() && System.nanoTime() < deadline) Thread.sleep(100);
        TransferJob j = queue.job(id);
        assertThat(j.finished()).as("transfer %d ended", id).isTrue();
        return j;
    }

    long enqueue(Path source, String name, Long adler32) throws Exception {
        return queue.enqueue(List.of(new TransferQueue.Request("existing-it-" + java.util.UUID.randomUUID(), source.toUri(),
                url(name), Files.size(source), adler32))).getFirst();
    }

    /**
     * Another file at the destination fails the transfer for good, and stays as it was. Before, the STOR
     * silently replaced it.
     */
    @Test
    void anotherFileAtTheDestinationFailsTheTransferAndIsLeftAsItIs() throws Exception {
        String name = "other-" + System.nanoTime();
        Path theirs = foreign(name, 100_000, 1);
        byte[] before = Files.readAllBytes(theirs);
        Path f = file(root.resolve("src"), name, 200_000, 2);

        TransferJob j = ended(enqueue(f, name, adler(f)));

        assertThat(j.state()).isEqualTo("failed");
        assertThat(j.lastErrorClass()).isEqualTo("DESTINATION_EXISTS");
        assertThat(j.lastError()).contains("destination file exists and overwrite is not enabled");
        assertThat(j.wroteDestination()).isFalse();
        assertThat(Files.readAllBytes(theirs)).as("their file untouched").isEqualTo(before);
    }

    /**
     * A big file sent as byte ranges (ESTO; split-bytes is 8 MiB here) does not delete another file there before
     * its first range. Before, the first range deleted it, and the ranges replaced it.
     */
    @Test
    void aSplitTransferDoesNotDeleteAnotherFileBeforeItsFirstRange() throws Exception {
        String name = "split-" + System.nanoTime();
        Path theirs = foreign(name, 1000, 3);
        byte[] before = Files.readAllBytes(theirs);
        Path f = file(root.resolve("src"), name, 24 << 20, 4);

        TransferJob j = ended(enqueue(f, name, adler(f)));

        assertThat(j.lastErrorClass()).isEqualTo("DESTINATION_EXISTS");
        assertThat(Files.readAllBytes(theirs)).isEqualTo(before);
        assertThat(server.transfers().stream().filter(l -> l.contains(name))).as("no range sent").isEmpty();
    }

    /**
     * The very same file (size and ADLER32) at the destination: done without sending it, verified and counted
     * as delivered. Before, it was sent again.
     */
    @Test
    void theSameFileAtTheDestinationIsDoneWithoutSendingIt() throws Exception {
        for (Long known : java.util.Arrays.asList(1L, null)) { // with the catalog's sum, and without (the source's)
            String name = "same-" + known + "-" + System.nanoTime();
            Path f = file(root.resolve("src"), name, 300_000, 7);
            Path there = foreign(name, 300_000, 7);
            long mtime = Files.getLastModifiedTime(there).toMillis();
            Thread.sleep(1100); // a write would move the time on

            TransferJob j = ended(enqueue(f, name, known == null ? null : adler(f)));

            assertThat(j.state()).isEqualTo("done");
            assertThat(j.bytesMoved()).isEqualTo(300_000);
            assertThat(jdbc.queryForObject("SELECT mover_attempts FROM transfer_job WHERE id = ?", Integer.class, j.id()))
                    .as("nothing sent").isZero();
            assertThat(jdbc.queryForObject("SELECT dest_adler32 FROM transfer_job WHERE id = ?", Long.class, j.id()))
                    .isEqualTo(adler(f));
            assertThat(Files.getLastModifiedTime(there).toMillis()).as("not written again").isEqualTo(mtime);
            assertThat(server.transfers().stream().filter(l -> l.contains(name))).as("no transfer in the server's log").isEmpty();
        }
    }

    /**
     * A file the row began writing itself (an earlier claim, e.g. before a restart mid-file) is its own: written
     * over and finished, as before.
     */
    @Test
    void aFileTheRowBeganWritingIsWrittenOver() throws Exception {
        String name = "mine-" + System.nanoTime();
        foreign(name, 50_000, 8); // what an earlier claim left
        Path f = file(root.resolve("src"), name, 200_000, 9);
        long id;
        // queued and marked in one transaction, as if a claim had written: the drainer must not take it unmarked
        var tx = new org.springframework.transaction.support.TransactionTemplate(
                new org.springframework.jdbc.datasource.DataSourceTransactionManager(jdbc.getDataSource()));
        id = tx.execute(t -> {
            try {
                long n = enqueue(f, name, adler(f));
                jdbc.update("UPDATE transfer_job SET wrote_destination = true, started_at = now() WHERE id = ?", n);
                return n;
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        TransferJob j = ended(id);
        assertThat(j.state()).isEqualTo("done");
        assertThat(Files.mismatch(f, dst.resolve(name))).isEqualTo(-1L);
    }

    /**
     * A transfer failing for good before it writes (here its local source does not read as the catalog's sum)
     * leaves another file at the destination alone. Before, the drainer deleted it as the failed transfer's
     * "partial file".
     */
    @Test
    void aTransferFailingBeforeItWritesLeavesAnotherFileAtTheDestination() throws Exception {
        String name = "notmine-" + System.nanoTime();
        Path theirs = foreign(name, 3 << 20, 10);
        byte[] before = Files.readAllBytes(theirs);
        Path f = file(root.resolve("src"), name, 3 << 20, 11);

        TransferJob j = ended(enqueue(f, name, adler(f) ^ 1));

        assertThat(j.state()).isEqualTo("failed");
        assertThat(theirs).exists();
        assertThat(Files.readAllBytes(theirs)).isEqualTo(before);
        assertThat(j.lastError()).doesNotContain("no partial file is left");
    }

    /** A third-party copy (GridFTP to GridFTP) looks first as well: another file there fails it; the same one is done. */
    @Test
    void aThirdPartyCopyLooksFirst() throws Exception {
        String name = "tp-" + System.nanoTime();
        Path src = foreign("src-" + name, 150_000, 12);
        Path theirs = foreign(name, 150_000, 13); // same size, other bytes
        byte[] before = Files.readAllBytes(theirs);
        long other = queue.enqueue(List.of(new TransferQueue.Request("existing-it-tp", url("src-" + name), url(name),
                150_000, adler(src)))).getFirst();
        TransferJob j = ended(other);
        assertThat(j.lastErrorClass()).isEqualTo("DESTINATION_EXISTS");
        assertThat(Files.readAllBytes(theirs)).isEqualTo(before);

        String same = "tp-same-" + System.nanoTime();
        foreign(same, 150_000, 12); // the source's bytes
        long again = queue.enqueue(List.of(new TransferQueue.Request("existing-it-tp", url("src-" + name), url(same),
                150_000, null))).getFirst();
        TransferJob done = ended(again);
        assertThat(done.state()).isEqualTo("done");
        assertThat(jdbc.queryForObject("SELECT mover_attempts FROM transfer_job WHERE id = ?", Integer.class, again)).isZero();
    }

    /** With overwriting enabled for it (FileCopy REPLACE), another file is written over; the same one still not sent. */
    @Test
    void withOverwriteAnotherFileIsReplaced() throws Exception {
        String name = "replace-" + System.nanoTime();
        foreign(name, 100_000, 14);
        Path f = file(root.resolve("src"), name, 200_000, 15);
        try (Mover mover = Movers.gridFtp(AnonymousMoverIT.fast(), null)) {
            FileCopy c = new FileCopy(name, f.toUri(), url(name), Files.size(f), adler(f), FileCopy.Existing.REPLACE, () -> {});
            CopyResult r = mover.submit(List.of(c)).result(c).get(60, TimeUnit.SECONDS);
            assertThat(r.attempts()).isEqualTo(1);
        }
        assertThat(Files.mismatch(f, dst.resolve(name))).isEqualTo(-1L);
    }
}
