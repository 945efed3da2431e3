package dev.stagehand.bench;

import dev.stagehand.replication.ReplicationEngine;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Per-site completeness at scale: D datasets of F files each, all wanted at one site by one rule per dataset
 * (D x F wanted replicas, all verified). Times the full recompute (what every pass did before) against a pass
 * after one replica changed (only its dataset, marked by the triggers, is aggregated), and the cost the
 * marking adds to a bulk update of replicas.
 *   bench/completeness.sh [datasets] [files-per-dataset]   (defaults 1000 1000: 10^6 wanted replicas)
 */
public final class CompletenessBench {

    public static void main(String[] args) {
        int datasets = (int) ArchiveBench.arg(args, 0, 1000);
        int files = (int) ArchiveBench.arg(args, 1, 1000);
        try (ConfigurableApplicationContext ctx = BenchSupport.withoutRounds()) {
            JdbcTemplate jdbc = ctx.getBean(JdbcTemplate.class);
            ReplicationEngine engine = ctx.getBean(ReplicationEngine.class);
            BenchSupport.clean(jdbc);
            jdbc.update("DELETE FROM site");
            long site = jdbc.queryForObject("INSERT INTO site (name) VALUES ('BENCH') RETURNING id", Long.class);
            long t0 = System.nanoTime();
            jdbc.update("INSERT INTO dataset (name, experiment) SELECT 'cb' || d, 'bench' FROM generate_series(1, ?) d", datasets);
            jdbc.update("""
                    INSERT INTO file (name, size_bytes, dataset_id, experiment)
                    SELECT '/cb/' || d.id || '/f' || i, 1000000, d.id, 'bench' FROM dataset d, generate_series(1, ?) i""", files);
            jdbc.update("""
                    INSERT INTO replication_rule (dataset_id, copies, site_expression, owner) SELECT id, 1, 'BENCH', 'bench' FROM dataset""");
            jdbc.update("INSERT INTO replication_rule_site (rule_id, site_id) SELECT id, ? FROM replication_rule", site);
            jdbc.update("INSERT INTO replica (file_id, site_id, state, source, done_at) SELECT id, ?, 'verified', 'bench', now() FROM file",
                    site);
            jdbc.update("""
                    INSERT INTO replication_rule_replica (rule_id, file_id, site_id)
                    SELECT r.id, f.id, ? FROM replication_rule r JOIN file f ON f.dataset_id = r.dataset_id""", site);
            jdbc.execute("VACUUM ANALYZE");
            double setUp = (System.nanoTime() - t0) / 1e9;
            long wanted = (long) datasets * files;

            double full = BenchSupport.seconds(engine::recomputeStatus); // the first pass is a full one
            long ok = jdbc.queryForObject("SELECT count(*) FROM dataset_site_status WHERE state = 'OK'", Long.class);
            if (ok != datasets) throw new IllegalStateException(ok + " datasets OK, expected " + datasets);
            double idle = BenchSupport.median5(() -> BenchSupport.seconds(engine::recomputeStatus));
            double one = BenchSupport.median5(() -> {
                jdbc.update("UPDATE replica SET state = 'failed' WHERE file_id = (SELECT min(id) FROM file)");
                double s = BenchSupport.seconds(engine::recomputeStatus);
                jdbc.update("UPDATE replica SET state = 'verified' WHERE file_id = (SELECT min(id) FROM file)");
                engine.recomputeStatus();
                return s;
            });
            long failed = jdbc.queryForObject("SELECT count(*) FROM dataset_site_status WHERE state <> 'OK'", Long.class);
            if (failed != 0) throw new IllegalStateException(failed + " datasets not OK after the changes were undone");
            // the triggers' cost on a bulk change: 10 % of the replicas in one statement, marked vs the same untouched
            double[] bulk = BenchSupport.withAndWithoutTrigger(jdbc, "replica", "replica_updated",
                    "UPDATE replica SET updated_at = now() WHERE file_id % 10 = 0");
            engine.recomputeStatus();

            System.out.printf("completeness: %,d datasets x %,d files = %,d wanted replicas at one site (set-up %.1f s)%n",
                    datasets, files, wanted, setUp);
            System.out.printf("  full recompute (every pass before)          %8.3f s%n", full);
            System.out.printf("  pass, nothing changed                       %8.3f s%n", idle);
            System.out.printf("  pass after one replica changed              %8.3f s   (%.0fx less than full)%n", one, full / one);
            System.out.printf("  bulk update of %,d replicas: with marking %.3f s, triggers off %.3f s (x%.2f)%n",
                    wanted / 10, bulk[0], bulk[1], bulk[0] / bulk[1]);
        }
    }
}
