package dev.stagehand.transfer;

import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * A real Globus GridFTP server (Debian's globus-gridftp-server-progs) on 127.0.0.1 and a free port, for the
 * demo, the benchmarks and the tests: anonymous (sessions served as an unprivileged account) or GSI (with
 * the environment a test's CA fixture makes). An empty config file keeps it from reading
 * /etc/gridftp.conf (which would force port 2811). Stopped with its children on {@link #close}.
 */
public final class GridFtpServer implements AutoCloseable {

    public static final String ANONYMOUS_USER = "stagehand-ftp";

    private final Process process;
    public final int port;
    public final Path log;

    private GridFtpServer(Process process, int port, Path log) {
        this.process = process;
        this.port = port;
        this.log = log;
    }

    /**
     * The server binary: the system property {@code stagehand.gridftp.server} when set, else on PATH or where
     * Debian installs it (/usr/sbin is not on every user's PATH).
     */
    public static Optional<Path> binary() {
        String chosen = System.getProperty("stagehand.gridftp.server");
        if (chosen != null) return Optional.of(Path.of(chosen)).filter(Files::isExecutable);
        List<String> dirs = new ArrayList<>(List.of(System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)));
        dirs.addAll(List.of("/usr/sbin", "/usr/bin", "/usr/local/sbin"));
        return dirs.stream().filter(d -> !d.isBlank()).map(d -> Path.of(d, "globus-gridftp-server"))
                .filter(Files::isExecutable).findFirst();
    }

    public static boolean available() {
        return binary().isPresent();
    }

    public static GridFtpServer anonymous(Path workDir) throws Exception {
        return start(workDir, List.of("-aa", "-anonymous-user", anonymousUser()), Map.of());
    }

    /** An anonymous server on a given port (a destination restarted where its clients know it). */
    public static GridFtpServer anonymousOn(Path workDir, int port) throws Exception {
        return start(workDir, List.of("-aa", "-anonymous-user", anonymousUser()), Map.of(), port);
    }

    public static GridFtpServer gsi(Path workDir, Map<String, String> env) throws Exception {
        return start(workDir, List.of(), env);
    }

    private static GridFtpServer start(Path workDir, List<String> auth, Map<String, String> env) throws Exception {
        return start(workDir, auth, env, freePort());
    }

    private static GridFtpServer start(Path workDir, List<String> auth, Map<String, String> env, int port) throws Exception {
        Files.createDirectories(workDir);
        Path conf = workDir.resolve("empty.conf");
        if (!Files.exists(conf)) Files.createFile(conf);
        Path log = workDir.resolve("gridftp-" + port + ".log");
        String exe = binary().orElseThrow(() -> new IllegalStateException(
                "globus-gridftp-server not found (Debian package globus-gridftp-server-progs)")).toString();
        List<String> cmd = new ArrayList<>(List.of(exe, "-c", conf.toString(),
                "-control-interface", "127.0.0.1", "-data-interface", "127.0.0.1", "-p", String.valueOf(port),
                "-no-detach", "-l", log.toString(), "-Z", workDir.resolve("transfers-" + port + ".log").toString()));
        cmd.addAll(auth);
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(workDir.resolve("gridftp-" + port + ".out").toFile());
        pb.environment().putAll(env);
        Process p = pb.start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() < deadline) {
            if (!p.isAlive()) throw new IllegalStateException("globus-gridftp-server exited: "
                    + Files.readString(workDir.resolve("gridftp-" + port + ".out")));
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", port), 200);
                return new GridFtpServer(p, port, log);
            } catch (IOException notYet) {
                Thread.sleep(50);
            }
        }
        p.destroyForcibly();
        throw new IllegalStateException("globus-gridftp-server did not listen on " + port);
    }

    /** The unprivileged account anonymous sessions run as (created when missing and we are root). */
    public static synchronized String anonymousUser() throws Exception {
        String me = System.getProperty("user.name");
        if (!"root".equals(me)) return me;
        if (new ProcessBuilder("id", ANONYMOUS_USER).start().waitFor() != 0) {
            new ProcessBuilder("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", ANONYMOUS_USER)
                    .inheritIO().start().waitFor();
        }
        return ANONYMOUS_USER;
    }

    /**
     * Makes {@code dir} and its parents below the temp root usable by the anonymous account (sessions run as
     * another user); directories outside the temp root are left alone.
     */
    public static void openUp(Path dir) throws Exception {
        Files.createDirectories(dir);
        Path tmp = Path.of(System.getProperty("java.io.tmpdir")).toAbsolutePath().normalize();
        Path abs = dir.toAbsolutePath().normalize();
        for (Path d = abs; d != null && !d.equals(tmp) && d.getNameCount() > 0 && (d == abs || d.startsWith(tmp)); d = d.getParent()) {
            new ProcessBuilder("chmod", "a+rwx", d.toString()).start().waitFor();
        }
    }

    /** Writes every thread's stack (virtual ones too) to {@code file}: for diagnosing a hung test. */
    public static void dumpThreads(String file) throws Exception {
        new ProcessBuilder(System.getProperty("java.home") + "/bin/jcmd", String.valueOf(ProcessHandle.current().pid()),
                "Thread.dump_to_file", "-overwrite", "-format=text", file).inheritIO().start().waitFor();
    }

    public static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getByName("127.0.0.1"))) {
            return s.getLocalPort();
        }
    }

    /** The server's netlogger-style line per transfer (its {@code STREAMS=} says how many data streams it used). */
    public List<String> transfers() throws IOException {
        Path t = log.resolveSibling("transfers-" + port + ".log");
        return Files.exists(t) ? Files.readAllLines(t) : List.of();
    }

    public String url(Path dir) {
        return "ftp://127.0.0.1:" + port + dir.toAbsolutePath();
    }

    public long pid() {
        return process.pid();
    }

    /** The per-connection server processes. */
    public List<Long> children() {
        return process.descendants().map(ProcessHandle::pid).toList();
    }

    public static void signal(long pid, String signal) throws Exception {
        new ProcessBuilder("kill", "-" + signal, String.valueOf(pid)).start().waitFor();
    }

    /** Kills the server and its children at once (a crashed host). */
    public void kill() throws Exception {
        process.descendants().forEach(h -> {
            try {
                signal(h.pid(), "CONT");
            } catch (Exception ignored) {
                // best effort
            }
            h.destroyForcibly();
        });
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
    }

    @Override
    public void close() throws Exception {
        kill();
    }
}
