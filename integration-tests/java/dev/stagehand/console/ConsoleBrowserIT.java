package dev.stagehand.console;

import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.ItCatalog;
import dev.stagehand.catalog.CatalogImporter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
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
 * cancel a request, a viewer refused the admin page. Screenshots go to target/screenshots/.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
        "stagehand.tape.clock=scaled", "stagehand.tape.scale=30", "stagehand.tape.drives=2",
        "stagehand.tape.persist-drives=false",
        "stagehand.recall.poll-interval=300ms", "stagehand.recall.staging-dir=target/console-it/stage",
        "stagehand.tape.sim.root=target/console-it/tape",
        "stagehand.console.admin-password=browser-admin-pw",
})
class ConsoleBrowserIT {

    static final Path SHOTS = Path.of("target/screenshots");
    static WebDriver browser;

    @LocalServerPort
    int port;
    @Autowired
    CatalogImporter importer;

    @DynamicPropertySource
    static void users(DynamicPropertyRegistry registry) {
        String hash = new BCryptPasswordEncoder(4).encode("viewer-pw");
        registry.add("stagehand.console.users[0].name", () -> "vera");
        registry.add("stagehand.console.users[0].password-hash", () -> hash);
        registry.add("stagehand.console.users[0].role", () -> "viewer");
    }

    @BeforeAll
    static void startBrowser() throws Exception {
        Files.createDirectories(SHOTS);
        Path profile = Files.createTempDirectory("stagehand-chromium-");
        ChromeOptions options = new ChromeOptions();
        options.setBinary("/usr/bin/chromium");
        options.addArguments("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
                "--window-size=1400,1000", "--user-data-dir=" + profile);
        // the driver path is given, so Selenium Manager is never asked to download anything
        ChromeDriverService service = new ChromeDriverService.Builder()
                .usingDriverExecutable(Path.of("/usr/bin/chromedriver").toFile()).usingAnyFreePort().build();
        browser = new ChromeDriver(service, options);
        browser.manage().timeouts().pageLoadTimeout(Duration.ofSeconds(30));
    }

    @AfterAll
    static void stopBrowser() {
        if (browser != null) browser.quit();
    }

    String url(String path) {
        return "http://localhost:" + port + path;
    }

    void logIn(String user, String password) throws Exception {
        browser.manage().deleteAllCookies();
        browser.get(url("/console"));
        assertThat(browser.getCurrentUrl()).endsWith("/console/login");
        browser.findElement(By.id("username")).sendKeys(user);
        browser.findElement(By.id("password")).sendKeys(password);
        shot("login");
        browser.findElement(By.id("login")).click();
        // back to the page asked for (Spring Security marks it with ?continue)
        new WebDriverWait(browser, Duration.ofSeconds(10)).until(d -> !d.findElements(By.id("live")).isEmpty());
        assertThat(browser.getCurrentUrl()).contains("/console").doesNotContain("/login");
    }

    void shot(String name) throws Exception {
        Path png = ((org.openqa.selenium.TakesScreenshot) browser).getScreenshotAs(OutputType.FILE).toPath();
        Files.copy(png, SHOTS.resolve(name + ".png"), StandardCopyOption.REPLACE_EXISTING);
    }

    String submit(List<String> files) throws Exception {
        StringBuilder body = new StringBuilder("{\"experiment\": \"atlas\", \"files\": [");
        for (int i = 0; i < files.size(); i++) body.append(i == 0 ? "" : ",").append('"').append(files.get(i)).append('"');
        body.append("]}");
        HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(url("/api/v1/requests")))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body.toString())).build(),
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
        var wait = new WebDriverWait(browser, Duration.ofSeconds(60)).pollingEvery(Duration.ofMillis(200));
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
        assertThat(browser.findElement(By.cssSelector("tr[data-request='" + id + "'] td.queued")).getText()).isEqualTo("0");
        shot("overview");

        // a second request, cancelled from its detail page
        String other = submit(catalog.files.subList(20, 40));
        browser.get(url("/console/requests/" + other));
        shot("request-detail");
        browser.findElement(By.id("cancel-request")).click();
        new WebDriverWait(browser, Duration.ofSeconds(10)).until(d -> d.findElements(By.id("flash-message")).size() == 1);
        assertThat(browser.findElement(By.id("request-state")).getText()).isEqualTo("cancelled");
        assertThat(browser.findElement(By.id("flash-message")).getText()).startsWith("Request cancelled");
        shot("request-cancelled");

        browser.get(url("/console/requests"));
        assertThat(browser.findElement(By.cssSelector("tr[data-request='" + other + "']")).getText()).contains("cancelled");
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
        assertThat(browser.findElement(By.id("audit")).getText()).contains("request.cancel", other, "admin");
        shot("audit");
    }

    @Test
    void aViewerIsRefusedTheAdminPage() throws Exception {
        logIn("vera", "viewer-pw");
        assertThat(browser.findElement(By.cssSelector("header .who")).getText()).contains("vera");
        browser.get(url("/console/audit"));
        assertThat(browser.findElement(By.id("forbidden")).getText()).contains("403");
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
