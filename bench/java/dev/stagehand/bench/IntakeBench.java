package dev.stagehand.bench;

import dev.stagehand.StagehandApplication;
import dev.stagehand.cache.DiskCache;
import dev.stagehand.catalog.CatalogImporter;
import dev.stagehand.platform.VirtualClock;
import dev.stagehand.recall.RecallProperties;
import dev.stagehand.recall.RecallQueues;
import dev.stagehand.recall.service.RecallQueueView;
import dev.stagehand.recall.service.RecallService;
import dev.stagehand.tape.SimulatedLibrary;
import dev.stagehand.tape.TapeModel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import org.springframework.boot.SpringApplication;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The recall scheduler's intake round in the service ({@link RecallService#poll}) with a large queue in
 * PostgreSQL: the round that takes {@code files} queued file requests in, then the rounds that follow while
 * they wait (the service runs one every poll interval, 2 s by default), and a round after a small new
 * request, and the once-a-minute sweep that looks at the whole queue, a slice a round. The library is simulated on a virtual clock that is not advanced, so nothing is mounted: only
 * the database side of the round is timed. Usage: IntakeBench [files] [rounds].
 */
public final class IntakeBench {

    public static void main(String[] args) throws Exception {
        int files = args.length > 0 ? Integer.parseInt(args[0]) : 1_000_000;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 5;
        Path dump = BenchSupport.catalogFor(files);
        String[] spring = Arrays.copyOf(BenchSupport.springArgs(false), BenchSupport.springArgs(false).length + 1);
        spring[spring.length - 1] = "--stagehand.recall.enabled=false"; // the bench's own instance is the only scheduler
        try (var ctx = SpringApplication.run(StagehandApplication.class, spring)) {
            JdbcTemplate jdbc = ctx.getBean(JdbcTemplate.class);
            BenchSupport.clean(jdbc);
            jdbc.execute("TRUNCATE recall_file");
            ctx.getBean(CatalogImporter.class).importFile(dump);
            long t0 = System.nanoTime();
            request(jdbc, "ORDER BY name LIMIT " + files);
            jdbc.execute("VACUUM ANALYZE");
            double submit = (System.nanoTime() - t0) / 1e9;

            VirtualClock clock = new VirtualClock();
            Path root = Files.createDirectories(Path.of("target/bench/intake-library"));
            SimulatedLibrary library = SimulatedLibrary.builder(clock).name("bench").drives(8).accessors(2).root(root).build();
            RecallProperties props = new RecallProperties(true, "tape-aware", 20_000_000_000L, Duration.ZERO, Duration.ofMinutes(10),
                    // no queue is worth a mount within the bench's minute: only the rounds are timed, no reads
                    "bench-intake", Long.MAX_VALUE, Integer.MAX_VALUE, Duration.ofDays(365), Duration.ofDays(365), Duration.ofMinutes(5),
                    2_000_000_000_000L, 20_000, 4, Map.of(), Map.of());
            RecallService service = new RecallService(jdbc, library, clock, TapeModel.lto9(), props, ctx.getBean(DiskCache.class));
            service.start();
            long t1 = System.nanoTime();
            service.poll();
            double first = (System.nanoTime() - t1) / 1e9;
            // a large request is taken in a slice a round: the rounds until it is whole (the service runs them back to back)
            int sliceRounds = 1;
            double slowestSlice = first;
            while (service.takingInSlices()) {
                long t = System.nanoTime();
                service.poll();
                slowestSlice = Math.max(slowestSlice, (System.nanoTime() - t) / 1e9);
                sliceRounds++;
            }
            double whole = (System.nanoTime() - t1) / 1e9;
            List<String> waiting = new ArrayList<>();
            double[] each = new double[rounds];
            for (int i = 0; i < rounds; i++) {
                long t = System.nanoTime();
                service.poll();
                each[i] = (System.nanoTime() - t) / 1e9;
                waiting.add(String.format(Locale.ROOT, "%.3f", each[i]));
            }
            // a new request of 1,000 files: 500 already queued, 500 new
            request(jdbc, "ORDER BY name OFFSET " + (files - 500) + " LIMIT 1000");
            long t2 = System.nanoTime();
            service.poll();
            double afterNew = (System.nanoTime() - t2) / 1e9;
            // no mount in the minute the clock now moves: the drives' reads (and the catalog's made-up checksums
            // failing them) would be timed with the sweep
            for (var d : library.drives()) library.setEnabled(d.drive(), false);
            clock.advance(Duration.ofSeconds(61)); // the once-a-minute sweep over the whole queue is due
            // it walks the queue a slice a round: the rounds until the walk is through
            int walk = files / RecallService.SWEEP_SLICE + 1;
            double sweepTotal = 0, sweepSlowest = 0;
            for (int i = 0; i < walk; i++) {
                long t = System.nanoTime();
                service.poll();
                double round = (System.nanoTime() - t) / 1e9;
                sweepTotal += round;
                sweepSlowest = Math.max(sweepSlowest, round);
            }
            // the queue per volume and experiment as the console and the gauges read it: from this scheduler's
            // model and the reads under way, and from the rows alone (an instance that does not recall)
            RecallQueueView fromScheduler = new RecallQueueView(jdbc, () -> service), fromRows = new RecallQueueView(jdbc, () -> null);
            double[] viewScheduler = new double[3], viewRows = new double[3];
            long[] viewFiles = new long[2];
            for (int i = 0; i < 3; i++) {
                long t = System.nanoTime();
                viewFiles[0] = files(fromScheduler.snapshot());
                viewScheduler[i] = (System.nanoTime() - t) / 1e9;
                t = System.nanoTime();
                viewFiles[1] = files(fromRows.snapshot());
                viewRows[i] = (System.nanoTime() - t) / 1e9;
            }
            Arrays.sort(viewScheduler);
            Arrays.sort(viewRows);
            // a cold start: a new scheduler (a restart, or a second instance) takes the whole open queue in at its
            // start-up and first round, its recall_file rows already there
            service.stop();
            RecallService cold = new RecallService(jdbc, library, clock, TapeModel.lto9(), props, ctx.getBean(DiskCache.class));
            long t4 = System.nanoTime();
            cold.start();
            double coldStart = (System.nanoTime() - t4) / 1e9;
            t4 = System.nanoTime();
            cold.poll();
            double coldFirst = (System.nanoTime() - t4) / 1e9;
            while (cold.takingInSlices()) cold.poll();
            double coldWhole = (System.nanoTime() - t4) / 1e9;
            cold.stop();
            cold = null;
            // a second request for the same files (a rule and a user asking for one dataset): each file is joined
            request(jdbc, "ORDER BY name LIMIT " + files);
            long t3 = System.nanoTime();
            service.poll();
            double second = (System.nanoTime() - t3) / 1e9;
            while (service.takingInSlices()) service.poll();
            double secondWhole = (System.nanoTime() - t3) / 1e9;
            service.stop();
            long queued = jdbc.queryForObject("SELECT count(*) FROM stage_request_file WHERE state = 'queued'", Long.class);
            Arrays.sort(each);
            System.out.printf(Locale.ROOT, "%nrecall intake rounds with %,d queued file requests in PostgreSQL (%,d queued after the rounds):%n",
                    files, queued);
            System.out.printf(Locale.ROOT, "  %-46s %8.2f s%n", "submission (SQL insert, analyze)", submit);
            System.out.printf(Locale.ROOT, "  %-46s %8.2f s%n", "first round (takes the request in)", first);
            System.out.printf(Locale.ROOT, "  %-46s %8.2f s   (%d rounds, slowest %.2f s)%n", "rounds until the request is taken in whole",
                    whole, sliceRounds, slowestSlice);
            System.out.printf(Locale.ROOT, "  %-46s %8.3f s   (each: %s)%n", "round while it waits, median of " + rounds,
                    each[rounds / 2], String.join(" ", waiting));
            System.out.printf(Locale.ROOT, "  %-46s %8.3f s%n", "round after a new 1,000-file request", afterNew);
            System.out.printf(Locale.ROOT, "  %-46s %8.3f s   (slowest of its %d rounds %.3f s)%n",
                    "sweep (once a minute: the whole queue)", sweepTotal, walk, sweepSlowest);
            System.out.printf(Locale.ROOT, "  %-46s %8.2f s   (until whole %.2f s)%n", "round taking in a second request, same files", second, secondWhole);
            System.out.printf(Locale.ROOT, "  %-46s %8.2f s   (start-up %.2f s, first round %.2f s)%n",
                    "cold start: a new scheduler takes the queue in", coldStart + coldFirst, coldStart, coldFirst);
            System.out.printf(Locale.ROOT, "  %-46s %8.2f s%n", "cold start until the queue is taken in whole", coldStart + coldWhole);
            System.out.printf(Locale.ROOT, "  %-46s %8.3f s   (%,d files on volume queues)%n",
                    "queue view from the scheduler, median of 3", viewScheduler[1], viewFiles[0]);
            System.out.printf(Locale.ROOT, "  %-46s %8.3f s   (%,d files on volume queues)%n",
                    "queue view from the rows alone, median of 3", viewRows[1], viewFiles[1]);
        }
    }

    /** Files queued or being read over every volume of a view. */
    private static long files(RecallQueues.Snapshot s) {
        return s.volumes().stream().mapToLong(v -> v.queued() + v.staging()).sum();
    }

    private static void request(JdbcTemplate jdbc, String pick) {
        UUID id = UUID.randomUUID();
        jdbc.update("INSERT INTO stage_request (id, owner, experiment, file_count) VALUES (?, 'bench', 'atlas', 1)", id);
        int n = jdbc.update("INSERT INTO stage_request_file (request_id, file_id, ordinal) "
                + "SELECT ?, id, row_number() OVER () FROM (SELECT id FROM file " + pick + ") p", id);
        jdbc.update("UPDATE stage_request SET file_count = ? WHERE id = ?", n, id);
    }
}
