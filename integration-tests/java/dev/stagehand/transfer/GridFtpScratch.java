package dev.stagehand.transfer;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A temporary directory for loopback GridFTP servers and what they write, opened up for the server's
 * account. {@link #close} stops the servers started here and deletes the directory with {@code rm -rf}
 * (files the servers wrote belong to their account, which Java's own delete may not remove).
 */
public final class GridFtpScratch implements AutoCloseable {

    public final Path root;
    private final List<GridFtpServer> servers = new ArrayList<>();

    private GridFtpScratch(Path root) {
        this.root = root;
    }

    public static GridFtpScratch create(String prefix) throws Exception {
        Path root = Files.createTempDirectory(prefix);
        GridFtpServer.openUp(root);
        return new GridFtpScratch(root);
    }

    /** An anonymous server whose work directory is {@code dir} under the root. */
    public GridFtpServer anonymous(String dir) throws Exception {
        return started(GridFtpServer.anonymous(root.resolve(dir)));
    }

    /** A GSI server whose work directory is {@code dir} under the root. */
    public GridFtpServer gsi(String dir, Map<String, String> env) throws Exception {
        return started(GridFtpServer.gsi(root.resolve(dir), env));
    }

    private GridFtpServer started(GridFtpServer s) {
        servers.add(s);
        return s;
    }

    @Override
    public void close() throws Exception {
        for (GridFtpServer s : servers) s.close();
        new ProcessBuilder("rm", "-rf", root.toString()).start().waitFor();
    }
}
