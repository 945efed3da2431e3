package dev.stagehand.cli;

import dev.stagehand.StagehandApplication;
import dev.stagehand.catalog.CatalogImportRejected;
import dev.stagehand.catalog.CatalogImporter;
import dev.stagehand.catalog.ImportSummary;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.WebApplicationType;
import org.springframework.context.ConfigurableApplicationContext;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Unmatched;

/** {@code stagehand catalog import FILE}: the catalog's maintenance commands. */
@Command(name = "catalog", mixinStandardHelpOptions = true, description = "Catalog maintenance.",
        subcommands = CatalogCommand.Import.class)
final class CatalogCommand implements Runnable {

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(System.out);
    }

    @Command(name = "import", mixinStandardHelpOptions = true,
            description = "Bulk-load tape locations from an HSM dump (CSV or CSV.gz: file, volume, offset_bytes, "
                    + "size_bytes, experiment[, dataset, adler32, fseq, library, media_type]). All or nothing: a "
                    + "malformed row is reported with its line number and nothing is imported. Accepts Spring Boot "
                    + "arguments such as --stagehand.db.url=...")
    static final class Import implements Callable<Integer> {

        @Parameters(index = "0", paramLabel = "FILE", description = "the dump to import")
        Path file;

        @Unmatched
        List<String> springArgs = new ArrayList<>();

        @Override
        public Integer call() {
            if (!Files.isReadable(file)) {
                System.err.println("stagehand catalog import: cannot read " + file);
                return 2;
            }
            SpringApplication app = new SpringApplication(StagehandApplication.class);
            app.setWebApplicationType(WebApplicationType.NONE);
            try (ConfigurableApplicationContext ctx = app.run(springArgs.toArray(String[]::new))) {
                ImportSummary summary = ctx.getBean(CatalogImporter.class).importFile(file);
                System.out.println(summary.describe());
                return 0;
            } catch (CatalogImportRejected e) {
                System.err.printf("stagehand catalog import: %s rejected, nothing imported (%d error(s)):%n", file, e.errorCount());
                e.errors().forEach(err -> System.err.println("  " + err));
                if (e.errorCount() > e.errors().size())
                    System.err.printf("  ... and %d more%n", e.errorCount() - e.errors().size());
                return 1;
            }
        }
    }
}
