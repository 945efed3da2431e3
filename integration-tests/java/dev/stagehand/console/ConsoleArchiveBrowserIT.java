package dev.stagehand.console;

import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.archive.ArchiveBuffer;
import dev.stagehand.archive.NewArchiveFile;
import dev.stagehand.replication.ReplicationRules;
import dev.stagehand.replication.ReplicationRules.NewRule;
import dev.stagehand.replication.Sites;
import dev.stagehand.transfer.GridFtpScratch;
import dev.stagehand.transfer.GridFtpServer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.Alert;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.WebDriverWait;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The archive and datasets pages in headless Chromium with real data: files registered into the archive
 * buffer reach tape (simulated library, scaled clock) on the write drive, and a rule replicates their
 * dataset to a loopback GridFTP site. Both pages show it as it happens, without a reload.
 */
@DirtiesContext // its own archive and tape settings: closed afterwards, so the suite stays within the database's connections
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
        "stagehand.db.local-database=stagehand_console_archive",
        "stagehand.tape.clock=scaled", "stagehand.tape.scale=1000", "stagehand.tape.drives=2",
        "stagehand.tape.persist-drives=false", "stagehand.tape.roles.write-drives=1",
        "stagehand.console.admin-password=browser-admin-pw",
        "stagehand.recall.poll-interval=200ms", "stagehand.replication.pass-interval=200ms",
        "stagehand.transfer.queue.poll-interval=100ms", "stagehand.transfer.mover.backoff=100ms",
        "stagehand.transfer.mover.max-attempts=2", "stagehand.transfer.queue.outage.delay=500ms",
        "stagehand.transfer.queue.outage.max-delay=1s",
        // 1 MB files on 4 MB volumes: a family of 6 files fills one volume and opens a second
        "stagehand.archive.buffer-capacity=100000000B", "stagehand.archive.volume-capacity=4000000B",
        "stagehand.archive.flush.poll-interval=200ms", "stagehand.archive.flush.min-bytes=1B", "stagehand.archive.flush.max-age=0s",
        "stagehand.archive.flush.idle-dismount=0s"})
class ConsoleArchiveBrowserIT {

    static final long MB = 1_000_000;
    static final String TAG = java.util.UUID.randomUUID().toString().substring(0, 6); // the test database outlives runs
    static GridFtpScratch scratch;
    static ConsoleBrowser chromium;

    @DynamicPropertySource
    static void paths(DynamicPropertyRegistry r) throws Exception {
        scratch = GridFtpScratch.create("stagehand-console-archive-");
        Path root = scratch.root;
        Files.createDirectories(root.resolve("landing"));
        r.add("stagehand.tape.sim.root", () -> root.resolve("tape").toString());
        r.add("stagehand.cache.directories[0].path", () -> root.resolve("cache").toString());
        r.add("stagehand.cache.directories[0].capacity", () -> "1GB");
        r.add("stagehand.cache.directories[0].create-missing", () -> "true");
        r.add("stagehand.archive.landing", () -> root.resolve("landing").toString());
        r.add("stagehand.tape.library", () -> "console-" + TAG); // its volumes are this library's alone
        r.add("stagehand.archive.pool.prefix", () -> "C" + TAG.substring(0, 3).toUpperCase());
        r.add("stagehand.archive.pool.count", () -> "6");
    }

    @BeforeAll
    static void startBrowser() throws Exception {
        chromium = ConsoleBrowser.start();
    }

    @AfterAll
    static void stop() throws Exception {
        if (chromium != null) chromium.close();
        if (scratch != null) scratch.close();
    }

    @LocalServerPort int port;
    @Autowired ArchiveBuffer buffer;
    @Autowired ReplicationRules rules;
    @Autowired Sites sites;
    @Autowired JdbcTemplate jdbc;

    /** The text of the first element {@code css} finds, or "" (the live part may be mid-swap). */
    static String text(WebDriver d, String css) {
        try {
            List<WebElement> e = d.findElements(By.cssSelector(css));
            return e.isEmpty() ? "" : e.getFirst().getText();
        } catch (StaleElementReferenceException swapped) {
            return "";
        }
    }

    @Test
    void archivedFilesAndTheirReplicationShowLiveOnTheArchiveAndDatasetsPages() throws Exception {
        WebDriver browser = chromium.driver;
        String base = "http://localhost:" + port;
        dev.stagehand.ItDb.retireArchiveBuffer(jdbc); // what an earlier, interrupted run left queued
        chromium.logIn(base, "admin", "browser-admin-pw");
        var wait = new WebDriverWait(browser, Duration.ofSeconds(120)).pollingEvery(Duration.ofMillis(200));

        // the archive page before any data: the write drive (the last of two) and an empty queue
        browser.get(base + "/console/archive");
        assertThat(ConsoleBrowser.liveText(browser, By.cssSelector("#write-drives tr[data-drive='drive02']"))).contains("drive02");
        assertThat(browser.findElements(By.cssSelector("#write-drives tr[data-drive='drive01']"))).isEmpty();
        ((JavascriptExecutor) browser).executeScript("window.stagehandMarker = 'same page';");

        // a dataset, a rule sending it to a loopback GridFTP site, and its 6 files registered
        String ds = "run-" + TAG, site = "REMOTE-" + TAG;
        Path remote = scratch.root.resolve("remote");
        GridFtpServer.openUp(remote);
        GridFtpServer server = scratch.anonymous("server");
        sites.put(site, Map.of("tier", "1"), List.of(server.url(remote)));
        jdbc.update("INSERT INTO dataset (name, experiment) VALUES (?, 'phenix')", ds);
        rules.create(new NewRule(ds, 1, site, null, null, null, "console test"));
        List<NewArchiveFile> files = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            byte[] bytes = new byte[(int) MB];
            new Random(i).nextBytes(bytes);
            Path p = Files.write(Files.createDirectories(scratch.root.resolve("landing/phenix/" + ds)).resolve("f" + i), bytes);
            files.add(new NewArchiveFile(p.toString(), MB, null, ds, "phenix", null, null));
        }
        buffer.register(files);

        // the family's two volumes fill up on the page without a reload: 4 + 2 files, nothing left queued
        wait.until(d -> {
            List<WebElement> rows = d.findElements(By.cssSelector("#family-volumes tr[data-family='" + ds + "'] td.files"));
            try {
                return rows.stream().mapToInt(e -> Integer.parseInt(e.getText())).sum() == 6;
            } catch (StaleElementReferenceException swapped) {
                return false;
            }
        });
        wait.until(d -> text(d, "#buffer-states tr[data-state='queued'] td.files").equals("0")
                && text(d, "#buffer-states tr[data-state='writing'] td.files").equals("0"));
        assertThat(((JavascriptExecutor) browser).executeScript("return window.stagehandMarker")).isEqualTo("same page");
        List<String> familyRows = wait.until(d -> { // read again if the live part was swapped mid-read
            try {
                return d.findElements(By.cssSelector("#family-volumes tr[data-family='" + ds + "']")).stream().map(WebElement::getText).toList();
            } catch (StaleElementReferenceException swapped) {
                return null;
            }
        });
        assertThat(familyRows).hasSize(2).anySatisfy(t -> assertThat(t).contains("full", "100.0 %"));
        assertThat(text(browser, "#family-queues")).contains("Everything registered is on tape.");
        chromium.shot("archive");

        // the datasets page follows the replication to the site until it is complete and verified
        browser.get(base + "/console/datasets");
        ((JavascriptExecutor) browser).executeScript("window.stagehandMarker = 'datasets';");
        String completeness = "#completeness tr[data-dataset='" + ds + "'][data-site='" + site + "']";
        wait.until(d -> {
            String row = text(d, completeness);
            return row.contains("OK") && row.contains("6 / 6 (100.0 %)");
        });
        assertThat(text(browser, "#rules")).contains(ds, site, "continuous");

        // the site goes down and then loses a replica: the page shows the dataset incomplete while the copy
        // waits out the outage in the transfer queue, and complete again once the site is back
        int sitePort = server.port;
        server.kill();
        rules.declare(site, List.of("/phenix/" + ds + "/f0"), "lost in a disk failure");
        wait.until(d -> text(d, completeness).contains("5 / 6"));
        chromium.shot("datasets-incomplete");
        Thread.sleep(3000); // several of the mover's attempts and put-backs while nothing listens
        assertThat(text(browser, completeness)).contains("5 / 6", "REPLICATING", "declared lost in a disk failure");
        // the transfers page tells the operator why the copy waits
        browser.get(base + "/console/transfers");
        wait.until(d -> text(d, "#active-transfers .put-back").startsWith("unreachable (CONNECTION), put back"));
        chromium.shot("transfers-put-back");
        browser.get(base + "/console/datasets");
        ((JavascriptExecutor) browser).executeScript("window.stagehandMarker = 'datasets';");
        GridFtpServer back = GridFtpServer.anonymousOn(scratch.root.resolve("server-again"), sitePort);
        try {
            wait.until(d -> {
                String row = text(d, completeness);
                return row.contains("OK") && row.contains("6 / 6 (100.0 %)");
            });
        } finally {
            back.close();
        }
        assertThat(((JavascriptExecutor) browser).executeScript("return window.stagehandMarker")).isEqualTo("datasets");
        for (int i = 0; i < 6; i++) {
            byte[] expected = new byte[(int) MB];
            new Random(i).nextBytes(expected);
            Path delivered;
            try (var found = Files.walk(remote)) {
                int n = i;
                delivered = found.filter(p -> p.getFileName().toString().equals("f" + n)).findFirst().orElseThrow();
            }
            assertThat(Files.readAllBytes(delivered)).as("replica of f" + i).isEqualTo(expected);
        }
        chromium.shot("datasets");
    }

    /**
     * The Delete button of a failed write asks first, naming the file: one click deleted a file from the archive (its
     * registration and queued copies) with no way back. Dismissed, nothing happens; accepted, the file goes and the page
     * says so.
     */
    @Test
    void deletingAFailedFileFromTheArchivePageAsksFirst() throws Exception {
        WebDriver browser = chromium.driver;
        String base = "http://localhost:" + port;
        chromium.logIn(base, "admin", "browser-admin-pw");
        // a file whose write failed for good, as the flusher leaves it (written here: the flusher would take a queued one)
        String name = "/phenix/del-" + TAG + "/f0";
        long id = jdbc.queryForObject("INSERT INTO file (name, size_bytes, adler32, experiment) VALUES (?, 1000, '0000000a', 'phenix') "
                + "RETURNING id", Long.class, name);
        jdbc.update("""
                INSERT INTO archive_file (file_id, path, size_bytes, adler32, family, storage_class, copies, state)
                VALUES (?, ?, 1000, '0000000a', ?, 'default', 1, 'failed')""", id, scratch.root.resolve("landing/del-" + TAG).toString(),
                "del-" + TAG);
        jdbc.update("""
                INSERT INTO archive_copy (file_id, copy_no, family, state, attempts, error, size_bytes, registered_at, not_before)
                VALUES (?, 1, ?, 'failed', 3, 'the buffer file changed after registration', 1000, now(), now() + interval '1 day')""",
                id, "del-" + TAG);
        browser.get(base + "/console/archive");
        By delete = By.cssSelector("#write-failures tr[data-file='" + id + "'] button");
        var wait = new WebDriverWait(browser, Duration.ofSeconds(10)).pollingEvery(Duration.ofMillis(200));
        wait.until(d -> !d.findElements(delete).isEmpty());

        ConsoleBrowser.liveClick(browser, delete);
        Alert asked = wait.until(ExpectedConditions.alertIsPresent());
        assertThat(asked.getText()).contains("Delete " + name + " from the archive?");
        asked.dismiss();
        Thread.sleep(1000);
        assertThat(buffer.file(id)).as("dismissed: kept").isPresent();

        ConsoleBrowser.liveClick(browser, delete);
        wait.until(ExpectedConditions.alertIsPresent()).accept();
        wait.until(d -> text(d, "#flash-message").contains("Deleted " + name));
        assertThat(buffer.file(id)).isEmpty();
        assertThat(browser.getCurrentUrl()).endsWith("/console/archive");
        chromium.shot("archive-deleted");
    }
}
