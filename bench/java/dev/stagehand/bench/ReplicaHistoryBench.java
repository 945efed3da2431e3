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
 *
 * <p>With {@code file} first: {@link #fileHistory} (one file's history in a dataset of many events).
 *   bench/replica-history.sh file [events] [writes] [rounds]   (defaults 400000 200000 2)
 */
public final class ReplicaHistoryBench {

    private static final String INDEX = "replica_event_file_name";
    private static final Pattern TIME = Pattern.compile("time=([0-9.]+)");

    public static void main(String[] args) {
        if (args.length > 0 && args[0].equals("file")) {
            String[] rest = java.util.Arrays.copyOfRange(args, 1, args.length);
            fileHistory((int) ArchiveBench.arg(rest, 0, 400_000), (int) ArchiveBench.arg(rest, 1, 200_000),
                    (int) ArchiveBench.arg(rest, 2, 2));
            return;
        }
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

    private static final String FILE_INDEX = "replica_event_file_id";
    private static final String[] SITES = {"RH-A", "RH-B", "RH-C", "RH-GONE"};

    /**
     * {@code ?file=} (and the other history queries) in a dataset of {@code events} events, 4 per file (2 sites, 2
     * changes each, a file's 4 far apart in the table), beside another dataset of half as many; a tenth of the files
     * deleted, a site removed. Then the write path: {@code writes} replicas registered at once (one statement, an
     * event each) and then changed by one update (a row trigger each); then the pruning of the oldest quarter of
     * the events (history-keep 30 days) and the VACUUM after it. Alternately without and with an index on
     * replica_event (file_id) (V73); the index is left as it was found.
     */
    static void fileHistory(int events, int writes, int rounds) {
        try (ConfigurableApplicationContext ctx = BenchSupport.withoutRounds()) {
            JdbcTemplate jdbc = ctx.getBean(JdbcTemplate.class);
            ReplicationRules rules = ctx.getBean(ReplicationRules.class);
            boolean hadIndex = !jdbc.queryForList("SELECT 1 FROM pg_class WHERE relname = ?", FILE_INDEX).isEmpty();
            int files = events / 4;
            System.out.printf("replica history of one file: %,d events in the dataset (%,d files), %,d writes; medians of 5, ms%n",
                    events, files, writes);
            try {
                for (int r = 0; r < rounds; r++) {
                    for (boolean indexed : new boolean[] {false, true}) {
                        fill(jdbc, files, indexed);
                        int[] n = {0};
                        // a file of rh-big other than the deleted (i % 10 = 5) ones and those at the removed site (i % 10 = 0)
                        java.util.function.IntUnaryOperator live = k -> { int i = (int) ((k * 7919L) % files); return i % 10 == 5 || i % 10 == 0 ? i + 1 : i; };
                        String row = "  %-9s plain %6.1f  site %6.1f  removed site %6.1f  file %6.1f  deleted file %6.1f  file at site %6.1f  unknown file %6.1f";
                        System.out.printf(row + "%n", indexed ? "index" : "no index",
                                ms(() -> expect(rules.history("rh-big", null, null, 100), 100)),
                                ms(() -> expect(rules.history("rh-big", "RH-B", null, 100), 100)),
                                ms(() -> expect(rules.history("rh-big", "RH-GONE", null, 100), 100)),
                                ms(() -> expect(rules.history("rh-big", null, name(live.applyAsInt(++n[0])), 100), 4)),
                                ms(() -> expect(rules.history("rh-big", null, name((int) ((++n[0] * 7919L) % files / 10 * 10 + 5) % files), 100), 4)),
                                ms(() -> { int i = live.applyAsInt(++n[0]); expect(rules.history("rh-big", SITES[i % 3], name(i), 100), 2); }),
                                ms(() -> expect(rules.history("rh-big", null, "/rh/none/f" + ++n[0], 100), 0)));
                        writes(jdbc, writes);
                    }
                }
            } finally {
                jdbc.execute(hadIndex ? "CREATE INDEX IF NOT EXISTS " + FILE_INDEX + " ON replica_event (file_id)"
                        : "DROP INDEX IF EXISTS " + FILE_INDEX);
            }
        }
    }

    private static String name(int i) {
        return "/rh/big/run" + (i / 1000) + "/f" + i + ".root";
    }

    private static void expect(List<?> got, int n) {
        if (got.size() != n) throw new IllegalStateException(got.size() + " events, expected " + n);
    }

    private static double ms(Runnable r) {
        return BenchSupport.median5(() -> BenchSupport.seconds(r)) * 1000;
    }

    /** Datasets rh-big ({@code files} files, 4 events each) and rh-other (half as many), their events as old as 40 days. */
    private static void fill(JdbcTemplate jdbc, int files, boolean indexed) {
        BenchSupport.clean(jdbc);
        jdbc.update("DELETE FROM site WHERE name LIKE 'RH-%'");
        jdbc.execute("TRUNCATE replica_event, replica_event_file, replica_event_site");
        jdbc.execute(indexed ? "CREATE INDEX IF NOT EXISTS " + FILE_INDEX + " ON replica_event (file_id)" : "DROP INDEX IF EXISTS " + FILE_INDEX);
        for (String s : SITES) jdbc.update("INSERT INTO site (name) VALUES (?)", s);
        for (String ds : List.of("rh-big", "rh-other")) {
            long id = jdbc.queryForObject("INSERT INTO dataset (name, experiment) VALUES (?, 'bench') RETURNING id", Long.class, ds);
            jdbc.update("""
                    INSERT INTO file (name, size_bytes, dataset_id, experiment)
                    SELECT '/rh/' || substr(?, 4) || '/run' || (i / 1000) || '/f' || i || '.root', 1000000, ?, 'bench'
                      FROM generate_series(0, ? - 1) i ORDER BY i""", ds, id, ds.equals("rh-big") ? files : files / 2);
        }
        // file i's replicas at sites i % 3 and i + 1 % 3 (RH-GONE for i % 10 = 0), each made (pending -> transferring)
        // then verified; a pass's changes are of many files, so a file's 4 events are far apart (k: its k-th)
        jdbc.update("""
                INSERT INTO replica_event (file_id, site_id, dataset_id, at, from_state, to_state, attempts)
                SELECT f.id, s.id, f.dataset_id,
                       now() - make_interval(days => 40) * (1 - (row_number() OVER (ORDER BY k, f.i, f.dataset_id))::float8 / ?),
                       CASE WHEN k % 2 = 0 THEN 'pending' ELSE 'transferring' END,
                       CASE WHEN k % 2 = 0 THEN 'transferring' ELSE 'verified' END, 1
                  FROM (SELECT id, dataset_id, substring(name from '/f([0-9]+)\\.root$')::int AS i FROM file) f
                 CROSS JOIN generate_series(0, 3) k
                  JOIN site s ON s.name = CASE WHEN k >= 2 AND f.i % 10 = 0 THEN 'RH-GONE'
                                               ELSE (ARRAY['RH-A', 'RH-B', 'RH-C'])[(f.i + k / 2) % 3 + 1] END
                 ORDER BY k, f.i, f.dataset_id""", (files + files / 2) * 4.0);
        jdbc.update("""
                DELETE FROM file WHERE dataset_id = (SELECT id FROM dataset WHERE name = 'rh-big')
                   AND substring(name from '/f([0-9]+)\\.root$')::int % 10 = 5""");
        jdbc.update("DELETE FROM site WHERE name = 'RH-GONE'");
        jdbc.execute("VACUUM ANALYZE");
        jdbc.execute("CHECKPOINT");
    }

    /** Times a bulk registration of N replicas, an update of all of them, the pruning of the oldest quarter, a VACUUM. */
    private static void writes(JdbcTemplate jdbc, int writes) {
        long ds = jdbc.queryForObject("INSERT INTO dataset (name, experiment) VALUES ('rh-ins', 'bench') RETURNING id", Long.class);
        jdbc.update("""
                INSERT INTO file (name, size_bytes, dataset_id, experiment)
                SELECT '/rh/ins/f' || i, 1000000, ?, 'bench' FROM generate_series(1, ?) i""", ds, writes);
        jdbc.execute("VACUUM ANALYZE file");
        jdbc.execute("CHECKPOINT");
        // the statement's time and its history trigger's (the events and their indexes)
        List<String> insert = jdbc.queryForList("""
                EXPLAIN (ANALYZE) INSERT INTO replica (file_id, site_id, state, source, done_at)
                SELECT f.id, (SELECT id FROM site WHERE name = 'RH-A'), 'verified', 'registered', now() FROM file f
                 WHERE f.dataset_id = ?""", String.class, ds);
        jdbc.execute("CHECKPOINT");
        List<String> update = jdbc.queryForList("EXPLAIN (ANALYZE) UPDATE replica SET state = 'lost', last_error = 'declared lost' "
                + "WHERE file_id IN (SELECT id FROM file WHERE dataset_id = ?)", String.class, ds);
        jdbc.execute("CHECKPOINT");
        long before = jdbc.queryForObject("SELECT count(*) FROM replica_event", Long.class);
        double[] pruned = {0};
        double prune = BenchSupport.seconds(() -> pruned[0] = jdbc.update(
                "DELETE FROM replica_event WHERE at < now() - make_interval(secs => ?)", 30 * 86400.0));
        double vacuum = BenchSupport.seconds(() -> jdbc.execute("VACUUM replica_event"));
        System.out.printf("            %,d replicas registered %6.0f ms (events %5.0f), changed %6.0f ms (events %5.0f); "
                        + "pruned %,d of %,d events %4.0f ms, VACUUM %4.0f ms%n", writes, ms(insert, "Execution Time"),
                ms(insert, "Trigger replica_event_inserted"), ms(update, "Execution Time"), ms(update, "Trigger replica_event_updated"),
                (long) pruned[0], before, prune * 1000, vacuum * 1000);
    }
}
