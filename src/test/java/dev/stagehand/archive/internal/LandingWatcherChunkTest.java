package dev.stagehand.archive.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.mockito.ArgumentMatchers.any;
import static org.mockito.ArgumentMatchers.anyString;
import static org.mockito.ArgumentMatchers.eq;
import static org.mockito.Mockito.mock;
import static org.mockito.Mockito.when;

import dev.stagehand.archive.ArchiveProperties;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;
import org.springframework.util.unit.DataSize;

/**
 * A landed backlog bigger than the room below the high-water mark (at most high-water minus low-water after
 * eviction) is registered in parts, first files first, not refused whole for ever (a reviewer's case).
 */
class LandingWatcherChunkTest {

    @TempDir Path landing;

    @Test
    void aBacklogLargerThanTheRoomIsRegisteredInLandingOrderAsRoomAllows() throws Exception {
        // buffer 100 B, high-water 90 B; three landed files of 40 B: two fit now
        ArchiveProperties props = new ArchiveProperties(true, landing, DataSize.ofBytes(100), 0.9, 0.7, Duration.ofSeconds(60),
                10000, "default", Map.of("single", 1), "single", Map.of(), DataSize.ofBytes(0),
                new ArchiveProperties.Pool("ARC", 0, List.of()),
                new ArchiveProperties.Flush(Duration.ZERO, DataSize.ofBytes(1), Duration.ofMinutes(10), DataSize.ofGigabytes(1), 5000,
                        Duration.ofMinutes(10), Duration.ofMinutes(1), Duration.ofMinutes(2)),
                new ArchiveProperties.Watch(true, Duration.ofSeconds(10)), Duration.ofSeconds(30), "t");
        AtomicLong used = new AtomicLong(); // the buffer's used bytes, as the database would count them
        JdbcTemplate jdbc = mock(JdbcTemplate.class);
        when(jdbc.queryForObject(anyString(), eq(Long.class))).thenAnswer(i -> used.get());
        TransactionTemplate tx = mock(TransactionTemplate.class);
        List<Long> registered = new java.util.ArrayList<>();
        when(tx.execute(any())).thenAnswer(i -> {
            int n = registered.isEmpty() ? 2 : 1; // the admitted files (two, then one): their bytes, an id each
            used.addAndGet(40 * n);
            registered.add(1L);
            return java.util.Collections.nCopies(n, 1L);
        });
        JdbcArchiveBuffer buffer = new JdbcArchiveBuffer(jdbc, tx, props, 1_000_000, List.of());
        Path dir = Files.createDirectories(landing.resolve("exp/ds"));
        for (int i = 0; i < 3; i++) {
            Files.write(dir.resolve("f" + i), new byte[40]);
            Files.writeString(dir.resolve("f" + i + ".done"), "");
        }
        LandingWatcher w = new LandingWatcher(buffer);

        assertThat(w.scan()).as("the first two files, which fit below the mark").isEqualTo(2);
        assertThat(dir.resolve("f0.done")).doesNotExist();
        assertThat(dir.resolve("f1.done")).doesNotExist();
        assertThat(dir.resolve("f2.done")).as("the third waits, untouched").exists();
        assertThat(dir.resolve("f2.rejected")).doesNotExist();
        assertThat(used.get()).isEqualTo(80);

        assertThat(w.scan()).as("no room yet: nothing").isZero();
        used.set(30); // eviction made room
        assertThat(w.scan()).as("room again: the third").isEqualTo(1);
        assertThat(dir.resolve("f2.done")).doesNotExist();
        assertThat(w.scan()).isZero();
    }
}
