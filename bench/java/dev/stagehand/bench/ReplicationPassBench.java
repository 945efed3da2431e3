package dev.stagehand.bench;

import dev.stagehand.replication.ReplicationEngine;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The replication engine's pass (every 2 s by default) at production sizes: D datasets of F files, each
 * wanted by a continuous rule at site RB-A where every copy is verified. Times a pass with nothing to do, then
 * with a tenth of the files each waiting for a site with no endpoint (RB-C), transferring to RB-B (their
 * transfers queued, not yet ended) and staging from tape for RB-B; then a pass after one transfer ended, and
 * passes with a file added to a dataset before each. The engine runs only when called here; no mover is
 * contacted.
 *   bench/replication.sh [datasets] [files-per-dataset]   (defaults 1000 1000: 10^6 files)
 */
public final class ReplicationPassBench {

    public static void main(String[] args) {
        int datasets = (int) ArchiveBench.arg(args, 0, 1000);
        int files = (int) ArchiveBench.arg(args, 1, 1000);
        try (ConfigurableApplicationContext ctx = BenchSupport.withoutRounds()) {
            JdbcTemplate jdbc = ctx.getBean(JdbcTemplate.class);
            ReplicationEngine engine = ctx.getBean(ReplicationEngine.class);
            BenchSupport.clean(jdbc);
            jdbc.update("DELETE FROM site");
            long t0 = System.nanoTime();
            long a = site(jdbc, "RB-A", "gsiftp://127.0.0.1:9/a/");
            long b = site(jdbc, "RB-B", "gsiftp://127.0.0.1:9/b/");
            long c = jdbc.queryForObject("INSERT INTO site (name) VALUES ('RB-C') RETURNING id", Long.class);
            jdbc.update("INSERT INTO dataset (name, experiment) SELECT 'rb' || d, 'bench' FROM generate_series(1, ?) d", datasets);
            jdbc.update("""
                    INSERT INTO file (name, size_bytes, adler32, dataset_id, experiment)
                    SELECT '/rb/' || d.id || '/f' || i, 1000000, '00000001', d.id, 'bench' FROM dataset d, generate_series(1, ?) i""", files);
            rules(jdbc, a, "RB-A", "true");
            jdbc.update("INSERT INTO replica (file_id, site_id, state, source, adler32, done_at) "
                    + "SELECT id, ?, 'verified', 'bench', adler32, now() FROM file", a);
            wants(jdbc, a, "true");
            jdbc.execute("VACUUM ANALYZE");
            double setUp = (System.nanoTime() - t0) / 1e9;
            engine.takeLead();
            double first = BenchSupport.seconds(engine::pass);
            double steady = BenchSupport.median5(() -> BenchSupport.seconds(engine::pass));

            // a tenth of the datasets each: waiting (no endpoint), transferring, staging
            long d0 = jdbc.queryForObject("SELECT min(id) FROM dataset", Long.class);
            String waiting = "d.id < " + (d0 + datasets / 10);
            String transferring = "d.id >= " + (d0 + datasets / 10) + " AND d.id < " + (d0 + 2 * datasets / 10);
            String staging = "d.id >= " + (d0 + 2 * datasets / 10) + " AND d.id < " + (d0 + 3 * datasets / 10);
            rules(jdbc, c, "RB-C", waiting);
            jdbc.update("INSERT INTO replica (file_id, site_id, waiting_for) SELECT f.id, ?, 'site RB-C has no enabled endpoint' "
                    + "FROM file f JOIN dataset d ON d.id = f.dataset_id WHERE " + waiting, c);
            wants(jdbc, c, waiting);
            rules(jdbc, b, "RB-B", "(" + transferring + ") OR (" + staging + ")");
            jdbc.update("""
                    INSERT INTO transfer_job (correlation, source, destination, size_bytes, state)
                    SELECT 'replica:' || f.id || ':' || ?, 'gsiftp://127.0.0.1:9/a' || f.name, 'gsiftp://127.0.0.1:9/b' || f.name,
                           f.size_bytes, 'queued'
                      FROM file f JOIN dataset d ON d.id = f.dataset_id""" + " WHERE " + transferring, b);
            jdbc.update("""
                    INSERT INTO replica (file_id, site_id, state, source, transfer_job_id)
                    SELECT f.id, ?, 'transferring', 'RB-A', j.id FROM file f JOIN dataset d ON d.id = f.dataset_id
                      JOIN transfer_job j ON j.correlation = 'replica:' || f.id || ':' || ?""" + " WHERE " + transferring, b, b);
            jdbc.update("INSERT INTO replica (file_id, site_id, state, source, stage_request_id) "
                    + "SELECT f.id, ?, 'staging', 'tape', gen_random_uuid() FROM file f JOIN dataset d ON d.id = f.dataset_id WHERE "
                    + staging, b);
            wants(jdbc, b, "(" + transferring + ") OR (" + staging + ")");
            jdbc.execute("VACUUM ANALYZE");
            long open = jdbc.queryForObject("SELECT count(*) FROM replica WHERE state IN ('pending', 'staging', 'transferring')", Long.class);
            engine.pass();
            double busy = BenchSupport.median5(() -> BenchSupport.seconds(engine::pass));

            // one transfer ends: its replica is verified at the next pass (none under way with fewer than 10 datasets)
            Long job = jdbc.queryForObject("SELECT min(transfer_job_id) FROM replica WHERE state = 'transferring'", Long.class);
            double ended = Double.NaN;
            if (job != null) {
                jdbc.update("UPDATE transfer_job SET state = 'done', dest_adler32 = 1, finished_at = now() WHERE id = ?", job);
                ended = BenchSupport.seconds(engine::pass);
                String state = jdbc.queryForObject("SELECT state FROM replica WHERE transfer_job_id = ?", String.class, job);
                if (!state.equals("verified")) throw new IllegalStateException("replica of transfer " + job + " is " + state);
            }

            // a file added to a dataset RB-A holds before each of 10 passes (a dataset being filled): each is wanted
            long ds = d0 + datasets - 1;
            double grown = 0;
            for (int i = 0; i < 10; i++) {
                jdbc.update("INSERT INTO file (name, size_bytes, dataset_id, experiment) VALUES (?, 1, ?, 'bench')", "/rb/new" + i, ds);
                grown += BenchSupport.seconds(engine::pass) / 10;
            }
            long wanted = jdbc.queryForObject("SELECT count(*) FROM replica r JOIN file f ON f.id = r.file_id WHERE f.name LIKE '/rb/new%'", Long.class);
            if (wanted != 10) throw new IllegalStateException("the new files have " + wanted + " replicas, expected 10");

            System.out.printf("replication pass: %,d datasets x %,d files, every copy verified at RB-A (set-up %.1f s)%n",
                    datasets, files, setUp);
            System.out.printf("  first pass                                    %8.3f s%n", first);
            System.out.printf("  pass, nothing to do (median of 5)             %8.3f s%n", steady);
            System.out.printf("  pass with %,d replicas open (median of 5)   %8.3f s%n", open, busy);
            System.out.printf("  pass after one transfer ended                 %8.3f s%n", ended);
            System.out.printf("  pass with a file added before it (mean of 10) %8.3f s%n", grown);
        }
    }

    private static long site(JdbcTemplate jdbc, String name, String url) {
        long id = jdbc.queryForObject("INSERT INTO site (name) VALUES (?) RETURNING id", Long.class, name);
        jdbc.update("INSERT INTO site_endpoint (site_id, url) VALUES (?, ?)", id, url);
        return id;
    }

    /** One continuous rule per dataset selected by {@code where} (on d), its site already chosen. */
    private static void rules(JdbcTemplate jdbc, long site, String expression, String where) {
        jdbc.update("INSERT INTO replication_rule (dataset_id, copies, site_expression, owner) "
                + "SELECT d.id, 1, ?, 'bench' FROM dataset d WHERE (" + where + ")", expression);
        jdbc.update("INSERT INTO replication_rule_site (rule_id, site_id) SELECT id, ? FROM replication_rule WHERE site_expression = ?",
                site, expression);
    }

    private static void wants(JdbcTemplate jdbc, long site, String where) {
        jdbc.update("""
                INSERT INTO replication_rule_replica (rule_id, file_id, site_id)
                SELECT r.id, f.id, ? FROM replication_rule r JOIN replication_rule_site rs ON rs.rule_id = r.id AND rs.site_id = ?
                  JOIN dataset d ON d.id = r.dataset_id JOIN file f ON f.dataset_id = d.id WHERE (""" + where + ")",
                site, site);
    }
}
