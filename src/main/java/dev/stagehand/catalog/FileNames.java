package dev.stagehand.catalog;

/** Rules for logical file names, shared by the catalog import and the request APIs. */
public final class FileNames {

    public static final int MAX_LENGTH = 4096;

    private FileNames() {}

    /**
     * Why {@code path} cannot be a logical file name, or null when it can: it must be absolute, at most
     * {@value #MAX_LENGTH} characters, valid Unicode without NUL or other control characters, without {@code .} or
     * {@code ..} segments, and not end with {@code /}.
     */
    public static String problem(String path) {
        if (path == null) return "missing file name";
        if (path.isEmpty()) return "empty file name";
        if (path.length() > MAX_LENGTH) return "longer than " + MAX_LENGTH + " characters";
        if (hasControl(path)) return path.indexOf('\0') >= 0 ? "contains a NUL character" : "contains a control character";
        // not valid Unicode: PostgreSQL would store '?' in its place, another name than the one given (a stage
        // request answered with a path the client never sent, an archive registration that failed with a 500)
        if (hasLoneSurrogate(path)) return "contains a lone surrogate (not valid Unicode; a non-UTF-8 name?)";
        if (path.charAt(0) != '/') return "not an absolute path (must start with /)";
        int start = 1;
        while (start <= path.length()) {
            int end = path.indexOf('/', start);
            if (end < 0) end = path.length();
            int len = end - start;
            if (len == 2 && path.charAt(start) == '.' && path.charAt(start + 1) == '.') return "contains a '..' segment";
            if (len == 1 && path.charAt(start) == '.') return "contains a '.' segment";
            start = end + 1;
        }
        if (path.endsWith("/")) return "ends with / (names a directory)";
        return null;
    }

    private static boolean hasLoneSurrogate(String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) i++;
            else if (Character.isSurrogate(c)) return true;
        }
        return false;
    }

    /** True when {@code s} holds a C0 or C1 control character (NUL included) or DEL. */
    public static boolean hasControl(String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) return true;
        }
        return false;
    }
}
