package dev.stagehand.transfer;

import static dev.stagehand.transfer.AnonymousMoverIT.adler;
import static dev.stagehand.transfer.AnonymousMoverIT.file;
import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.ItWait;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * A destination that is down: its files outlast the mover's attempts by waiting in the queue, and are
 * delivered intact once a real GridFTP server listens on its port again; an outage longer than
 * {@code give-up-after} fails them. A database of its own: another test context's drainer (other outage
 * settings) must not claim these rows.
 */
@SpringBootTest(properties = {"stagehand.db.local-database=stagehand_outage",
        "stagehand.transfer.queue.poll-interval=100ms", "stagehand.transfer.mover.stall-timeout=3s",
        "stagehand.transfer.mover.backoff=100ms", "stagehand.transfer.mover.max-attempts=2",
        "stagehand.transfer.queue.outage.delay=300ms", "stagehand.transfer.queue.outage.max-delay=1s"})
class DestinationOutageIT {

    static GridFtpScratch scratch;

    @Autowired TransferQueue queue;
    @Autowired JdbcTemplate jdbc;
    @Autowired TransactionTemplate tx;

    @BeforeAll
    static void start() throws Exception {
        scratch = GridFtpScratch.create("stagehand-outage-it");
        GridFtpServer.openUp(scratch.root.resolve("dst"));
    }

    @AfterAll
    static void stop() throws Exception {
        if (scratch != null) scratch.close();
    }

    @Test
    void filesWaitOutAnOutageInTheQueueAndAreDeliveredWhenTheDestinationIsBack() throws Exception {
        int port = GridFtpServer.freePort(); // nobody listens yet: every connection is refused
        Path dst = scratch.root.resolve("dst");
        String tag = "outage-" + UUID.randomUUID();
        List<TransferQueue.Request> requests = new ArrayList<>();
        List<Path> sources = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            Path f = file(scratch.root.resolve("src"), "o" + i, 1_000_000 + i, i);
            sources.add(f);
            requests.add(new TransferQueue.Request(tag, f.toUri(), URI.create("ftp://127.0.0.1:" + port + dst + "/o" + i),
                    Files.size(f), adler(f)));
        }
        queue.enqueue(requests);

        // each file ran out of mover attempts at least twice, and is still waiting rather than failed
        ItWait.await("every file put back twice", Duration.ofSeconds(60),
                () -> queue.byCorrelation(tag).stream().allMatch(j -> j.deferrals() >= 2));
        List<TransferJob> waiting = queue.byCorrelation(tag);
        assertThat(waiting).allSatisfy(j -> {
            assertThat(j.state()).isIn("queued", "active");
            assertThat(j.lastErrorClass()).isEqualTo("CONNECTION");
        });

        try (GridFtpServer server = GridFtpServer.anonymousOn(scratch.root.resolve("server"), port)) {
            ItWait.await("every file delivered", Duration.ofSeconds(60),
                    () -> queue.byCorrelation(tag).stream().allMatch(TransferJob::finished));
            assertThat(queue.byCorrelation(tag)).allSatisfy(j -> {
                assertThat(j.state()).isEqualTo("done");
                assertThat(j.deferrals()).isGreaterThanOrEqualTo(2);
            });
            for (int i = 0; i < sources.size(); i++) {
                Path delivered = dst.resolve("o" + i);
                assertThat(Files.size(delivered)).isEqualTo(Files.size(sources.get(i)));
                assertThat(adler(delivered)).isEqualTo(adler(sources.get(i)));
            }
        }
    }

    @Test
    void anOutageLongerThanGiveUpAfterFailsTheFile() throws Exception {
        int port = GridFtpServer.freePort();
        Path f = file(scratch.root.resolve("src"), "late", 1000, 42);
        String tag = "outage-late-" + UUID.randomUUID();
        // its outage began a day and an hour ago (the default give-up-after is 24 h): set in the enqueuing
        // transaction, so the drainer never sees the row without it
        long id = tx.execute(s -> {
            long row = queue.enqueue(List.of(new TransferQueue.Request(tag, f.toUri(),
                    URI.create("ftp://127.0.0.1:" + port + "/tmp/late"), 1000, null))).getFirst();
            jdbc.update("UPDATE transfer_job SET outage_since = now() - interval '25 hours' WHERE id = ?", row);
            return row;
        });
        ItWait.await("the file failed", Duration.ofSeconds(30), () -> queue.job(id).finished());
        TransferJob j = queue.job(id);
        assertThat(j.state()).isEqualTo("failed");
        assertThat(j.lastErrorClass()).isEqualTo("CONNECTION");
        assertThat(j.deferrals()).isZero();
    }
}
