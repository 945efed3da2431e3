package dev.stagehand.transfer;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A real Debian globus-gridftp-server on 127.0.0.1 for tests and benchmarks: anonymous (served as an
 * unprivileged account) or GSI (with the environment of a {@code GsiFixture}). Stopped with its children.
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

    public static GridFtpServer anonymous(Path workDir) throws Exception {
        return start(workDir, List.of("-aa", "-anonymous-user", anonymousUser()), Map.of());
    }

    public static GridFtpServer gsi(Path workDir, Map<String, String> env) throws Exception {
        return start(workDir, List.of(), env);
    }

    private static GridFtpServer start(Path workDir, List<String> auth, Map<String, String> env) throws Exception {
        Files.createDirectories(workDir);
        Path conf = workDir.resolve("empty.conf");
        if (!Files.exists(conf)) Files.createFile(conf);
        int port = freePort();
        Path log = workDir.resolve("gridftp-" + port + ".log");
        List<String> cmd = new ArrayList<>(List.of("globus-gridftp-server", "-c", conf.toString(),
                "-control-interface", "127.0.0.1", "-data-interface", "127.0.0.1", "-p", String.valueOf(port),
                "-no-detach", "-l", log.toString()));
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

    /** Makes {@code dir} (and its parents up to the temp root) usable by the anonymous account. */
    public static void openUp(Path dir) throws Exception {
        Files.createDirectories(dir);
        for (Path d = dir; d != null && !d.toString().equals("/tmp") && !d.toString().equals("/"); d = d.getParent()) {
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
