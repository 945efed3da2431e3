package dev.stagehand.cache;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.zip.Adler32;

/** Adler32 as the catalog keeps it (eight lower-case hex digits), computed while the bytes stream past. */
public final class Checksums {

    private static final int BUFFER = 1 << 20;

    private Checksums() {}

    /** What a streamed copy wrote. */
    public record Copied(long bytes, String adler32) {}

    /** Copies {@code in} to {@code out} (neither is closed), computing Adler32 on the way. */
    public static Copied copyWithAdler32(InputStream in, OutputStream out) throws IOException {
        Adler32 sum = new Adler32();
        byte[] buf = new byte[BUFFER];
        long total = 0;
        for (int n; (n = in.read(buf)) >= 0; ) {
            sum.update(buf, 0, n);
            out.write(buf, 0, n);
            total += n;
        }
        return new Copied(total, hex(sum.getValue()));
    }

    /** Adler32 of a whole file. */
    public static String adler32Of(Path file) throws IOException {
        try (InputStream in = Files.newInputStream(file)) {
            return copyWithAdler32(in, OutputStream.nullOutputStream()).adler32();
        }
    }

    /** {@code java.util.zip.Adler32#getValue()} as eight lower-case hex digits. */
    public static String hex(long adler32) {
        if (adler32 < 0 || adler32 > 0xFFFF_FFFFL) throw new IllegalArgumentException("not an Adler32 value: " + adler32);
        return HexFormat.of().toHexDigits((int) adler32);
    }

    /**
     * Normalises an Adler32 given as hex (1 to 8 digits, either case, optional "0x") to the catalog's form.
     *
     * @throws IllegalArgumentException if it is not such a value
     */
    public static String normalise(String adler32) {
        return dev.stagehand.catalog.Adler32Text.normalise(adler32);
    }
}
