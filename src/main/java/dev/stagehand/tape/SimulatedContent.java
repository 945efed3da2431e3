package dev.stagehand.tape;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SplittableRandom;
import java.util.zip.Adler32;

/**
 * The bytes of a file on a simulated volume, generated deterministically from its name, so that a
 * catalogue of hundreds of terabytes needs no disk and a file always reads back the same. A file's
 * content is a pseudo-random block seeded by its name, repeated; because of that repetition its Adler32
 * can be computed for any size without generating the bytes ({@link #adler32}), so catalogues for demos
 * and tests can carry the real checksums of what the library will deliver.
 */
public final class SimulatedContent {

    /** Length of the repeated block (odd, so it does not line up with buffer or page sizes). */
    static final int BLOCK = 262_147;
    private static final long MOD = 65_521;

    private SimulatedContent() {}

    /** The repeated block of {@code name}'s content. */
    static byte[] block(String name) {
        long h = 0xcbf29ce484222325L; // FNV-1a, then the PRNG spreads it
        for (byte b : name.getBytes(StandardCharsets.UTF_8)) {
            h ^= b & 0xff;
            h *= 0x100000001b3L;
        }
        byte[] block = new byte[BLOCK];
        new SplittableRandom(h).nextBytes(block);
        return block;
    }

    /** Adler32 of the first {@code size} bytes of {@code name}'s content, in O(log size). */
    public static long adler32(String name, long size) {
        if (size < 0) throw new IllegalArgumentException("negative size " + size);
        byte[] block = block(name);
        long full = size / BLOCK;
        int rest = (int) (size % BLOCK);
        long result = 1; // Adler32 of no bytes
        long pow = adler(block, BLOCK);
        long powLen = BLOCK;
        while (full > 0) { // square-and-multiply over concatenation
            if ((full & 1) != 0) result = combine(result, pow, powLen);
            pow = combine(pow, pow, powLen);
            powLen *= 2;
            full >>= 1;
        }
        return combine(result, adler(block, rest), rest);
    }

    /** Adler32 as the catalogue writes it: 8 lower-case hex digits. */
    public static String adler32Hex(String name, long size) {
        return hex(adler32(name, size));
    }

    public static String hex(long adler32) {
        return String.format("%08x", adler32);
    }

    /**
     * Adler32 of two byte strings back to back, from their Adler32s and the second one's length:
     * A = A1 + A2 - 1 and B = B1 + B2 + len2 * (A1 - 1), modulo 65521.
     */
    static long combine(long adler1, long adler2, long len2) {
        long a1 = adler1 & 0xffff, b1 = adler1 >>> 16;
        long a2 = adler2 & 0xffff, b2 = adler2 >>> 16;
        long a = Math.floorMod(a1 + a2 - 1, MOD);
        long b = Math.floorMod(b1 + b2 + Math.floorMod(len2, MOD) * Math.floorMod(a1 - 1, MOD), MOD);
        return (b << 16) | a;
    }

    private static long adler(byte[] b, int len) {
        Adler32 a = new Adler32();
        a.update(b, 0, len);
        return a.getValue();
    }

    /** Writes {@code name}'s first {@code size} bytes to {@code out}; returns their Adler32, computed while streaming. */
    public static long write(String name, long size, OutputStream out) throws IOException {
        byte[] block = block(name);
        Adler32 sum = new Adler32();
        long left = size;
        while (left > 0) {
            int n = (int) Math.min(left, BLOCK);
            out.write(block, 0, n);
            sum.update(block, 0, n);
            left -= n;
        }
        return sum.getValue();
    }

    /** Writes {@code name}'s content to the file {@code target} (replacing it); returns its Adler32. */
    public static long writeTo(String name, long size, Path target) throws IOException {
        try (OutputStream out = Files.newOutputStream(target)) {
            return write(name, size, out);
        }
    }
}
