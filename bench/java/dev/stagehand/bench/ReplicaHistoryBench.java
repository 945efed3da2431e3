package dev.stagehand.bench;

import dev.stagehand.replication.ReplicationRules;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The replica history's costs for deleted files (V68, V70). A bulk delete of N tape-only files (no replicas; their
 * names are recorded all the same: the file's statement trigger runs after the cascade took the replicas) and of N
 * files with one verified replica each, timed by EXPLAIN ANALYZE: the statement, the file's trigger recording the
 * names (replica_event_file) and the replica's recording the removals. Alternately without and with the name index
 * (V70). Then {@code ?file=} of a deleted file (ReplicationRules.history) with 10^6 rows in replica_event_file, with
 * and without the index.
 *   bench/replica-history.sh [files] [rounds]   (defaults 200000 2)
 */
public final class ReplicaHistoryBench {

    private static final String INDEX = "replica_event_file_name";
    private static final Pattern TIME = Pattern.compile("time=([0-9.]+)");

    public static void main(String[] args) {
        int files = (int) ArchiveBench.arg(args, 0, 200_000);
        int rounds = (int) ArchiveBench.arg(args, 1, 2);
        try (ConfigurableApplicationContext ctx = BenchSupport.withoutRounds()) {
            JdbcTemplate jdbc = ctx.getBean(JdbcTemplate.class);
            ReplicationRules rules = ctx.getBean(ReplicationRules.class);
            System.out.printf("replica history: bulk deletes of %,d files (ms: statement / file trigger / replica trigger)%n", files);
            try {
                for (int r = 0; r < rounds; r++) {
                    for (boolean indexed : new boolean[] {false, true}) {
                        setUp(jdbc, files, indexed);
                        System.out.printf("  %-13s tape-only %s   with a replica %s%n", indexed ? "name index" : "no index",
                                delete(jdbc, "rh-tape"), delete(jdbc, "rh-repl"));
                    }
                }
                // older bulk deletes of tape-only files: 10^6 names in all
                jdbc.update("""
                        INSERT INTO replica_event_file (file_id, dataset_id, name)
                        SELECT 1000000000 + i, NULL, '/rh/old/run' || (i / 1000) || '/f' || i || '.root'
                          FROM generate_series(1, greatest(0, 1000000 - (SELECT count(*) FROM replica_event_file))) i""");
                jdbc.execute("VACUUM ANALYZE replica_event_file");
                long names = jdbc.queryForObject("SELECT count(*) FROM replica_event_file", Long.class);
                int[] n = {0};
                java.util.function.DoubleSupplier lookup = () -> BenchSupport.seconds(() -> {
                    String file = "/rh/repl/run" + (++n[0] * 997 % files / 1000) + "/f" + (n[0] * 997 % files) + ".root";
                    List<ReplicationRules.ReplicaEvent> h = rules.history("rh-repl", null, file, 100);
                    if (h.size() != 2) throw new IllegalStateException(file + ": " + h.size() + " events, expected 2");
                });
                double with = BenchSupport.median5(lookup);
                jdbc.execute("DROP INDEX " + INDEX);
                jdbc.execute("ANALYZE replica_event_file");
                double without = BenchSupport.median5(lookup);
                System.out.printf("  ?file= of a deleted file, %,d names, %,d events in its dataset: %.0f ms without the index, %.0f ms with it%n",
                        names, jdbc.queryForObject("SELECT count(*) FROM replica_event e JOIN dataset d ON d.id = e.dataset_id "
                                + "WHERE d.name = 'rh-repl'", Long.class), without * 1000, with * 1000);
            } finally {
                jdbc.execute("CREATE INDEX IF NOT EXISTS " + INDEX + " ON replica_event_file (name)");
            }
        }
    }

    /** N tape-only files and N with one verified replica each (registered: one event each), all on one volume. */
    private static void setUp(JdbcTemplate jdbc, int files, boolean indexed) {
        BenchSupport.clean(jdbc);
        jdbc.update("DELETE FROM site WHERE name = 'RH-BENCH'");
        jdbc.execute("TRUNCATE replica_event, replica_event_file, replica_event_site");
        jdbc.execute(indexed ? "CREATE INDEX IF NOT EXISTS " + INDEX + " ON replica_event_file (name)" : "DROP INDEX IF EXISTS " + INDEX);
        long site = jdbc.queryForObject("INSERT INTO site (name) VALUES ('RH-BENCH') RETURNING id", Long.class);
        long volume = jdbc.queryForObject("INSERT INTO volume (label) VALUES ('RH0001') RETURNING id", Long.class);
        for (String ds : List.of("rh-tape", "rh-repl")) {
            long id = jdbc.queryForObject("INSERT INTO dataset (name, experiment) VALUES (?, 'bench') RETURNING id", Long.class, ds);
            jdbc.update("""
                    INSERT INTO file (name, size_bytes, dataset_id, experiment)
                    SELECT '/' || replace(?, '-', '/') || '/run' || (i / 1000) || '/f' || i || '.root', 1000000, ?, 'bench'
                      FROM generate_series(0, ? - 1) i""", ds, id, files);
        }
        jdbc.update("INSERT INTO segment (file_id, volume_id, offset_bytes) SELECT id, ?, id FROM file", volume);
        jdbc.update("""
                INSERT INTO replica (file_id, site_id, state, source, done_at)
                SELECT f.id, ?, 'verified', 'registered', now() FROM file f JOIN dataset d ON d.id = f.dataset_id
                 WHERE d.name = 'rh-repl'""", site);
        jdbc.execute("VACUUM ANALYZE");
        jdbc.execute("CHECKPOINT");
    }

    private static String delete(JdbcTemplate jdbc, String dataset) {
        List<String> plan = jdbc.queryForList("EXPLAIN (ANALYZE) DELETE FROM file WHERE dataset_id = (SELECT id FROM dataset WHERE name = '"
                + dataset + "')", String.class);
        return "%6.0f / %5.0f / %5.0f".formatted(ms(plan, "Execution Time"), ms(plan, "Trigger file_deleted_replica_event "),
                ms(plan, "Trigger replica_event_deleted "));
    }

    private static double ms(List<String> plan, String line) {
        String l = plan.stream().filter(s -> s.strip().startsWith(line)).findFirst().orElseThrow(() -> new IllegalStateException(line));
        Matcher m = TIME.matcher(l.replace("Execution Time: ", "time="));
        if (!m.find()) throw new IllegalStateException(l);
        return Double.parseDouble(m.group(1));
    }
}
