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
    @Autowired org.springframework.jdbc.core.simple.JdbcClient db;
    @Autowired org.springframework.core.env.Environment env;

    final String tag = UUID.randomUUID().toString().substring(0, 6).toUpperCase();

    /**
     * A mount's reads are counted on its row without an UPDATE per file: each was one, on the library's event
     * thread before the read was handed on (1.4–11 ms a file with small files, bench/staging-rows.sh).
     * The timeline still shows every read, and the row has them all once the tape is dismounted.
     */
    @Test
    void readsAreCountedOnTheirMountWithoutARowWritePerFile() {
        String drive = "mlog-" + tag, volume = "ML" + tag;
        Instant t0 = mountedAndRead(log, drive, volume, 200);
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

    /**
     * The timeline's read (on the console's thread) takes a drive's unwritten reads and writes them to the drive's open
     * mount; the tape left and the next was mounted between the two: the old tape's reads were added to the new
     * mount's row. The count is taken and written in one step now, and the mount's end waits for it.
     */
    @Test
    void readsTakenByTheTimelineAsTheNextTapeIsMountedStayWithTheirMount() throws Exception {
        String drive = "mlrace-" + tag, first = "MA" + tag, next = "MB" + tag;
        java.util.concurrent.CountDownLatch taken = new java.util.concurrent.CountDownLatch(1), go = new java.util.concurrent.CountDownLatch(1);
        Thread console = Thread.currentThread();
        // the timeline's write of the reads, held between taking the count and writing it
        var held = (org.springframework.jdbc.core.simple.JdbcClient) java.lang.reflect.Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[] {org.springframework.jdbc.core.simple.JdbcClient.class}, (proxy, m, args) -> {
                    if (m.getName().equals("sql") && String.valueOf(args[0]).contains("segments_read = segments_read +")
                            && Thread.currentThread() != console) {
                        taken.countDown();
                        go.await(10, java.util.concurrent.TimeUnit.SECONDS);
                    }
                    return m.invoke(db, args);
                });
        MountLog race = new MountLog(held, env);
        Instant t0 = mountedAndRead(race, drive, first, 3);
        Thread timeline = Thread.ofPlatform().start(() -> race.since(t0.minusSeconds(60)));
        assertThat(taken.await(10, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
        Thread events = Thread.ofPlatform().start(() -> { // the library's event thread: the tape leaves, the next comes
            race.dismounted(drive, first, Instant.now());
            race.mountStarted(drive, next, Instant.now());
        });
        events.join(500); // before: done at once, the reads still held by the timeline
        go.countDown();
        timeline.join(10_000);
        events.join(10_000);
        assertThat(jdbc.queryForObject("SELECT segments_read FROM tape_mount_log WHERE drive = ? AND volume_label = ?", Long.class, drive, first))
                .as("the first tape's reads").isEqualTo(3L);
        assertThat(jdbc.queryForObject("SELECT segments_read FROM tape_mount_log WHERE drive = ? AND volume_label = ?", Long.class, drive, next))
                .as("none on the next tape's mount").isZero();
    }

    /** The volume mounted on the drive and {@code files} 1000-byte files read from it; returns when they were read. */
    private Instant mountedAndRead(MountLog to, String drive, String volume, int files) {
        to.mountStarted(drive, volume, Instant.now());
        to.mountFinished(drive, volume, Instant.now(), null);
        Instant t0 = Instant.now();
        for (int i = 0; i < files; i++) {
            SegmentRead s = new SegmentRead(i, "/it/mlog/" + tag + "/" + volume + "/" + i, volume, i * 1000L, 1000, null);
            to.segmentRead(drive, new ReadResult(s, 1, 0, t0, t0.plusMillis(1)));
        }
        return t0;
    }
}
