package dev.stagehand.api.security;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A grid-mapfile as GridFTP servers read it: one {@code "DN" account[,account2...]} per line (the DN in the
 * OpenSSL slash form, quoted when it has spaces; {@code \"} and {@code \\} escape inside quotes), {@code #}
 * comments. The first account of a line is the one used. The file is read again when it changes, so
 * edits apply without a restart; a malformed line is logged with its number and skipped.
 */
public final class GridMapfile {

    private static final Logger log = LoggerFactory.getLogger(GridMapfile.class);

    private final Path file;
    private volatile Snapshot snapshot = new Snapshot(null, -1, Map.of());

    private record Snapshot(FileTime modified, long size, Map<String, List<String>> map) {}

    public GridMapfile(Path file) {
        this.file = file;
    }

    public Path file() {
        return file;
    }

    /** The accounts a DN maps to, in file order; empty when the DN is not listed (or there is no file). */
    public List<String> accounts(String dn) {
        return current().map().getOrDefault(dn, List.of());
    }

    private Snapshot current() {
        Snapshot s = snapshot;
        FileTime modified;
        long size;
        try {
            modified = Files.getLastModifiedTime(file);
            size = Files.size(file);
        } catch (NoSuchFileException e) {
            if (s.size() != -2) log.warn("grid-mapfile {} does not exist: no certificate DN is mapped to an account", file);
            return snapshot = new Snapshot(null, -2, Map.of());
        } catch (IOException e) {
            log.warn("cannot read grid-mapfile {}: {}", file, e.toString());
            return s;
        }
        if (modified.equals(s.modified()) && size == s.size()) return s;
        synchronized (this) {
            try {
                Snapshot fresh = new Snapshot(modified, size, parse(Files.readAllLines(file), file.toString()));
                snapshot = fresh;
                log.info("grid-mapfile {}: {} DNs", file, fresh.map().size());
                return fresh;
            } catch (IOException e) {
                log.warn("cannot read grid-mapfile {}: {}", file, e.toString());
                return s;
            }
        }
    }

    /** Parses grid-mapfile lines; the first line naming a DN wins, as in Globus. */
    static Map<String, List<String>> parse(List<String> lines, String where) {
        Map<String, List<String>> map = new HashMap<>();
        for (int n = 0; n < lines.size(); n++) {
            String line = lines.get(n).strip();
            if (line.isEmpty() || line.startsWith("#")) continue;
            String dn;
            String rest;
            if (line.startsWith("\"")) {
                StringBuilder b = new StringBuilder();
                int i = 1;
                boolean closed = false;
                for (; i < line.length(); i++) {
                    char c = line.charAt(i);
                    if (c == '\\' && i + 1 < line.length()) {
                        b.append(line.charAt(++i));
                    } else if (c == '"') {
                        closed = true;
                        break;
                    } else {
                        b.append(c);
                    }
                }
                if (!closed) {
                    log.warn("{} line {}: unterminated quoted DN; line skipped", where, n + 1);
                    continue;
                }
                dn = b.toString();
                rest = line.substring(i + 1).strip();
            } else {
                int sp = line.indexOf(' ');
                int tab = line.indexOf('\t');
                int cut = sp < 0 ? tab : tab < 0 ? sp : Math.min(sp, tab);
                if (cut < 0) {
                    log.warn("{} line {}: a DN without an account; line skipped", where, n + 1);
                    continue;
                }
                dn = line.substring(0, cut);
                rest = line.substring(cut).strip();
            }
            List<String> accounts = new ArrayList<>();
            for (String a : rest.split(",")) {
                a = a.strip();
                if (!a.isEmpty()) accounts.add(a);
            }
            if (!dn.startsWith("/") || accounts.isEmpty()) {
                log.warn("{} line {}: expected \"/DN\" account[,account]; line skipped", where, n + 1);
                continue;
            }
            map.putIfAbsent(dn, List.copyOf(accounts));
        }
        return map;
    }
}
