package dev.stagehand.console;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import org.openqa.selenium.By;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.TakesScreenshot;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.WebDriverWait;

/** Headless Debian Chromium for the console's browser tests: start, log in, screenshots. */
final class ConsoleBrowser implements AutoCloseable {

    static final Path SHOTS = Path.of("target/screenshots");

    final WebDriver driver;

    private ConsoleBrowser(WebDriver driver) {
        this.driver = driver;
    }

    static ConsoleBrowser start() throws Exception {
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
        WebDriver driver = new ChromeDriver(service, options);
        driver.manage().timeouts().pageLoadTimeout(Duration.ofSeconds(30));
        return new ConsoleBrowser(driver);
    }

    /** Logs in through the form at {@code base}/console and lands on a console page. */
    void logIn(String base, String user, String password) throws Exception {
        driver.manage().deleteAllCookies();
        driver.get(base + "/console");
        assertThat(driver.getCurrentUrl()).endsWith("/console/login");
        driver.findElement(By.id("username")).sendKeys(user);
        driver.findElement(By.id("password")).sendKeys(password);
        shot("login");
        driver.findElement(By.id("login")).click();
        // back to the page asked for (Spring Security marks it with ?continue)
        new WebDriverWait(driver, Duration.ofSeconds(10)).until(d -> !d.findElements(By.id("live")).isEmpty());
        assertThat(driver.getCurrentUrl()).contains("/console").doesNotContain("/login");
    }

    /**
     * The text of the element {@code by} finds on a live page, found again if htmx swapped it (every 2 s) between
     * the find and the read: an element found just before a swap is stale.
     */
    static String liveText(WebDriver d, By by) {
        for (int attempt = 1; ; attempt++) {
            try {
                return d.findElement(by).getText();
            } catch (StaleElementReferenceException swapped) {
                if (attempt == 5) throw swapped;
            }
        }
    }

    /** Clicks the element {@code by} finds on a live page, found again if it was swapped before the click. */
    static void liveClick(WebDriver d, By by) {
        for (int attempt = 1; ; attempt++) {
            try {
                d.findElement(by).click();
                return;
            } catch (StaleElementReferenceException swapped) {
                if (attempt == 5) throw swapped;
            }
        }
    }

    void shot(String name) throws Exception {
        Path png = ((TakesScreenshot) driver).getScreenshotAs(OutputType.FILE).toPath();
        Files.copy(png, SHOTS.resolve(name + ".png"), StandardCopyOption.REPLACE_EXISTING);
    }

    @Override
    public void close() {
        driver.quit();
    }
}
