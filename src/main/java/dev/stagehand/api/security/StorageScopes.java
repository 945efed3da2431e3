package dev.stagehand.api.security;

import dev.stagehand.catalog.FileNames;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeSet;

/**
 * The storage capabilities a WLCG token grants ({@code scope} claim, WLCG Common JWT Profile 1.0 §3.3):
 * {@code storage.read:/path}, {@code storage.stage:/path}, {@code storage.create:/path},
 * {@code storage.modify:/path}. A path is relative to the issuer's base path and covers everything beneath it.
 * As the profile says, {@code storage.stage} includes reading. A token without any storage scope is not
 * capability-limited: its caller has its account's rights ({@link #parse} answers null).
 */
public final class StorageScopes {

    public enum Op {
        READ, STAGE, CREATE, MODIFY;

        String scope() {
            return "storage." + name().toLowerCase(Locale.ROOT);
        }
    }

    private final Map<Op, List<String>> prefixes;

    private StorageScopes(Map<Op, List<String>> prefixes) {
        this.prefixes = prefixes;
    }

    /**
     * The storage scopes of a {@code scope} claim (space-separated), their paths under {@code basePath}; null when
     * the claim has none. A scope whose path is not absolute or has '.' or '..' segments grants nothing.
     */
    public static StorageScopes parse(String claim, String basePath) {
        if (claim == null || claim.isBlank()) return null;
        Map<Op, List<String>> out = new EnumMap<>(Op.class);
        boolean any = false;
        for (String s : claim.trim().split("\\s+")) {
            for (Op op : Op.values()) {
                String name = op.scope();
                if (!s.equals(name) && !s.startsWith(name + ":")) continue;
                any = true;
                String path = s.length() == name.length() ? "/" : s.substring(name.length() + 1);
                String full = join(basePath, path);
                if (full != null) out.computeIfAbsent(op, k -> new ArrayList<>()).add(full);
            }
        }
        return any ? new StorageScopes(out) : null;
    }

    /** Whether {@code op} is granted on {@code path} (reading also by {@code storage.stage}). */
    public boolean allows(Op op, String path) {
        if (covered(op, path)) return true;
        return op == Op.READ && covered(Op.STAGE, path);
    }

    /**
     * Whether {@code op} is granted on every path from {@code first} to {@code last} in {@link String} order: both
     * lie beneath one granted path, and any string sorted between two that start with that path and '/' starts
     * with them too. False does not mean refused: the paths between may still lie beneath several granted paths.
     */
    public boolean allowsAllBetween(Op op, String first, String last) {
        if (beneathOne(op, first, last)) return true;
        return op == Op.READ && beneathOne(Op.STAGE, first, last);
    }

    /** Whether {@code op} is granted anywhere (reading also by {@code storage.stage}). */
    public boolean grants(Op op) {
        return prefixes.containsKey(op) || (op == Op.READ && prefixes.containsKey(Op.STAGE));
    }

    /** The scopes as the token gave them, after the base path: {@code storage.stage:/cms/store}. */
    public List<String> list() {
        List<String> out = new ArrayList<>();
        prefixes.forEach((op, paths) -> paths.forEach(p -> out.add(op.scope() + ":" + p)));
        return out;
    }

    /** Why a path is refused for {@code op}, naming the paths that would do. */
    public String refusal(Op op) {
        TreeSet<String> granted = new TreeSet<>(prefixes.getOrDefault(op, List.of()));
        if (op == Op.READ) granted.addAll(prefixes.getOrDefault(Op.STAGE, List.of()));
        return "outside the token's " + op.scope() + " scopes " + (granted.isEmpty() ? "(it has none)" : granted);
    }

    private boolean covered(Op op, String path) {
        if (path == null) return false;
        for (String p : prefixes.getOrDefault(op, List.of())) {
            if (p.equals("/") || path.equals(p) || (path.startsWith(p) && path.charAt(p.length()) == '/')) return true;
        }
        return false;
    }

    private boolean beneathOne(Op op, String first, String last) {
        for (String p : prefixes.getOrDefault(op, List.of())) {
            String dir = p.equals("/") ? p : p + "/";
            if (first.startsWith(dir) && last.startsWith(dir)) return true;
        }
        return false;
    }

    /** base + path as one absolute path without a trailing slash; null when the path is not acceptable. */
    static String join(String basePath, String path) {
        if (path.isEmpty() || path.charAt(0) != '/') return null;
        String base = basePath == null || basePath.isBlank() || basePath.equals("/") ? "" : strip(basePath.trim());
        String full = base + (path.equals("/") ? "" : strip(path));
        if (full.isEmpty()) return "/";
        return FileNames.problem(full) == null ? full : null;
    }

    private static String strip(String p) {
        String s = p.replaceAll("/+", "/");
        return s.length() > 1 && s.endsWith("/") ? s.substring(0, s.length() - 1) : s;
    }
}
