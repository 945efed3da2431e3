package dev.stagehand.recall.service;

import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.ItDb;
import dev.stagehand.cache.DiskCache;
import dev.stagehand.recall.request.RecallMetrics;
import dev.stagehand.transfer.TransferQueue;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * A hand-off round collects only the transfers that ended, and cancels those of files cancelled, since the last
 * one; the once-a-minute round catches what a round missed (committed late). Looking up every file waiting
 * for its transfer at every round took 0.42 s with 100,000 waiting.
 */
@SpringBootTest(properties = {"stagehand.recall.enabled=false", "stagehand.transfer.queue.enabled=false"})
class HandOffCollectIT {

    @Autowired JdbcTemplate jdbc;
    @Autowired TransferQueue transfers;
    @Autowired DiskCache cache;

    @Test
    void aRoundCollectsTheTransfersEndedSinceTheLastAndTheSweepTheRest() {
        String tag = UUID.randomUUID().toString().substring(0, 8);
        TransferHandOff handOff = new TransferHandOff(jdbc, transfers, cache, RecallMetrics.NONE, requests -> {});
        handOff.run(); // the first round looks at everything; from now on a round looks at what ended since

        UUID request = UUID.randomUUID();
        jdbc.update("INSERT INTO stage_request (id, owner, experiment, file_count, state, destination) "
                + "VALUES (?, 'it', 'atlas', 3, 'active', 'gsiftp://remote.example/in')", request);
        long recent = waiting(request, tag + "/recent"), late = waiting(request, tag + "/late");
        long cancelled = waiting(request, tag + "/cancelled"), cancelledLate = waiting(request, tag + "/cancelled-late");
        long recentJob = job(request, recent, "done", "now()");
        long lateJob = job(request, late, "done", "now() - interval '10 minutes'"); // its end committed long after it
        long cancelledJob = job(request, cancelled, "queued", "NULL"), cancelledLateJob = job(request, cancelledLate, "queued", "NULL");
        cancel(request, cancelled, "now()"); // as a cancel does
        cancel(request, cancelledLate, "now() - interval '10 minutes'");

        assertThat(handOff.run()).isTrue();
        assertThat(state(request, recent)).isEqualTo("done");
        assertThat(jobState(cancelledJob)).as("its file cancelled since the last round").isEqualTo("cancelled");
        assertThat(state(request, late)).as("ended before the last round: left to the sweep").isEqualTo("transferring");
        assertThat(jobState(cancelledLateJob)).isEqualTo("queued");

        assertThat(handOff.collectAll()).isTrue();
        assertThat(state(request, late)).isEqualTo("done");
        assertThat(jobState(cancelledLateJob)).isEqualTo("cancelled");
        assertThat(jobState(recentJob)).isEqualTo("done");
        assertThat(jobState(lateJob)).isEqualTo("done");
    }

    private long waiting(UUID request, String name) {
        long id = ItDb.simulatedFile(jdbc, "/it/handoff/" + name, 1_000);
        jdbc.update("INSERT INTO stage_request_file (request_id, file_id, state, ordinal) VALUES (?, ?, 'transferring', "
                + "(SELECT coalesce(max(ordinal), 0) + 1 FROM stage_request_file WHERE request_id = ?))", request, id, request);
        return id;
    }

    private long job(UUID request, long file, String state, String finishedAt) {
        return jdbc.queryForObject("INSERT INTO transfer_job (correlation, source, destination, size_bytes, state, finished_at) "
                + "VALUES (?, '/cache/x', 'gsiftp://remote.example/in/x', 1000, ?, " + finishedAt + ") RETURNING id",
                Long.class, TransferHandOff.correlation(request.toString(), file), state);
    }

    private void cancel(UUID request, long file, String at) {
        jdbc.update("UPDATE stage_request_file SET state = 'cancelled', finished_at = " + at + " WHERE request_id = ? AND file_id = ?",
                request, file);
    }

    private String state(UUID request, long file) {
        return jdbc.queryForObject("SELECT state FROM stage_request_file WHERE request_id = ? AND file_id = ?", String.class, request, file);
    }

    private String jobState(long job) {
        return jdbc.queryForObject("SELECT state FROM transfer_job WHERE id = ?", String.class, job);
    }
}
