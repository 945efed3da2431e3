package dev.stagehand.console;

import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.ItCatalog;
import dev.stagehand.api.security.ApiRole;
import dev.stagehand.catalog.CatalogImporter;
import dev.stagehand.transfer.GridFtpServer;
import dev.stagehand.transfer.TransferJob;
import dev.stagehand.transfer.TransferQueue;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.Adler32;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.support.ui.WebDriverWait;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.security.crypto.bcrypt.BCryptPasswordEncoder;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The console in Debian's headless Chromium against the real service (random port, real PostgreSQL, the
 * simulated library on a scaled clock): log in, watch a recall progress on the overview without a reload,
 * cancel a request, watch transfers to a real GridFTP server (rates per link and host, the optimizer's
 * concurrency, failures by reason) and retry one, a viewer refused the admin page. Screenshots go to
 * target/screenshots/.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
        "stagehand.tape.clock=scaled", "stagehand.tape.scale=30", "stagehand.tape.drives=2",
        "stagehand.tape.persist-drives=false",
        "stagehand.recall.poll-interval=300ms", "stagehand.cache.directories[0].path=target/console-it/cache", "stagehand.cache.directories[0].create-missing=true",
        "stagehand.tape.sim.root=target/console-it/tape",
        "stagehand.console.admin-password=browser-admin-pw",
        "stagehand.transfer.queue.poll-interval=200ms", "stagehand.transfer.mover.backoff=200ms",
        "stagehand.transfer.mover.max-attempts=2",
        // the dead link's file fails after the mover's attempts instead of waiting out the outage in the queue;
        // a database of its own, so no other test context's drainer (which would wait it out) claims it
        "stagehand.transfer.queue.outage.give-up-after=0s", "stagehand.db.local-database=stagehand_console",
})
class ConsoleBrowserIT {

    static WebDriver browser;

    @LocalServerPort
    int port;
    @Autowired
    CatalogImporter importer;
    @Autowired
    dev.stagehand.api.security.ApiTokens tokens;
    String apiToken;
    @Autowired
    TransferQueue transfers;
    @Autowired
    dev.stagehand.api.security.ApiAccounts accounts;
    @Autowired
    AuditLog audit;
    @Autowired
    dev.stagehand.replication.Sites sites;
    @Autowired
    dev.stagehand.replication.ReplicationRules rules;
    @Autowired
    org.springframework.jdbc.core.JdbcTemplate jdbc;

    @DynamicPropertySource
    static void users(DynamicPropertyRegistry registry) {
        String hash = new BCryptPasswordEncoder(4).encode("viewer-pw");
        registry.add("stagehand.console.users[0].name", () -> "vera");
        registry.add("stagehand.console.users[0].password-hash", () -> hash);
        registry.add("stagehand.console.users[0].role", () -> "viewer");
        // a login with no role of its own: it is the API account "olga" (operator of cms only)
        String olga = new BCryptPasswordEncoder(4).encode("olga-pw");
        registry.add("stagehand.console.users[1].name", () -> "olga");
        registry.add("stagehand.console.users[1].password-hash", () -> olga);
    }

    static ConsoleBrowser chromium;

    @BeforeAll
    static void startBrowser() throws Exception {
        chromium = ConsoleBrowser.start();
        browser = chromium.driver;
    }

    @AfterAll
    static void stopBrowser() {
        if (chromium != null) chromium.close();
    }

    String url(String path) {
        return "http://localhost:" + port + path;
    }

    void logIn(String user, String password) throws Exception {
        chromium.logIn(url(""), user, password);
    }

    void shot(String name) throws Exception {
        chromium.shot(name);
    }

    String submit(List<String> files) throws Exception {
        return submit("atlas", files);
    }

    String submit(String experiment, List<String> files) throws Exception {
        if (apiToken == null) apiToken = tokens.create("admin", "browser test", null, "it").token();
        StringBuilder body = new StringBuilder("{\"experiment\": \"" + experiment + "\", \"files\": [");
        for (int i = 0; i < files.size(); i++) body.append(i == 0 ? "" : ",").append('"').append(files.get(i)).append('"');
        body.append("]}");
        HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(url("/api/v1/requests")))
                .header("Content-Type", "application/json").header("Authorization", "Bearer " + apiToken)
                .POST(HttpRequest.BodyPublishers.ofString(body.toString())).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
        Matcher m = Pattern.compile("\"id\"\\s*:\\s*\"([0-9a-f-]{36})\"").matcher(r.body());
        assertThat(m.find()).isTrue();
        return m.group(1);
    }

    @Test
    void anAdminWatchesARecallProgressLiveAndCancelsARequest() throws Exception {
        ItCatalog catalog = ItCatalog.load(importer, 40);
        logIn("admin", "browser-admin-pw");
        // marks this page load: a full reload would lose it
        ((JavascriptExecutor) browser).executeScript("window.stagehandMarker = 'same page';");
        String id = submit(catalog.files.subList(0, 20));
        By row = By.cssSelector("tr[data-request='" + id + "']");
        // the live table re-renders while a cell is read: a replaced cell is simply looked up again
        var wait = new WebDriverWait(browser, Duration.ofSeconds(60)).pollingEvery(Duration.ofMillis(200))
                .ignoring(org.openqa.selenium.StaleElementReferenceException.class);
        wait.until(d -> !d.findElements(row).isEmpty());
        shot("overview-queued");
        // the counts move as the simulated library stages the files, without reloading the page
        wait.until(d -> {
            var cells = d.findElements(By.cssSelector("tr[data-request='" + id + "'] td.on-disk"));
            return !cells.isEmpty() && Integer.parseInt(cells.get(0).getText()) > 0;
        });
        shot("overview-progress");
        wait.until(d -> {
            var cells = d.findElements(By.cssSelector("tr[data-request='" + id + "'] td.on-disk"));
            return !cells.isEmpty() && cells.get(0).getText().equals("20");
        });
        assertThat(((JavascriptExecutor) browser).executeScript("return window.stagehandMarker")).isEqualTo("same page");
        assertThat(ConsoleBrowser.liveText(browser, By.cssSelector("tr[data-request='" + id + "'] td.queued"))).isEqualTo("0");
        shot("overview");

        // a second request, cancelled from its detail page
        String other = submit(catalog.files.subList(20, 40));
        browser.get(url("/console/requests/" + other));
        shot("request-detail");
        ConsoleBrowser.liveClick(browser, By.id("cancel-request"));
        new WebDriverWait(browser, Duration.ofSeconds(10)).until(d -> d.findElements(By.id("flash-message")).size() == 1);
        assertThat(ConsoleBrowser.liveText(browser, By.id("request-state"))).isEqualTo("cancelled");
        assertThat(ConsoleBrowser.liveText(browser, By.id("flash-message"))).startsWith("Request cancelled");
        shot("request-cancelled");

        browser.get(url("/console/requests"));
        assertThat(ConsoleBrowser.liveText(browser, By.cssSelector("tr[data-request='" + other + "']"))).contains("cancelled");
        shot("requests");
        browser.get(url("/console/timeline"));
        // the volumes this test recalled were mounted (and not as failed mounts)
        assertThat(browser.findElements(By.cssSelector("#timeline svg g.mount:not(.failed)[data-volume^='IT" + catalog.prefix.substring(4, 12) + "']")))
                .isNotEmpty();
        shot("timeline");
        browser.get(url("/console/transfers"));
        shot("transfers");
        browser.get(url("/console/volumes"));
        shot("volumes");
        browser.get(url("/console/audit"));
        assertThat(ConsoleBrowser.liveText(browser, By.id("audit"))).contains("request.cancel", other, "admin");
        shot("audit");
    }

    static double rate(String text) {
        Matcher m = Pattern.compile("([\\d.]+) MB/s").matcher(text);
        assertThat(m.find()).as(text).isTrue();
        return Double.parseDouble(m.group(1));
    }

    @Test
    void anAdminWatchesTransfersPerLinkAndHostAndRetriesAFailedOne() throws Exception {
        Path root = Files.createTempDirectory("stagehand-console-transfers-");
        try (GridFtpServer server = GridFtpServer.anonymous(root.resolve("server"))) {
            Path dst = root.resolve("dst");
            GridFtpServer.openUp(dst);
            String tag = "console-" + UUID.randomUUID();
            List<TransferQueue.Request> moves = new ArrayList<>();
            Random random = new Random(7);
            for (int i = 0; i < 24; i++) {
                byte[] data = new byte[16_000_000];
                random.nextBytes(data);
                Path f = Files.write(Files.createDirectories(root.resolve("src")).resolve("f" + i), data);
                Adler32 sum = new Adler32();
                sum.update(data);
                moves.add(new TransferQueue.Request(tag, f.toUri(), URI.create(server.url(dst) + "/f" + i), data.length, sum.getValue()));
            }
            Path small = Files.write(root.resolve("src/small"), new byte[1000]);
            // a missing directory fails at once (not retried; its row asks to overwrite, shown in its row); a port
            // nobody listens on is retried, then fails
            moves.add(new TransferQueue.Request(tag, small.toUri(), URI.create(server.url(root.resolve("no-such-dir")) + "/small"), 1000, null,
                    true));
            int dead = GridFtpServer.freePort();
            moves.add(new TransferQueue.Request(tag, small.toUri(), URI.create("ftp://127.0.0.1:" + dead + dst + "/small"), 1000, null));
            List<Long> ids = transfers.enqueue(moves);

            logIn("admin", "browser-admin-pw");
            browser.get(url("/console/transfers"));
            String link = "ftp://127.0.0.1:" + server.port, host = "127.0.0.1:" + server.port;
            // the tables are swapped in by htmx every few seconds: an element found just before a swap is stale
            var wait = new WebDriverWait(browser, Duration.ofSeconds(90)).pollingEvery(Duration.ofMillis(200))
                    .ignoring(org.openqa.selenium.StaleElementReferenceException.class);
            // the link's measured rate (bytes of the last 10 s) shows while files move, without a reload
            wait.until(d -> {
                var cells = d.findElements(By.cssSelector("#links tr[data-link='" + link + "'] td.rate"));
                return !cells.isEmpty() && rate(cells.get(0).getText()) > 0;
            });
            shot("transfers-moving");
            int concurrency = Integer.parseInt(ConsoleBrowser.liveText(browser, By.cssSelector("#links tr[data-link='" + link + "'] td.concurrency")));
            assertThat(concurrency).isBetween(1, 16); // the optimizer's bounds (stagehand.transfer.mover defaults)
            assertThat(ConsoleBrowser.liveText(browser, By.id("optimizer"))).contains("between 1 and 16");
            // every file done, checked against its checksum; the host that took them shows their rate and count
            wait.until(d -> transfers.byCorrelation(tag).stream().allMatch(TransferJob::finished));
            wait.until(d -> {
                var files = d.findElements(By.cssSelector("#hosts tr[data-host='" + host + "'] td.files"));
                return !files.isEmpty() && Integer.parseInt(files.get(0).getText()) == 24;
            });
            assertThat(transfers.byCorrelation(tag).stream().filter(j -> j.state().equals("done")).count()).isEqualTo(24);
            // the dead link: its retry, classified, then the final failure
            wait.until(d -> {
                var r = d.findElements(By.cssSelector("#links tr[data-link='ftp://127.0.0.1:" + dead + "'] td.retries"));
                return !r.isEmpty() && r.get(0).getText().contains("CONNECTION ×1");
            });
            wait.until(d -> d.findElement(By.id("failure-reasons")).getText().contains("NO_SUCH_PATH")
                    && d.findElement(By.id("failure-reasons")).getText().contains("CONNECTION"));
            long missing = ids.get(24);
            By failedRow = By.cssSelector("#failed-transfers tr[data-job='" + missing + "']");
            wait.until(d -> !d.findElements(failedRow).isEmpty());
            String failedText = wait.until(d -> d.findElement(failedRow).getText());
            assertThat(failedText).contains("NO_SUCH_PATH", "No such file or directory");
            assertThat(ConsoleBrowser.liveText(browser, By.cssSelector("#failed-transfers tr[data-job='" + missing + "'] td.overwrite")))
                    .isEqualTo("yes");
            By deadRow = By.cssSelector("#failed-transfers tr[data-job='" + ids.get(25) + "'] td.overwrite");
            wait.until(d -> !d.findElements(deadRow).isEmpty());
            assertThat(ConsoleBrowser.liveText(browser, deadRow)).isEqualTo("no");
            shot("transfers-failures");
            // retry: the operator made the directory meanwhile, so the second claim succeeds
            GridFtpServer.openUp(root.resolve("no-such-dir"));
            wait.until(d -> { // found and clicked in one go (again if the row was swapped in between)
                d.findElement(failedRow).findElement(By.tagName("button")).click();
                return true;
            });
            new WebDriverWait(browser, Duration.ofSeconds(10)).until(d -> d.findElements(By.id("flash-message")).size() == 1);
            assertThat(ConsoleBrowser.liveText(browser, By.id("flash-message"))).isEqualTo("Transfer " + missing + " queued again.");
            wait.until(d -> transfers.job(missing).state().equals("done"));
            assertThat(transfers.job(missing).attempts()).isEqualTo(2);
            browser.get(url("/console/audit"));
            assertThat(ConsoleBrowser.liveText(browser, By.id("audit"))).contains("transfer.retry", "transfer " + missing);
        } finally {
            new ProcessBuilder("rm", "-rf", root.toString()).start().waitFor();
        }
    }

    @Test
    void anExperimentsOperatorSeesAndActsOnItsExperimentsRequestsOnly() throws Exception {
        accounts.put("olga", ApiRole.OPERATOR, List.of("cms"));
        ItCatalog atlasFiles = ItCatalog.load(importer, 2), cmsFiles = ItCatalog.load(importer, 2, "cms");
        String atlas = submit("atlas", atlasFiles.files);
        String cms = submit("cms", cmsFiles.files);
        // a rule on each experiment's dataset (a cron far away: nothing replicates during the test)
        String site = "SITE-" + atlasFiles.prefix.substring(4, 12);
        sites.put(site, java.util.Map.of(), List.of("ftp://127.0.0.1:1/x"));
        String atlasDataset = "ds-" + atlasFiles.prefix.substring(4, 12), cmsDataset = "ds-" + cmsFiles.prefix.substring(4, 12);
        for (String ds : List.of(atlasDataset, cmsDataset))
            rules.create(new dev.stagehand.replication.ReplicationRules.NewRule(ds, 1, site, null, null, "0 0 0 1 1 ? 2099", "console test"));

        logIn("olga", "olga-pw");
        // the site's pages are not hers: she starts at the requests, and the navigation shows only hers
        assertThat(browser.getCurrentUrl()).endsWith("/console/requests");
        assertThat(ConsoleBrowser.liveText(browser, By.tagName("nav"))).contains("Requests", "Datasets")
                .doesNotContain("Overview", "Transfers", "Volumes", "Archive", "Audit");
        assertThat(browser.findElements(By.cssSelector("tr[data-request='" + cms + "']"))).hasSize(1);
        assertThat(browser.findElements(By.cssSelector("tr[data-request='" + atlas + "']"))).isEmpty();
        browser.get(url("/console/transfers"));
        assertThat(ConsoleBrowser.liveText(browser, By.id("forbidden"))).contains("403");
        // another experiment's request is not found, like an unknown one
        browser.get(url("/console/requests/" + atlas));
        assertThat(ConsoleBrowser.liveText(browser, By.id("not-found"))).contains("404");
        // a cancel posted for it (her own request's form, pointed at the other id) is refused and audited
        browser.get(url("/console/requests/" + cms));
        ((JavascriptExecutor) browser).executeScript(
                "document.getElementById('cancel-request').form.action = '/console/requests/" + atlas + "/cancel';");
        ConsoleBrowser.liveClick(browser, By.id("cancel-request"));
        new WebDriverWait(browser, Duration.ofSeconds(10)).until(d -> d.findElements(By.id("flash-error")).size() == 1);
        assertThat(ConsoleBrowser.liveText(browser, By.id("flash-error"))).isEqualTo("No request " + atlas + ".");
        assertThat(audit.recent(50)).anySatisfy(e -> {
            assertThat(e.actor()).isEqualTo("olga");
            assertThat(e.target()).isEqualTo(atlas);
            assertThat(e.outcome()).isEqualTo("refused");
        });
        assertThat(requestState(atlas)).isNotEqualTo("cancelled");
        // her own request she cancels
        browser.get(url("/console/requests/" + cms));
        ConsoleBrowser.liveClick(browser, By.id("cancel-request"));
        new WebDriverWait(browser, Duration.ofSeconds(10)).until(d -> d.findElements(By.id("flash-message")).size() == 1);
        assertThat(ConsoleBrowser.liveText(browser, By.id("request-state"))).isEqualTo("cancelled");
        shot("experiment-operator");
        // the datasets page lists her experiment's rules only
        browser.get(url("/console/datasets"));
        assertThat(ConsoleBrowser.liveText(browser, By.id("rules"))).contains(cmsDataset).doesNotContain(atlasDataset);
    }

    @Autowired
    dev.stagehand.tape.TapeLibrary library;

    /** The simulated library's drive state, as the console shows it. */
    String driveState(String drive) {
        return library.drives().stream().filter(s -> s.drive().equals(drive)).findFirst().orElseThrow().state().name();
    }

    @Test
    void anAdminRecoversAFailedDriveFromTheVolumesPageAndTheRecallGoesOn() throws Exception {
        // drive01 is the one reading drive (drive02 writes): its next read breaks it, the cartridge stuck in it
        ((dev.stagehand.tape.SimulatedLibrary) library).faults().failDrive("drive01");
        ItCatalog files = ItCatalog.load(importer, 2);
        String id = submit(files.files);
        new WebDriverWait(browser, Duration.ofSeconds(60)).until(d -> driveState("drive01").equals("FAILED"));
        assertThat(requestState(id)).isIn("submitted", "active");

        logIn("admin", "browser-admin-pw");
        browser.get(url("/console/volumes"));
        By row = By.cssSelector("#drive-admin tr[data-drive='drive01']");
        assertThat(ConsoleBrowser.liveText(browser, row)).contains("failed");
        ConsoleBrowser.liveClick(browser, By.cssSelector("#drive-admin tr[data-drive='drive01'] button"));
        new WebDriverWait(browser, Duration.ofSeconds(10)).until(d -> d.findElements(By.id("flash-message")).size() == 1);
        assertThat(ConsoleBrowser.liveText(browser, By.id("flash-message"))).isEqualTo("Drive drive01 recovered.");
        shot("drive-recovered");
        // the scheduler follows the library at its next round: no restart
        new WebDriverWait(browser, Duration.ofSeconds(60)).until(d -> requestState(id).equals("done"));
        assertThat(audit.recent(50)).anySatisfy(e -> {
            assertThat(e.action()).isEqualTo("drive.recover");
            assertThat(e.target()).isEqualTo("drive01");
            assertThat(e.outcome()).isEqualTo("ok");
        });
    }

    @Autowired
    dev.stagehand.cache.DiskCache cache;

    /**
     * A cache directory taken out of service (its staged copies could not be forced to disk) stays so across restarts:
     * the overview shows it with why, and an admin puts it back with its button, after confirming (the action is
     * audited).
     */
    @Test
    void anAdminPutsACacheDirectoryBackInServiceFromTheOverview() throws Exception {
        var dir = cache.usage().getFirst();
        jdbc.update("UPDATE cache_directory SET out_of_service_since = now(), out_of_service_reason = ? WHERE id = ?",
                "taken out of service: 3 staged copies in a row could not be forced to disk (fsync); last: EIO", dir.id());
        try {
            By row = By.cssSelector("#cache tr[data-dir='" + dir.id() + "']");
            logIn("admin", "browser-admin-pw");
            browser.get(url("/console"));
            WebDriverWait wait = new WebDriverWait(browser, Duration.ofSeconds(10));
            wait.until(d -> ConsoleBrowser.liveText(d, row).contains("Out of service since"));
            assertThat(ConsoleBrowser.liveText(browser, row)).contains("could not be forced to disk (fsync); last: EIO");
            shot("cache-out-of-service");
            By button = By.cssSelector("#cache tr[data-dir='" + dir.id() + "'] form.in-service button");
            ConsoleBrowser.liveClick(browser, button);
            var asked = wait.until(org.openqa.selenium.support.ui.ExpectedConditions.alertIsPresent());
            assertThat(asked.getText()).contains("Put " + dir.path() + " back in service?");
            asked.dismiss();
            assertThat(cache.outOfService()).as("not confirmed: nothing changed").containsKey(dir.path());
            ConsoleBrowser.liveClick(browser, button);
            wait.until(org.openqa.selenium.support.ui.ExpectedConditions.alertIsPresent()).accept();
            wait.until(d -> d.findElements(By.id("flash-message")).size() == 1);
            assertThat(ConsoleBrowser.liveText(browser, By.id("flash-message")))
                    .isEqualTo("Cache directory " + dir.path() + " is in service.");
            assertThat(cache.outOfService()).isEmpty();
            wait.until(d -> !ConsoleBrowser.liveText(d, row).contains("Out of service"));
            assertThat(audit.recent(50)).anySatisfy(e -> {
                assertThat(e.action()).isEqualTo("cache.in-service");
                assertThat(e.target()).isEqualTo(dir.path().toString());
                assertThat(e.outcome()).isEqualTo("ok");
            });
        } finally {
            jdbc.update("UPDATE cache_directory SET out_of_service_since = NULL, out_of_service_reason = NULL WHERE id = ?", dir.id());
        }
    }

    String requestState(String id) {
        return jdbc.queryForObject("SELECT state FROM stage_request WHERE id = ?::uuid", String.class, id);
    }

    @Test
    void aViewerIsRefusedTheAdminPage() throws Exception {
        logIn("vera", "viewer-pw");
        assertThat(ConsoleBrowser.liveText(browser, By.cssSelector("header .who"))).contains("vera");
        browser.get(url("/console/audit"));
        assertThat(ConsoleBrowser.liveText(browser, By.id("forbidden"))).contains("403");
        shot("viewer-refused");
        // and the status is a real 403, with the session cookie HttpOnly and SameSite=Lax
        String cookie = browser.manage().getCookieNamed("JSESSIONID").getValue();
        HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(url("/console/audit")))
                .header("Cookie", "JSESSIONID=" + cookie).header("Accept", "text/html").GET().build(), HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).isEqualTo(403);
        var jsession = browser.manage().getCookieNamed("JSESSIONID");
        assertThat(jsession.isHttpOnly()).isTrue();
        assertThat(jsession.getSameSite()).isEqualTo("Lax");
    }
}
