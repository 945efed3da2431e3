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
}
