package dev.stagehand.reliability;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * kill -9 of the service at seeded random points of a recall + transfer run, restarting it each time:
 * every request completes, every delivered file matches its catalog checksum, and no file is read from
 * tape twice by one process (a second read only follows a kill that lost the first read's copy before it
 * was verified). Seed: {@code -Dfaults.seed=N} to replay a run; printed either way.
 */
class KillNineFaultIT {

    static final int KILLS = 10;

    @Test
    @Timeout(value = 900, unit = TimeUnit.SECONDS) // a hang guard: 11 service starts take minutes on a busy machine
    void everyRequestCompletesAcrossKillNines() throws Exception {
        long seed = Long.getLong("faults.seed", System.currentTimeMillis());
        System.out.println("kill -9 fault injection: seed " + seed + " (replay with -Dfaults.seed=" + seed + ")");
        Random rnd = new Random(seed);
        try (FaultRig rig = new FaultRig("KillNine")) {
            rig.catalog(6, 20, false, seed);
            List<String> files = new ArrayList<>(rig.files);
            Collections.shuffle(files, rnd);
            // one request per life of the process, so every kill lands in a run with work under way; the last
            // asks again for files of earlier ones (answered from the cache or joined, not read again)
            List<List<String>> batches = new ArrayList<>();
            int per = files.size() / KILLS;
            for (int i = 0; i < KILLS; i++) batches.add(files.subList(i * per, i == KILLS - 1 ? files.size() : (i + 1) * per));
            batches.add(files.subList(0, 15));
            ServiceProcess s = rig.service("node-a", Map.of()).start();
            int kills = 0;
            for (int i = 0; i < batches.size(); i++) {
                rig.submit(s, batches.get(i));
                if (i == batches.size() - 1) break;
                long delay = 300 + rnd.nextInt(3_500);
                Thread.sleep(delay);
                int done = rig.filesDone();
                s.kill();
                kills++;
                rig.faults++;
                System.out.printf("kill -9 #%d after %d ms of life %d; %d files delivered so far%n", kills, delay, s.starts(), done);
                s.start();
            }
            boolean ended = rig.awaitEnd(Duration.ofSeconds(300));
            FaultRig.Report r = rig.report("kill-9", kills + " kill -9 at seeded random points (seed " + seed + ")");
            assertThat(ended).as("every request ended").isTrue();
            assertThat(kills).isGreaterThanOrEqualTo(10);
            assertThat(r.lost()).isZero();
            assertThat(r.failed()).isZero();
            assertThat(r.filesNotDone()).isZero();
            assertThat(r.corrupt()).as("corrupt deliveries %s", r.corruptNames()).isZero();
            assertThat(r.reads().files()).as("files read from tape").isEqualTo(rig.files.size());
            assertThat(r.reads().duplicatesInOneProcess()).as("a file read twice by one process").isZero();
            // a re-read is justified only by a kill between the read and its verified copy: at most one per kill
            // per file under way
            for (var e : r.reads().perFile().entrySet()) assertThat(e.getValue()).as(e.getKey()).isLessThanOrEqualTo(1 + kills);
        }
    }
}
