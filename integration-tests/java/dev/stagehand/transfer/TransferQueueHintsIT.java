package dev.stagehand.transfer;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The queue's in-process hints, which spare the drainer and the recall hand-off their polls: they follow
 * commits, never rolled-back work. Rows are queued and cancelled in one transaction, so no drainer of
 * another test's context sharing the database ever claims them.
 */
@SpringBootTest(properties = {"stagehand.transfer.queue.enabled=false", "stagehand.recall.enabled=false"})
class TransferQueueHintsIT {

    @Autowired TransferQueue queue;
    @Autowired TransactionTemplate tx;

    List<TransferQueue.Request> one(String correlation) {
        return List.of(new TransferQueue.Request(correlation, URI.create("file:///nonexistent/hint"),
                URI.create("ftp://127.0.0.1:1/hint"), 1, null));
    }

    @Test
    void committedRowsWakeTheDrainerAndTellEndListenersRolledBackOnesDoNot() throws Exception {
        List<String> ended = new CopyOnWriteArrayList<>();
        String mine = "hint-" + UUID.randomUUID();
        queue.onEnded(c -> { if (c != null && c.startsWith(mine)) ended.add(c); });
        queue.awaitQueued(Duration.ZERO); // nothing left over

        tx.executeWithoutResult(s -> {
            for (long id : queue.enqueue(one(mine + ":rolled-back"))) queue.cancel(id);
            s.setRollbackOnly();
        });
        assertThat(queue.awaitQueued(Duration.ZERO)).as("woken by rows rolled back").isFalse();
        assertThat(ended).isEmpty();

        tx.executeWithoutResult(s -> {
            for (long id : queue.enqueue(one(mine + ":committed"))) {
                queue.cancel(id);
                assertThat(ended).as("told before the commit").isEmpty();
            }
        });
        assertThat(queue.awaitQueued(Duration.ZERO)).as("woken by committed rows").isTrue();
        assertThat(queue.awaitQueued(Duration.ZERO)).as("one wake-up, consumed").isFalse();
        assertThat(ended).containsExactly(mine + ":committed");
    }
}
