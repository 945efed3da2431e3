package dev.stagehand.console;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The overview's open recall work per volume on the real database: a queued file counts on its first available
 * copy by label (a disabled volume's copy does not count), a staging one on the volume being read, a file with
 * no usable copy apart; oldest and ETA come from the open requests waiting for the volume's files. A database of
 * its own: the cached contexts of other test classes run schedulers that would take its requests in.
 */
@SpringBootTest(properties = {"stagehand.db.local-database=stagehand_console_queues", "stagehand.recall.enabled=false"})
class ConsoleVolumeQueuesIT {

    @Autowired JdbcTemplate jdbc;
    @Autowired ConsoleViews views;

    final String tag = UUID.randomUUID().toString().substring(0, 6).toUpperCase();

    long volume(String label, String state) {
        return jdbc.queryForObject("INSERT INTO volume (label, state) VALUES (?, ?) RETURNING id", Long.class, label, state);
    }

    /** A file (sizes of petabytes, so these volumes head the list whatever else the database holds) on these volumes. */
    long file(String name, long size, long... volumes) {
        long id = jdbc.queryForObject("INSERT INTO file (name, size_bytes, experiment) VALUES (?, ?, 'atlas') RETURNING id",
                Long.class, "/it/vq/" + tag + "/" + name, size);
        for (long v : volumes) jdbc.update("INSERT INTO segment (file_id, volume_id, offset_bytes) VALUES (?, ?, 0)", id, v);
        return id;
    }

    UUID request(Duration age, Duration eta, long... files) {
        UUID id = UUID.randomUUID();
        jdbc.update("""
                INSERT INTO stage_request (id, owner, state, file_count, created_at, eta_at)
                VALUES (?, 'it', 'active', ?, now() - make_interval(secs => ?), now() + make_interval(secs => ?))""",
                id, files.length, age.toSeconds(), eta.toSeconds());
        for (int i = 0; i < files.length; i++) {
            String state = jdbc.queryForObject("SELECT state FROM recall_file WHERE file_id = ?", String.class, files[i]);
            jdbc.update("INSERT INTO stage_request_file (request_id, file_id, state, ordinal) VALUES (?, ?, ?, ?)",
                    id, files[i], state, i + 1);
        }
        return id;
    }

    @Test
    void queuedFilesCountOnTheirFirstAvailableCopyAndStagingOnesWhereTheyAreRead() {
        long a = volume("QA" + tag, "available"), b = volume("QB" + tag, "available");
        long c = volume("QC" + tag, "disabled"), d = volume("QD" + tag, "available");
        long pb = 1_000_000_000_000_000L;
        long f1 = file("f1", 5 * pb, c, b);       // the disabled copy comes first by label: QB counts
        long f2 = file("f2", 4 * pb, b, a);       // QA before QB
        long f3 = file("f3", 3 * pb, a, d);       // being read from QD
        long f4 = file("f4", 2 * pb, c);          // no usable copy
        for (long f : List.of(f1, f2, f4)) jdbc.update("INSERT INTO recall_file (file_id) VALUES (?)", f);
        jdbc.update("""
                INSERT INTO recall_file (file_id, state, volume, claimed_by, lease_until)
                VALUES (?, 'staging', ?, 'it', now() + interval '1 hour')""", f3, "QD" + tag);
        UUID older = request(Duration.ofHours(1), Duration.ofHours(2), f1, f2);
        UUID newer = request(Duration.ofMinutes(10), Duration.ofHours(5), f2, f3, f4);
        try {
            Map<String, ConsoleViews.VolumeQueue> shown = views.volumeQueues(20).stream()
                    .collect(Collectors.toMap(ConsoleViews.VolumeQueue::volume, q -> q));
            Instant now = Instant.now();

            ConsoleViews.VolumeQueue qb = shown.get("QB" + tag);
            assertThat(qb.queued()).isEqualTo(1);
            assertThat(qb.bytes()).isEqualTo(5 * pb);
            assertThat(qb.oldest()).isBetween(Duration.ofMinutes(59), Duration.ofMinutes(61));
            assertThat(qb.eta()).isBetween(now.plus(Duration.ofMinutes(119)), now.plus(Duration.ofMinutes(121)));

            ConsoleViews.VolumeQueue qa = shown.get("QA" + tag);
            assertThat(qa.queued()).isEqualTo(1);
            assertThat(qa.staging()).isZero();
            assertThat(qa.bytes()).isEqualTo(4 * pb);
            assertThat(qa.eta()).as("the later of its two requests").isBetween(now.plus(Duration.ofMinutes(299)), now.plus(Duration.ofMinutes(301)));

            ConsoleViews.VolumeQueue qd = shown.get("QD" + tag);
            assertThat(qd.queued()).isZero();
            assertThat(qd.staging()).isEqualTo(1);
            assertThat(qd.bytes()).isEqualTo(3 * pb);
            assertThat(qd.oldest()).isBetween(Duration.ofMinutes(9), Duration.ofMinutes(11));

            assertThat(shown).doesNotContainKey("QC" + tag);
            assertThat(shown.get("(no usable copy)").bytes()).isGreaterThanOrEqualTo(2 * pb);
            List<String> order = views.volumeQueues(20).stream().map(ConsoleViews.VolumeQueue::volume)
                    .filter(v -> v.endsWith(tag)).toList();
            assertThat(order).as("by bytes").containsExactly("QB" + tag, "QA" + tag, "QD" + tag);
        } finally {
            jdbc.update("UPDATE stage_request SET state = 'cancelled' WHERE id IN (?, ?)", older, newer);
            jdbc.update("DELETE FROM recall_file WHERE file_id IN (?, ?, ?, ?)", f1, f2, f3, f4);
        }
    }

    @Test
    void theChartsTapeReadsAreTheFilesLandedWithinTheHourReadAlongTheirIndex() {
        long pb = 1_000_000_000_000_000L;
        long recent = file("landed-recent", 7 * pb), old = file("landed-old", 11 * pb);
        long before = views.throughput().tapeRead().stream().mapToLong(Long::longValue).sum();
        jdbc.update("INSERT INTO recall_file (file_id, state, updated_at) VALUES (?, 'on_disk', now() - interval '5 minutes')", recent);
        jdbc.update("INSERT INTO recall_file (file_id, state, updated_at) VALUES (?, 'on_disk', now() - interval '61 minutes')", old);
        try {
            long after = views.throughput().tapeRead().stream().mapToLong(Long::longValue).sum();
            assertThat(after - before).isEqualTo(7 * pb); // the one 61 minutes old is outside the chart
            // the query the chart runs can go along the partial index (V32), not through every row ever staged
            String plan = jdbc.execute((java.sql.Connection c) -> {
                c.setAutoCommit(false);
                try (var st = c.createStatement()) {
                    st.execute("SET LOCAL enable_seqscan = off");
                    StringBuilder out = new StringBuilder();
                    try (var rs = st.executeQuery("""
                            EXPLAIN SELECT rf.updated_at, f.size_bytes FROM recall_file rf JOIN file f ON f.id = rf.file_id
                             WHERE rf.state = 'on_disk' AND rf.updated_at >= now() - interval '1 hour'""")) {
                        while (rs.next()) out.append(rs.getString(1)).append('\n');
                    }
                    return out.toString();
                } finally {
                    c.rollback();
                    c.setAutoCommit(true);
                }
            });
            assertThat(plan).contains("recall_file_on_disk_at");
        } finally {
            jdbc.update("DELETE FROM recall_file WHERE file_id IN (?, ?)", recent, old);
        }
    }
}
