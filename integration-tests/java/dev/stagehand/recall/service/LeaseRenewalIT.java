package dev.stagehand.recall.service;

import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.ItDb;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * A scheduler renews the claims on the files it reads only when less than half their lease is left (or it
 * lapsed while the database was away): every file of every read list was rewritten at every poll.
 */
@SpringBootTest(properties = {"stagehand.recall.enabled=false"})
class LeaseRenewalIT {

    @Autowired JdbcTemplate jdbc;

    @Test
    void aClaimIsRenewedOnlyOnceHalfItsLeaseIsGone() {
        String tag = UUID.randomUUID().toString().substring(0, 8), instance = "renew-" + tag;
        long fresh = claimed("/it/" + tag + "/fresh", instance, "9 minutes");
        long old = claimed("/it/" + tag + "/old", instance, "4 minutes");
        long lapsed = claimed("/it/" + tag + "/lapsed", instance, "-1 minutes");
        long others = claimed("/it/" + tag + "/others", "another-" + tag, "1 minutes");
        JdbcQueueStore store = new JdbcQueueStore(jdbc, instance, Duration.ofMinutes(10), t -> Instant.now(), landed -> { });

        store.renewLeases(List.of(fresh, old, lapsed, others));

        assertThat(minutesLeft(fresh)).as("more than half its lease left: not rewritten").isBetween(8.5, 9.0);
        assertThat(minutesLeft(old)).isBetween(9.5, 10.0);
        assertThat(minutesLeft(lapsed)).as("lapsed while this instance was alive: taken back").isBetween(9.5, 10.0);
        assertThat(minutesLeft(others)).as("another instance's claim").isBetween(0.5, 1.0);
    }

    private long claimed(String name, String instance, String left) {
        long id = ItDb.simulatedFile(jdbc, name, 1_000);
        jdbc.update("INSERT INTO recall_file (file_id, state, volume, claimed_by, lease_until) "
                + "VALUES (?, 'staging', 'L1', ?, now() + CAST(? AS interval))", id, instance, left);
        return id;
    }

    private double minutesLeft(long file) {
        return jdbc.queryForObject("SELECT extract(epoch FROM lease_until - now()) / 60 FROM recall_file WHERE file_id = ?",
                Double.class, file);
    }
}
