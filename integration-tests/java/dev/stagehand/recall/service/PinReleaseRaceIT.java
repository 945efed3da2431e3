package dev.stagehand.recall.service;

import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.ItDb;
import dev.stagehand.cache.CacheProperties;
import dev.stagehand.cache.DiskCache;
import dev.stagehand.platform.VirtualClock;
import dev.stagehand.recall.StageRequests;
import dev.stagehand.recall.request.RecallMetrics;
import dev.stagehand.tape.TapeModel;
import dev.stagehand.transfer.TransferQueue;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.transaction.support.TransactionTemplate;
import org.springframework.util.unit.DataSize;

/**
 * A request's pins are read from its rows and then made: a release or cancel committing between the two had its
 * pins put back for the request's whole disk lifetime, and the copy stayed pinned though nobody wanted it. The
 * cache here runs the client's release or cancel (another session, as the API would) just before it pins, and
 * waits for it a while: committed at once, it must be respected; waiting for the pins' transaction, it removes
 * them once that commits.
 */
@SpringBootTest(properties = {"stagehand.recall.enabled=false", "stagehand.transfer.queue.enabled=false"})
class PinReleaseRaceIT {

    @Autowired JdbcTemplate jdbc;
    @Autowired JdbcClient db;
    @Autowired TransactionTemplate tx;
    @Autowired StageRequests requests;
    @TempDir Path tmp;

    final String tag = UUID.randomUUID().toString().substring(0, 8);
    /** The client's change, started by the cache just before it pins. */
    final AtomicReference<Runnable> meanwhile = new AtomicReference<>();
    Thread client;

    /** A cache on the test database that runs {@link #meanwhile} once, just before its next pin or renewal. */
    DiskCache cache() {
        return new DiskCache(db, tx, new CacheProperties(List.of(new CacheProperties.Directory(tmp, DataSize.ofMegabytes(1))),
                "race-" + tag), Clock.systemUTC(), null) {
            @Override
            public Set<Long> pin(Collection<Long> fileIds, String owner, Duration lifetime) {
                clientChanges();
                return super.pin(fileIds, owner, lifetime);
            }

            @Override
            public int keepPinned(Collection<PinNeed> needs) {
                clientChanges();
                return super.keepPinned(needs);
            }
        };
    }

    private void clientChanges() {
        Runnable change = meanwhile.getAndSet(null);
        if (change == null) return;
        client = Thread.ofPlatform().start(change);
        try {
            client.join(2_000); // it commits, or it waits for the request's row this transaction holds
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private UUID request(String destination, long... files) {
        UUID id = UUID.randomUUID();
        jdbc.update("INSERT INTO stage_request (id, owner, experiment, file_count, state, destination, disk_lifetime_s) "
                + "VALUES (?, 'it', 'atlas', ?, 'active', ?, 3600)", id, files.length, destination);
        return id;
    }

    private void fileOf(UUID request, long file, String state, int ordinal) {
        jdbc.update("INSERT INTO stage_request_file (request_id, file_id, state, ordinal) VALUES (?, ?, ?, ?)", request, file, state, ordinal);
    }

    /** A file waiting for its transfer, its pin due for renewal: released by the client as the sweep renews it. */
    @Test
    void aReleaseCommittedWhileTheSweepRenewsTheWaitingFilesPinsIsNotUndone() throws Exception {
        ItDb.cancelOpenRequests(jdbc); // the renewal looks at every open request
        String name = "/it/pin-race/" + tag + "/w";
        long file = ItDb.simulatedFile(jdbc, name, 1_000);
        UUID id = request("gsiftp://remote.example/in", file);
        fileOf(id, file, "transferring", 1);
        DiskCache cache = cache();
        cache.pin(List.of(file), id.toString(), Duration.ofMinutes(1)); // due: within half of its hour
        TransferHandOff handOff = new TransferHandOff(jdbc, new TransferQueue(jdbc), cache, RecallMetrics.NONE, r -> {});
        meanwhile.set(() -> requests.release(id, List.of(name)));

        handOff.keepPinned();
        client.join(30_000);
        assertThat(client.isAlive()).as("the release still waiting").isFalse();

        assertThat(jdbc.queryForObject("SELECT released FROM stage_request_file WHERE request_id = ?", Boolean.class, id)).isTrue();
        assertThat(cache.pins(file)).as("pins of the released file").doesNotContainKey(id.toString());
        jdbc.update("UPDATE stage_request SET state = 'cancelled', completed_at = now() WHERE id = ?", id);
    }

    /** A read list's files are pinned for their requests before their space is reserved: one cancelled meanwhile is not. */
    @Test
    void aFileCancelledWhileItsReadListIsPinnedStaysUnpinned() throws Exception {
        String name = "/it/pin-race/" + tag + "/c";
        long file = ItDb.simulatedFile(jdbc, name, 1_000), other = ItDb.simulatedFile(jdbc, "/it/pin-race/" + tag + "/k", 1_000);
        UUID id = request(null, file, other);
        fileOf(id, file, "queued", 1);
        fileOf(id, other, "queued", 2);
        DiskCache cache = cache();
        RecallService service = new RecallService(jdbc, null, new VirtualClock(), TapeModel.lto9(),
                RecallChangesIT.props("pin-race-" + tag), cache);
        meanwhile.set(() -> requests.cancel(id, List.of(name)));

        service.pin(List.of(file, other), null); // as CacheStaging does for a read list
        client.join(30_000);
        assertThat(client.isAlive()).as("the cancel still waiting").isFalse();

        assertThat(jdbc.queryForObject("SELECT state FROM stage_request_file WHERE request_id = ? AND file_id = ?", String.class, id, file))
                .isEqualTo("cancelled");
        assertThat(cache.pins(file)).as("pins of the cancelled file").doesNotContainKey(id.toString());
        assertThat(cache.pins(other)).as("pins of the file still wanted").containsKey(id.toString());
        requests.cancel(id, null);
    }
}
