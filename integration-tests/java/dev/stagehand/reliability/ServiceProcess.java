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

    static final List<String> JVM_OPTIONS = List.of("-Xmx512m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC");
    static final Path AOT_DIR = FaultRig.TARGET.resolve("stagehand-aot");
    /** How the service jar is launched: set by the suite's first start (see {@link #launch}). */
    private static List<String> launch;

    /** Starts the process and waits until its API answers. */
    ServiceProcess start() throws Exception {
        if (!Files.exists(JAR)) throw new IllegalStateException(JAR + " is missing: failsafe runs after package");
        port = GridFtpServer.freePort();
        starts++;
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> serve = new ArrayList<>(List.of("serve", "--server.port=" + port, "--stagehand.security.admin-token=" + TOKEN));
        props.forEach((k, v) -> serve.add("--" + k + "=" + v));
        List<String> cmd = new ArrayList<>(List.of(java));
        cmd.addAll(JVM_OPTIONS);
        cmd.addAll(launch(java, serve, dir));
        cmd.addAll(serve);
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

    /**
     * The suite starts the service some twenty times, and on a loaded 2-core machine each start is 20-45 s of
     * class loading and linking: most of the suite's time, and kill -9 runs (eleven starts) near their time
     * limit. So the first start of a suite run prepares an ahead-of-time class cache (JEP 483/514): the jar
     * is extracted (classes on the class path, which the cache can hold, rather than in nested jars) and run
     * once up to its refreshed context with this service's settings, writing the cache; later starts load
     * from it (about 2.5 times less start-up CPU). If any of that fails, the packaged jar is run as before.
     */
    private static synchronized List<String> launch(String java, List<String> serve, Path dir) throws InterruptedException {
        if (launch != null) return launch;
        launch = List.of("-jar", JAR.toString());
        Path jar = AOT_DIR.resolve("stagehand.jar"), cache = AOT_DIR.resolve("stagehand.aot");
        try {
            FaultRig.deleteTree(AOT_DIR);
            if (run(List.of(java, "-Djarmode=tools", "-jar", JAR.toString(), "extract", "--destination", AOT_DIR.toString()),
                    dir, "aot-extract.log") != 0) {
                System.out.println("service jar not extracted (see aot-extract.log): the packaged jar is run");
                return launch;
            }
            List<String> training = new ArrayList<>(List.of(java));
            training.addAll(JVM_OPTIONS);
            training.addAll(List.of("-XX:AOTCacheOutput=" + cache, "-Dspring.context.exit=onRefresh", "-jar", jar.toString()));
            training.addAll(serve);
            int exit = run(training, dir, "aot-training.log"); // in the service's directory: the same configuration
            if (Files.isRegularFile(cache)) {
                launch = List.of("-XX:AOTCache=" + cache, "-jar", jar.toString());
            } else {
                System.out.println("no AOT cache written (exit " + exit + ", see aot-training.log): the packaged jar is run");
            }
        } catch (IOException e) {
            System.out.println("AOT cache not prepared (" + e + "): the packaged jar is run");
        }
        return launch;
    }

    /** Runs a command in {@code dir} to its end (at most 5 minutes), output to {@code log} there; its exit status. */
    private static int run(List<String> cmd, Path dir, String log) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true)
                .redirectOutput(dir.resolve(log).toFile()).start();
        if (!p.waitFor(5, TimeUnit.MINUTES)) {
            p.destroyForcibly().waitFor();
            return -1;
        }
        return p.exitValue();
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
