package dev.stagehand.transfer;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;

/** Claims on the real database, with the service's own drainer switched off so only the test claims. */
@SpringBootTest(properties = "stagehand.transfer.queue.enabled=false")
class TransferQueueClaimsIT {

    @Autowired
    TransferQueue queue;

    @Autowired
    org.springframework.jdbc.core.JdbcTemplate jdbc;

    @Autowired
    org.springframework.transaction.support.TransactionTemplate tx;

    /**
     * A row whose claims keep ending with no outcome (each instance moving it crashed or was killed) fails at the
     * cap of lapses, rather than being claimed, and taking an instance down, for ever; an operator's retry counts
     * afresh. A restart under the same instance name, which queues its rows again at once, counts as a lapse too.
     * In transactions rolled back: the drainers of other test contexts never see these rows.
     */
    @Test
    void aRowWhoseClaimsKeepLapsingFailsAtTheCap() {
        String lapses = "SELECT lapses FROM transfer_job WHERE id = ?";
        tx.executeWithoutResult(s -> {
            long id = jdbc.queryForObject("""
                    INSERT INTO transfer_job (correlation, source, destination, size_bytes, state, lease_owner, lease_until, started_at)
                    VALUES ('lapses', 'file:///nonexistent/l', 'ftp://127.0.0.1:1/x/l', 1, 'active', 'gone-0', now() - interval '1 second', now())
                    RETURNING id""", Long.class);
            for (int i = 1; i <= 2; i++) {
                assertThat(queue.claim("gone-" + i, 1000, Duration.ofHours(1), 3)).extracting(TransferJob::id).contains(id);
                assertThat(jdbc.queryForObject(lapses, Integer.class, id)).isEqualTo(i);
                jdbc.update("UPDATE transfer_job SET lease_until = now() - interval '1 second' WHERE id = ?", id); // gone too
            }
            assertThat(queue.claim("gone-3", 1000, Duration.ofHours(1), 3)).extracting(TransferJob::id).doesNotContain(id);
            TransferJob failed = queue.job(id);
            assertThat(failed.state()).isEqualTo("failed");
            assertThat(failed.lastErrorClass()).isEqualTo("LAPSED");
            assertThat(failed.lastError()).startsWith("claimed 3 times by instances that stopped before it ended");
            assertThat(queue.retry(id)).isTrue();
            assertThat(jdbc.queryForObject(lapses, Integer.class, id)).isZero();

            long restarted = jdbc.queryForObject("""
                    INSERT INTO transfer_job (correlation, source, destination, size_bytes, state, lease_owner, lease_until, started_at, lapses)
                    VALUES ('lapses', 'file:///nonexistent/m', 'ftp://127.0.0.1:1/x/m', 1, 'active', 'it-restarting', now() + interval '1 hour', now(), 1)
                    RETURNING id""", Long.class);
            assertThat(queue.releaseStale("it-restarting", 3)).isEqualTo(1);
            assertThat(queue.job(restarted).state()).isEqualTo("queued");
            assertThat(jdbc.queryForObject(lapses, Integer.class, restarted)).isEqualTo(2);
            jdbc.update("UPDATE transfer_job SET state = 'active', lease_owner = 'it-restarting', lease_until = now() + interval '1 hour' WHERE id = ?",
                    restarted);
            assertThat(queue.releaseStale("it-restarting", 3)).isZero();
            assertThat(queue.job(restarted).state()).isEqualTo("failed");
            s.setRollbackOnly();
        });
    }

    @Test
    void concurrentClaimsNeverShareARowAndExpiredLeasesAreReclaimed() throws Exception {
        List<TransferQueue.Request> requests = new ArrayList<>();
        // sources that the drainer would fail on are fine here: the rows are claimed by hand first
        for (int i = 0; i < 40; i++) {
            requests.add(new TransferQueue.Request("claims", URI.create("file:///nonexistent/" + i),
                    URI.create("ftp://127.0.0.1:1/x/" + i), 1, null));
        }
        List<Long> ids = queue.enqueue(requests);
        var pool = Executors.newFixedThreadPool(4);
        List<Future<List<TransferJob>>> claims = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            String owner = "test-" + t;
            claims.add(pool.submit(() -> queue.claim(owner, 15, Duration.ofMillis(300))));
        }
        java.util.Set<Long> seen = new java.util.HashSet<>();
        int total = 0;
        for (var f : claims) {
            for (TransferJob j : f.get()) {
                if (ids.contains(j.id())) {
                    assertThat(seen.add(j.id())).as("row %d claimed twice", j.id()).isTrue();
                    total++;
                }
            }
        }
        pool.shutdown();
        assertThat(total).isPositive();
        Thread.sleep(400); // leases run out: the rows are claimable again (a crashed owner loses nothing)
        List<TransferJob> again = queue.claim("test-late", 100, Duration.ofSeconds(30));
        assertThat(again).extracting(TransferJob::id).containsAll(seen);
        assertThat(again).filteredOn(j -> seen.contains(j.id())).allMatch(j -> j.attempts() >= 2);
        for (long id : ids) queue.cancel(id);
        assertThat(queue.job(ids.getFirst()).state()).isEqualTo("cancelled");
    }

    @Test
    void onlyTheNamedRowsAreRenewedAndAPutBackRowIsQueuedAsBefore() {
        List<Long> ids = queue.enqueue(List.of(
                new TransferQueue.Request("renew", URI.create("file:///nonexistent/a"), URI.create("ftp://127.0.0.1:1/x/a"), 1, null),
                new TransferQueue.Request("renew", URI.create("file:///nonexistent/b"), URI.create("ftp://127.0.0.1:1/x/b"), 1, null)));
        String owner = "test-renew-" + System.nanoTime();
        List<TransferJob> claimed = queue.claim(owner, 1000, Duration.ofSeconds(30));
        assertThat(claimed).extracting(TransferJob::id).containsAll(ids);
        long moving = ids.getFirst();
        long notMoving = ids.getLast();
        try {
            assertThat(queue.renew(owner, List.of(moving), Duration.ofHours(1))).isEqualTo(1);
            String lease = "SELECT lease_until > now() + interval '10 minutes' FROM transfer_job WHERE id = ?";
            assertThat(jdbc.queryForObject(lease, Boolean.class, moving)).isTrue();
            assertThat(jdbc.queryForObject(lease, Boolean.class, notMoving)).isFalse();

            assertThat(queue.putBack(notMoving, owner)).isTrue();
            TransferJob back = queue.job(notMoving);
            assertThat(back.state()).isEqualTo("queued");
            assertThat(back.attempts()).isZero(); // the claim does not count
            assertThat(queue.putBack(notMoving, owner)).as("not ours any more").isFalse();
        } finally {
            // rows of other tests this claim took go back as they were
            for (TransferJob j : claimed) if (!ids.contains(j.id())) queue.putBack(j.id(), owner);
            for (long id : ids) queue.cancel(id);
        }
    }
}
