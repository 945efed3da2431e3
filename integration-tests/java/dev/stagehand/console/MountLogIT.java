package dev.stagehand.console;

import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.tape.ReadResult;
import dev.stagehand.tape.SegmentRead;
import java.time.Instant;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The mount history's read counts on the real database (the console's drive timeline). The same context as
 * {@link ConsoleVolumeQueuesIT} (no recall scheduler: only this test's events reach the log).
 */
@SpringBootTest(properties = {"stagehand.db.local-database=stagehand_console_queues", "stagehand.recall.enabled=false"})
class MountLogIT {

    @Autowired JdbcTemplate jdbc;
    @Autowired MountLog log;

    final String tag = UUID.randomUUID().toString().substring(0, 6).toUpperCase();

    /**
     * A mount's reads are counted on its row without an UPDATE per file: each was one, on the library's event
     * thread before the read was handed on (1.4–11 ms a file with small files, bench/staging-rows.sh).
     * The timeline still shows every read, and the row has them all once the tape is dismounted.
     */
    @Test
    void readsAreCountedOnTheirMountWithoutARowWritePerFile() {
        String drive = "mlog-" + tag, volume = "ML" + tag;
        log.mountStarted(drive, volume, Instant.now());
        log.mountFinished(drive, volume, Instant.now(), null);
        Instant t0 = Instant.now();
        for (int i = 0; i < 200; i++) {
            SegmentRead s = new SegmentRead(i, "/it/mlog/" + tag + "/" + i, volume, i * 1000L, 1000, null);
            log.segmentRead(drive, new ReadResult(s, 1, 0, t0, t0.plusMillis(1)));
        }
        long written = jdbc.queryForObject("SELECT segments_read FROM tape_mount_log WHERE drive = ?", Long.class, drive);
        assertThat(written).as("segments written to the row as the reads came (at most once a second)").isLessThan(200);

        var seen = log.since(t0.minusSeconds(60)).stream().filter(m -> m.drive().equals(drive)).toList();
        assertThat(seen).singleElement().satisfies(m -> {
            assertThat(m.segmentsRead()).isEqualTo(200);
            assertThat(m.bytesRead()).isEqualTo(200_000);
        });

        SegmentRead last = new SegmentRead(200, "/it/mlog/" + tag + "/last", volume, 0, 500, null);
        log.segmentRead(drive, new ReadResult(last, 1, 0, t0, t0.plusMillis(1)));
        log.dismounted(drive, volume, Instant.now());
        var row = jdbc.queryForMap("SELECT segments_read, bytes_read, dismounted_at FROM tape_mount_log WHERE drive = ?", drive);
        assertThat(row.get("segments_read")).isEqualTo(201L);
        assertThat(row.get("bytes_read")).isEqualTo(200_500L);
        assertThat(row.get("dismounted_at")).isNotNull();
    }
}
