package dev.stagehand.platform;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A private PostgreSQL cluster for the embedded defaults and the tests, made with the system's own
 * PostgreSQL binaries under a directory of the project ({@code var/pg} by default).
 *
 * <p>{@code initdb} and {@code postgres} refuse to run as root, so when this JVM is root the cluster is
 * created and run as an unprivileged account ({@code postgres} if the Debian package made it, else a
 * {@code stagehand} system account made here). The server listens on 127.0.0.1 only, on a free port,
 * with a generated password (kept in {@code password}, mode 600). A cluster left running by a killed
 * process is found again and reused; {@link #stop()} only stops a server this instance started.
 */
public final class LocalPostgres {

    private static final Logger log = LoggerFactory.getLogger(LocalPostgres.class);
    public static final String SUPERUSER = "stagehand";

    /** JDBC coordinates of a started cluster's database. */
    public record Connection(String url, String user, String password) {}

    private final Path base;
    private final Path data;
    private final Path run;
    private final Path binDir;
    private final String runAs; // null when this JVM is not root
    private boolean startedHere;
    private int lastPort; // a resumed server listens where clients last found it
    private int users; // start() calls not yet matched by stop(): several application contexts may share one cluster

    private static final java.util.Map<Path, LocalPostgres> INSTANCES = new java.util.concurrent.ConcurrentHashMap<>();

    private LocalPostgres(Path base, Path binDir, String runAs) {
        this.base = base;
        this.data = base.resolve("data");
        this.run = base.resolve("run");
        this.binDir = binDir;
        this.runAs = runAs;
    }

    /**
     * The cluster under {@code dir} (one instance per directory in this JVM, so application contexts that
     * share it stop it only when the last one closes); fails clearly if PostgreSQL is missing.
     */
    public static LocalPostgres at(Path dir) {
        return INSTANCES.computeIfAbsent(dir.toAbsolutePath().normalize(), LocalPostgres::prepare);
    }

    private static LocalPostgres prepare(Path dir) {
        Path bin = findBinDir();
        String runAs = isRoot() ? unprivilegedAccount() : null;
        Path base = dir.toAbsolutePath().normalize();
        if (runAs != null && !reachableBy(runAs, base)) {
            // A clone under /root (mode 700) cannot be entered by the server's account: keep the cluster
            // in a per-path directory under /var/tmp instead.
            Path alt = Path.of("/var/tmp", "stagehand-pg-" + Integer.toHexString(base.toString().hashCode()));
            log.info("{} is not reachable by account {}; using {}", base, runAs, alt);
            base = alt;
        }
        return new LocalPostgres(base, bin, runAs);
    }

    public Path directory() {
        return base;
    }

    /** Creates the cluster if needed, starts it unless already running, creates {@code database}. */
    public synchronized Connection start(String database) {
        try {
            Files.createDirectories(base);
            try (FileChannel ch = FileChannel.open(base.resolve(".lock"), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
                 FileLock ignored = ch.lock()) {
                if (runAs != null) run("chown", runAs, base.toString());
                String password = password();
                if (!Files.exists(data.resolve("PG_VERSION"))) initdb(password);
                int port = isRunning() ? runningPort() : startServer();
                lastPort = port;
                String url = "jdbc:postgresql://127.0.0.1:" + port + "/";
                createDatabase(url, password, database);
                users++;
                return new Connection(url + database, SUPERUSER, password);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot prepare the local PostgreSQL cluster under " + base, e);
        }
    }

    /** Stops the server once every {@link #start} has been matched by a stop, if this instance started it. */
    public synchronized void stop() {
        if (users > 0) users--;
        if (users > 0 || !startedHere) return;
        startedHere = false;
        log.info("stopping local PostgreSQL in {}", data);
        pg("pg_ctl", "-D", data.toString(), "-m", "fast", "-w", "stop");
    }

    /**
     * Stops the server now whatever its users (fast shutdown: open sessions are ended), as a database that
     * goes away mid-run; {@link #resume} starts it again on the same port. For fault-injection tests.
     */
    public synchronized void halt() {
        log.info("halting local PostgreSQL in {}", data);
        pg("pg_ctl", "-D", data.toString(), "-m", "fast", "-w", "stop");
    }

    /** Starts a {@link #halt halted} server again on the port it listened on. */
    public synchronized void resume() {
        try {
            startServer();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private String password() throws IOException {
        Path file = base.resolve("password");
        if (Files.exists(file)) return Files.readString(file).trim();
        byte[] bytes = new byte[18];
        new SecureRandom().nextBytes(bytes);
        String pw = HexFormat.of().formatHex(bytes);
        Files.writeString(file, pw);
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-------"));
        return pw;
    }

    private void initdb(String password) throws IOException {
        log.info("creating a local PostgreSQL cluster in {}", data);
        Path pwfile = base.resolve(".initdb-pw");
        Files.writeString(pwfile, password);
        try {
            if (runAs != null) run("chown", runAs, pwfile.toString());
            pg("initdb", "-D", data.toString(), "-U", SUPERUSER, "--pwfile=" + pwfile, "-E", "UTF8",
                    "--locale=C", "--auth-local=trust", "--auth-host=scram-sha-256");
        } finally {
            Files.deleteIfExists(pwfile);
        }
    }

    private boolean isRunning() {
        if (!Files.exists(data.resolve("postmaster.pid"))) return false;
        return exec(command("pg_ctl", "-D", data.toString(), "status"), false) == 0;
    }

    /** The port is line 4 of postmaster.pid. */
    private int runningPort() throws IOException {
        List<String> lines = Files.readAllLines(data.resolve("postmaster.pid"));
        return Integer.parseInt(lines.get(3).trim());
    }

    private int startServer() throws IOException {
        Files.createDirectories(run);
        if (runAs != null) run("chown", runAs, run.toString());
        int port = lastPort > 0 ? lastPort : freePort();
        lastPort = port;
        log.info("starting local PostgreSQL on 127.0.0.1:{} ({})", port, data);
        String opts = "-p " + port + " -k " + run + " -c listen_addresses=127.0.0.1 -c max_connections=500 "
                + "-c shared_buffers=256MB " + System.getenv().getOrDefault("STAGEHAND_PG_OPTS", "");
        pg("pg_ctl", "-D", data.toString(), "-l", base.resolve("postgres.log").toString(), "-w", "-t", "60",
                "-o", opts, "start");
        startedHere = true;
        return port;
    }

    private static void createDatabase(String serverUrl, String password, String database) {
        if (!database.matches("[a-z_][a-z0-9_]*")) throw new IllegalArgumentException("bad database name " + database);
        try (var c = DriverManager.getConnection(serverUrl + "postgres", SUPERUSER, password);
             var st = c.prepareStatement("SELECT 1 FROM pg_database WHERE datname = ?")) {
            st.setString(1, database);
            if (!st.executeQuery().next()) {
                try (var create = c.createStatement()) {
                    create.execute("CREATE DATABASE " + database);
                } catch (SQLException e) {
                    if (!"42P04".equals(e.getSQLState())) throw e; // created meanwhile by another JVM
                }
            }
        } catch (SQLException e) {
            throw new IllegalStateException("cannot create database " + database + " on the local cluster: " + e.getMessage(), e);
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    private void pg(String tool, String... args) {
        List<String> cmd = command(tool, args);
        if (exec(cmd, true) != 0) {
            throw new IllegalStateException("local PostgreSQL: '" + String.join(" ", cmd) + "' failed; see "
                    + base.resolve("postgres.log"));
        }
    }

    private List<String> command(String tool, String... args) {
        List<String> cmd = new ArrayList<>();
        if (runAs != null) cmd.addAll(List.of("runuser", "-u", runAs, "--"));
        cmd.add(binDir.resolve(tool).toString());
        cmd.addAll(Arrays.asList(args));
        return cmd;
    }

    private static void run(String... cmd) {
        if (exec(List.of(cmd), true) != 0) throw new IllegalStateException("'" + String.join(" ", cmd) + "' failed");
    }

    private static int exec(List<String> cmd, boolean logOutput) {
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(120, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IllegalStateException("timed out: " + String.join(" ", cmd));
            }
            if (p.exitValue() != 0 && logOutput) log.warn("{} exited {}: {}", cmd, p.exitValue(), out.strip());
            return p.exitValue();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot run " + cmd, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted running " + cmd, e);
        }
    }

    private static boolean isRoot() {
        return "root".equals(System.getProperty("user.name"));
    }

    private static boolean reachableBy(String account, Path dir) {
        Path probe = dir;
        while (probe != null && !Files.exists(probe)) probe = probe.getParent();
        return probe != null && exec(List.of("runuser", "-u", account, "--", "test", "-x", probe.toString()), false) == 0;
    }

    private static String unprivilegedAccount() {
        if (exec(List.of("id", "-u", "postgres"), false) == 0) return "postgres";
        if (exec(List.of("id", "-u", "stagehand"), false) != 0) {
            run("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "stagehand");
        }
        return "stagehand";
    }

    /** Newest /usr/lib/postgresql/N/bin, or the directory of an initdb on the PATH. */
    static Path findBinDir() {
        Path debian = Path.of("/usr/lib/postgresql");
        if (Files.isDirectory(debian)) {
            try (Stream<Path> versions = Files.list(debian)) {
                var best = versions.map(v -> v.resolve("bin"))
                        .filter(b -> Files.isExecutable(b.resolve("initdb")))
                        .max(Comparator.comparingInt(b -> parseIntOr(b.getParent().getFileName().toString())));
                if (best.isPresent()) return best.get();
            } catch (IOException ignored) {
                // fall through to PATH
            }
        }
        for (String dir : System.getenv().getOrDefault("PATH", "").split(":")) {
            if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, "initdb"))) return Path.of(dir);
        }
        throw new IllegalStateException("PostgreSQL server binaries (initdb, pg_ctl) not found. Install the Debian "
                + "package 'postgresql' (./stagehand does this when run as root), or point the service at an existing "
                + "database with STAGEHAND_DB_URL, STAGEHAND_DB_USER and STAGEHAND_DB_PASSWORD.");
    }

    private static int parseIntOr(String s) {
        try {
            return Integer.parseInt(s);
        } catch (NumberFormatException e) {
            return -1;
        }
    }
}
