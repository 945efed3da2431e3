package dev.stagehand.catalog;

import java.util.Locale;

/** An Adler32 as the catalog keeps it: eight lower-case hex digits. */
public final class Adler32Text {

    private Adler32Text() {}

    /**
     * Normalises an Adler32 given as hex (1 to 8 digits, either case, optional "0x": a leading zero is often
     * dropped by the tools that print it) to the catalog's form.
     *
     * @throws IllegalArgumentException if it is not such a value
     */
    public static String normalise(String adler32) {
        if (adler32 == null) throw new IllegalArgumentException("Adler32 missing");
        String s = adler32.strip().toLowerCase(Locale.ROOT);
        if (s.startsWith("0x")) s = s.substring(2);
        if (!s.matches("[0-9a-f]{1,8}")) throw new IllegalArgumentException("not an Adler32 (1-8 hex digits): '" + adler32 + "'");
        return "0".repeat(8 - s.length()) + s;
    }
}
