package dev.stagehand.transfer;

import static dev.stagehand.transfer.AnonymousMoverIT.adler;
import static dev.stagehand.transfer.AnonymousMoverIT.file;
import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;

/** The transfer queue in the real database, drained by the service's mover into a real GridFTP server. */
@SpringBootTest(properties = {"stagehand.transfer.queue.poll-interval=100ms", "stagehand.transfer.mover.stall-timeout=5s",
        "stagehand.transfer.mover.backoff=100ms"})
class TransferQueueIT {

    static GridFtpScratch scratch;
    static Path root;
    static GridFtpServer server;

    @Autowired
    TransferQueue queue;

    @Autowired
    JdbcTemplate jdbc;

    @BeforeAll
    static void start() throws Exception {
        scratch = GridFtpScratch.create("stagehand-queue-it");
        root = scratch.root;
        GridFtpServer.openUp(root.resolve("dst"));
        server = scratch.anonymous("server");
    }

    @AfterAll
    static void stop() throws Exception {
        if (scratch != null) scratch.close();
    }

    @Test
    void queuedFilesAreMovedAndEveryOutcomeIsRecorded() throws Exception {
        String stage = "stage-" + java.util.UUID.randomUUID(); // the test database outlives runs
        List<TransferQueue.Request> requests = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            Path f = file(root.resolve("src"), "q" + i, 200_000 + i, i);
            requests.add(new TransferQueue.Request(stage, f.toUri(), URI.create(server.url(root.resolve("dst")) + "/q" + i),
                    Files.size(f), adler(f)));
        }
        Path lost = file(root.resolve("src"), "lost", 1000, 9);
        requests.add(new TransferQueue.Request(stage, lost.toUri(),
                URI.create(server.url(root.resolve("no-such-dir")) + "/lost"), 1000, null));
        List<Long> ids = queue.enqueue(requests);

        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (!queue.byCorrelation(stage).stream().allMatch(TransferJob::finished) && System.nanoTime() < deadline) {
            Thread.sleep(100);
        }
        List<TransferJob> jobs = queue.byCorrelation(stage);
        assertThat(jobs).hasSize(6);
        for (TransferJob j : jobs.subList(0, 5)) {
            assertThat(j.state()).isEqualTo("done");
            assertThat(j.bytesMoved()).isEqualTo(j.sizeBytes());
            assertThat(j.mbPerSecond()).isPositive();
            assertThat(j.finishedAt()).isNotNull();
        }
        TransferJob failed = queue.job(ids.getLast());
        assertThat(failed.state()).isEqualTo("failed");
        assertThat(failed.lastErrorClass()).isEqualTo("NO_SUCH_PATH");
        assertThat(failed.lastError()).contains("No such file or directory");
    }

    /** A file that fails for good leaves nothing at its destination; one that never reached it leaves what was there. */
    @Test
    void aFailedFileLeavesNoPartialCopyAtItsDestination() throws Exception {
        String tag = "partial-" + java.util.UUID.randomUUID();
        Path f = file(root.resolve("src"), "partial", 3 << 20, 5);
        Path dst = root.resolve("dst").resolve("partial-" + tag);
        long bad = queue.enqueue(List.of(new TransferQueue.Request(tag, f.toUri(),
                URI.create(server.url(root.resolve("dst")) + "/" + dst.getFileName()), Files.size(f), adler(f) ^ 1))).getFirst();
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (!queue.job(bad).finished() && System.nanoTime() < deadline) Thread.sleep(100);
        TransferJob failed = queue.job(bad);
        assertThat(failed.state()).isEqualTo("failed");
        // the source does not read as the sum it is sent against: failed at once, its partial file removed all the same
        assertThat(failed.lastErrorClass()).isEqualTo("SOURCE_CHECKSUM_MISMATCH");
        assertThat(dst).doesNotExist();
        assertThat(failed.lastError()).contains("no partial file is left at the destination");
    }

    @Test
    void anOperatorsRetryStartsTheFileAfreshAfterAnOutage() throws Exception {
        String tag = "retry-" + java.util.UUID.randomUUID();
        Path f = file(root.resolve("src"), "retried", 1000, 7);
        long id = queue.enqueue(List.of(new TransferQueue.Request(tag, f.toUri(),
                URI.create(server.url(root.resolve("no-such-dir")) + "/retried"), 1000, null))).getFirst();
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!queue.job(id).finished() && System.nanoTime() < deadline) Thread.sleep(100);
        assertThat(queue.job(id).state()).isEqualTo("failed");
        // as after a long outage: put back seven times, the next wait would be the longest (max-delay)
        jdbc.update("UPDATE transfer_job SET deferrals = 7 WHERE id = ?", id);

        assertThat(queue.retry(id)).isTrue();
        // its first wait after a retry is the outage delay again, not max-delay (deferrals only grow at put-backs)
        assertThat(queue.job(id).deferrals()).isZero();
    }
}
