package dev.stagehand.reliability;

import dev.stagehand.transfer.GridFtpServer;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * {@code java -jar target/stagehand.jar serve} as a separate process, started again after each kill under
 * the same instance name (so its claims and half-written cache files are its own to recover). Its output
 * goes to one log file per start under the rig's directory.
 */
final class ServiceProcess {

    static final Path JAR = FaultRig.TARGET.resolve("stagehand.jar");

    final String instance;
    private final Path dir;
    private final Map<String, String> props;
    private Process process;
    private int port;
    private int starts;
    private boolean expectAlive;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    ServiceProcess(String instance, Path dir, Map<String, String> props) {
        this.instance = instance;
        this.dir = dir;
        this.props = props;
    }

    /** The admin bearer token every service process of the suite is started with. */
    static final String TOKEN = "reliability-suite-admin-token";

    String base() {
        return "http://127.0.0.1:" + port;
    }

    /** Starts the process and waits until its API answers. */
    ServiceProcess start() throws Exception {
        if (!Files.exists(JAR)) throw new IllegalStateException(JAR + " is missing: failsafe runs after package");
        port = GridFtpServer.freePort();
        starts++;
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> cmd = new ArrayList<>(List.of(java, "-Xmx512m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
                "-jar", JAR.toString(), "serve", "--server.port=" + port, "--stagehand.security.admin-token=" + TOKEN));
        props.forEach((k, v) -> cmd.add("--" + k + "=" + v));
        Path log = dir.resolve("service-" + instance + "-" + starts + ".log");
        process = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) throw new IllegalStateException("service " + instance + " exited on start; see " + log);
            try {
                HttpResponse<Void> r = http.send(HttpRequest.newBuilder(URI.create(base() + "/api/v1/requests?limit=1"))
                        .header("Authorization", "Bearer " + TOKEN).timeout(Duration.ofSeconds(2)).GET().build(), HttpResponse.BodyHandlers.discarding());
                if (r.statusCode() == 200) {
                    expectAlive = true;
                    return this;
                }
            } catch (IOException notYet) {
                // still starting
            }
            Thread.sleep(200);
        }
        process.destroyForcibly();
        throw new IllegalStateException("service " + instance + " did not answer within 120 s; see " + log);
    }

    /** kill -9: the JVM gets no chance to clean up. */
    void kill() throws InterruptedException {
        expectAlive = false;
        if (process == null) return;
        process.destroyForcibly(); // SIGKILL on Linux
        process.waitFor(20, TimeUnit.SECONDS);
    }

    boolean alive() {
        return process != null && process.isAlive();
    }

    /** Fails when a process that should be running died by itself. */
    void checkAlive() {
        if (expectAlive && !alive()) {
            throw new IllegalStateException("service " + instance + " died by itself (exit " + process.exitValue() + "); see "
                    + dir.resolve("service-" + instance + "-" + starts + ".log"));
        }
    }

    int starts() {
        return starts;
    }

    /** The current log's lines containing {@code text}. */
    long logLines(String text) throws IOException {
        try (var lines = Files.lines(dir.resolve("service-" + instance + "-" + starts + ".log"))) {
            return lines.filter(l -> l.contains(text)).count();
        }
    }
}
