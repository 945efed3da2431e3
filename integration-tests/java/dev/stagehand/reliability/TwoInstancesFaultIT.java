package dev.stagehand.reliability;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Two service processes on one database share the recall and transfer queues: with both running no file is
 * read twice; then one is killed (kill -9, not restarted) and the other takes over its claims once their
 * leases lapse, finishing every request.
 */
class TwoInstancesFaultIT {

    @Test
    @Timeout(value = 600, unit = TimeUnit.SECONDS) // a hang guard, not a speed limit
    void twoInstancesShareTheQueuesAndTakeOver() throws Exception {
        try (FaultRig rig = new FaultRig("TwoInstances")) {
            rig.catalog(6, 15, false, 19);
            // leases shorter than the rig's (20 s / 30 s), which a waits out after b's kill: still renewed with
            // seconds to spare (a recall claim once less than half is left, at 500 ms polls; a transfer's every 5 s)
            ServiceProcess a = rig.service("node-a", Map.of("stagehand.tape.drive-prefix", "a-drive",
                    "stagehand.recall.lease", "12s", "stagehand.transfer.queue.lease", "15s")).start();
            ServiceProcess b = rig.service("node-b", Map.of("stagehand.tape.drive-prefix", "b-drive",
                    "stagehand.recall.lease", "12s", "stagehand.transfer.queue.lease", "15s")).start();
            List<String> files = rig.files;
            int half = files.size() / 2;
            // first phase: both alive, requests through both
            rig.submit(a, files.subList(0, half / 2));
            rig.submit(b, files.subList(half / 2, half));
            boolean firstEnded = rig.awaitEnd(Duration.ofSeconds(300));
            FaultRig.Reads shared = rig.reads();
            List<Integer> attempts = rig.jdbc.queryForList("SELECT attempts FROM transfer_job", Integer.class);
            Integer staging = rig.jdbc.queryForObject("SELECT count(*) FROM recall_file WHERE state = 'staging'", Integer.class);
            long readers = java.nio.file.Files.readAllLines(rig.readLog).stream().map(l -> l.split(" ")[1]).distinct().count();
            // second phase: b dies with work claimed; a takes it over after the leases (12 s / 15 s)
            rig.submit(a, files.subList(half, files.size() - 10));
            rig.submit(b, files.subList(files.size() - 10, files.size()));
            // kill b while it holds claims (files it is reading from tape), so that a must take them over
            int heldByB = 0;
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (heldByB == 0 && System.nanoTime() < until) {
                heldByB = rig.jdbc.queryForObject(
                        "SELECT count(*) FROM recall_file WHERE state = 'staging' AND claimed_by = 'node-b'", Integer.class);
                if (heldByB == 0) Thread.sleep(20);
            }
            b.kill();
            rig.faults++;
            int transfersOfB = rig.jdbc.queryForObject(
                    "SELECT count(*) FROM transfer_job WHERE state = 'active' AND lease_owner = 'drainer-node-b'", Integer.class);
            boolean ended = rig.awaitEnd(Duration.ofSeconds(300));
            a.checkAlive();
            long takenOver = a.logLines("recall claims whose lease lapsed taken back");
            FaultRig.Report r = rig.report("two-instances", String.format("2 instances shared %d files (read by %d processes,"
                    + " %d duplicate reads, transfer claims per row max %d); then kill -9 of one holding %d recall claims"
                    + " and %d transfers, taken over by the other after their leases",
                    half, readers, shared.duplicates(), attempts.stream().mapToInt(Integer::intValue).max().orElse(0), heldByB,
                    transfersOfB));
            assertThat(firstEnded).isTrue();
            assertThat(shared.duplicates()).as("no file read twice while both ran").isZero();
            assertThat(readers).as("both instances read from tape").isEqualTo(2L);
            assertThat(attempts).as("each transfer claimed once").allMatch(n -> n == 1);
            assertThat(staging).as("every claim settled").isZero();
            assertThat(heldByB).as("b was killed holding claims").isPositive();
            assertThat(takenOver).as("a took b's lapsed claims back").isPositive();
            FaultRig.assertNothingLost(ended, r);
        }
    }
}
