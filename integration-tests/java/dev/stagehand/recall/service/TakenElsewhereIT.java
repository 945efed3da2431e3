package dev.stagehand.recall.service;

import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.ItDb;
import dev.stagehand.recall.scheduler.Copy;
import dev.stagehand.recall.scheduler.FileWork;
import dev.stagehand.recall.scheduler.QueueStore.Elsewhere;
import dev.stagehand.recall.scheduler.QueueStore.Taken;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Before a mount the engine asks which of the volume's queued files another instance sharing the queue has
 * taken since: claimed there (read now), read, or failed. Its own claims and queued files are not news.
 */
@SpringBootTest(properties = {"stagehand.recall.enabled=false"})
class TakenElsewhereIT {

    @Autowired JdbcTemplate jdbc;

    @Test
    void theFilesAnotherInstanceClaimedReadOrFailedAreTheOnesReported() {
        String tag = UUID.randomUUID().toString().substring(0, 8), instance = "here-" + tag, other = "there-" + tag;
        FileWork queued = file(tag, "queued", "queued", null, null);
        FileWork mine = file(tag, "mine", "staging", instance, null);
        FileWork theirs = file(tag, "theirs", "staging", other, null);
        FileWork read = file(tag, "read", "on_disk", other, null);
        FileWork failed = file(tag, "failed", "failed", null, "no usable tape copy");
        FileWork noRow = new FileWork(ItDb.simulatedFile(jdbc, "/it/" + tag + "/norow", 1_000), "/it/" + tag + "/norow",
                1_000, List.of(new Copy("L1", 0)), "atlas", null, null);
        JdbcQueueStore store = new JdbcQueueStore(jdbc, instance, Duration.ofMinutes(10), t -> Instant.now(), landed -> { });

        List<Taken> taken = store.takenElsewhere(List.of(queued, mine, theirs, read, failed, noRow));

        assertThat(taken).containsExactlyInAnyOrder(new Taken(theirs.id(), Elsewhere.CLAIMED, null),
                new Taken(read.id(), Elsewhere.ON_DISK, null), new Taken(failed.id(), Elsewhere.FAILED, "no usable tape copy"));
        assertThat(store.takenElsewhere(List.of())).isEmpty();
    }

    private FileWork file(String tag, String what, String state, String claimedBy, String error) {
        String name = "/it/" + tag + "/" + what;
        long id = ItDb.simulatedFile(jdbc, name, 1_000);
        jdbc.update("INSERT INTO recall_file (file_id, state, volume, claimed_by, lease_until, error) VALUES (?, ?, 'L1', ?, "
                + "CASE WHEN ? = 'staging' THEN now() + interval '5 minutes' END, ?)", id, state, claimedBy, state, error);
        return new FileWork(id, name, 1_000, List.of(new Copy("L1", 0)), "atlas", null, null);
    }
}
