package dev.stagehand.bench;

import dev.stagehand.StagehandApplication;
import dev.stagehand.catalog.CatalogImporter;
import dev.stagehand.catalog.ImportSummary;
import java.nio.file.Files;
import java.nio.file.Path;
import org.springframework.boot.SpringApplication;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Catalog import of a deterministic 1,000,000-row dump into an empty catalog, then the same dump again
 * (idempotent re-import). Usage: CatalogImportBench [rows] [seed].
 */
public final class CatalogImportBench {

    public static void main(String[] args) throws Exception {
        int rows = args.length > 0 ? Integer.parseInt(args[0]) : 1_000_000;
        long seed = args.length > 1 ? Long.parseLong(args[1]) : 42;
        Path dump = Path.of("target/bench/catalog-" + rows + "-" + seed + ".csv");
        if (!Files.exists(dump)) {
            long t = System.nanoTime();
            BenchSupport.writeCatalog(dump, rows, seed);
            System.out.printf("generated %s (%d MB) in %.1f s%n", dump, Files.size(dump) >> 20, (System.nanoTime() - t) / 1e9);
        }
        try (var ctx = SpringApplication.run(StagehandApplication.class, BenchSupport.springArgs(false))) {
            BenchSupport.clean(ctx.getBean(JdbcTemplate.class));
            CatalogImporter importer = ctx.getBean(CatalogImporter.class);
            ImportSummary first = importer.importFile(dump);
            ImportSummary again = importer.importFile(dump);
            System.out.println();
            System.out.println("catalog import, " + rows + " rows (" + first.files() + " files, " + first.segments() + " segments, "
                    + first.volumes() + " volumes, " + first.datasets() + " datasets), one transaction, COPY + set-based INSERT");
            System.out.printf("  %-34s %10s %12s   %s%n", "", "seconds", "rows/s", "target (issue 2)");
            System.out.printf("  %-34s %10.1f %12.0f   < 60 s for 1,000,000 rows%n", "import into an empty catalog", first.seconds(), rows / first.seconds());
            System.out.printf("  %-34s %10.1f %12.0f   (idempotent: %d new files)%n", "re-import of the same dump", again.seconds(), rows / again.seconds(), again.newFiles());
        }
    }
}
