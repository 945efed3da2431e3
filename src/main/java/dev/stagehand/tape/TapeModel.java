package dev.stagehand.tape;

import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * The timing model of one tape cartridge and drive (docs: tape-model.md), LTO-9 by default. The simulated
 * library runs on it, and the recall scheduler uses the same {@link #locateSeconds} to order a tape's
 * files and estimate how long a mount will take, so both share one copy of the logic. Bound from
 * {@code stagehand.tape.sim.model.*}; every default below is the reference model.
 *
 * @param capacityBytes          cartridge capacity C
 * @param wraps                  wraps W (even ones run forward from BOT, odd ones back)
 * @param wrapsPerBand           wraps in one band: band(w) = floor(w / wrapsPerBand)
 * @param accessorMoveSeconds    one accessor move slot to drive or drive to slot (r)
 * @param loadSeconds            load/thread once the cartridge is in the drive (L)
 * @param locateBaseSeconds      fixed cost of any locate
 * @param wrapChangeSeconds      added when the target is on another wrap
 * @param bandChangeSeconds      added when the target is in another band
 * @param directionChangeSeconds added when the target wrap runs the other way
 * @param backwardSeconds        added when the target is on the head's wrap but behind it
 * @param fullLengthSeconds      seconds per full tape length of longitudinal distance
 * @param bytesPerSecond         read/write rate B
 * @param rewindShortSeconds     rewind when the mount moved fewer than rewindShortBelowBytes
 * @param rewindShortBelowBytes  see above
 * @param rewindMediumSeconds    rewind when fewer than rewindMediumBelowBytes
 * @param rewindMediumBelowBytes see above
 * @param rewindLongSeconds      rewind otherwise
 * @param unthreadSeconds        unthread and eject after the rewind
 */
public record TapeModel(
        @DefaultValue("18000000000000") long capacityBytes,
        @DefaultValue("280") int wraps,
        @DefaultValue("70") int wrapsPerBand,
        @DefaultValue("6.7") double accessorMoveSeconds,
        @DefaultValue("17") double loadSeconds,
        @DefaultValue("4.3") double locateBaseSeconds,
        @DefaultValue("6.7") double wrapChangeSeconds,
        @DefaultValue("3.2") double bandChangeSeconds,
        @DefaultValue("5.2") double directionChangeSeconds,
        @DefaultValue("11.3") double backwardSeconds,
        @DefaultValue("60") double fullLengthSeconds,
        @DefaultValue("400000000") double bytesPerSecond,
        @DefaultValue("55") double rewindShortSeconds,
        @DefaultValue("5000000000") long rewindShortBelowBytes,
        @DefaultValue("110") double rewindMediumSeconds,
        @DefaultValue("50000000000") long rewindMediumBelowBytes,
        @DefaultValue("165") double rewindLongSeconds,
        @DefaultValue("30") double unthreadSeconds) {

    public TapeModel {
        if (capacityBytes <= 0 || wraps <= 0 || wrapsPerBand <= 0 || bytesPerSecond <= 0)
            throw new IllegalArgumentException("tape model: capacity, wraps, wraps per band and rate must be > 0");
        if (accessorMoveSeconds < 0 || loadSeconds < 0 || unthreadSeconds < 0)
            throw new IllegalArgumentException("tape model: times must be >= 0");
    }

    /** The reference LTO-9 model of tape-model.md. */
    public static TapeModel lto9() {
        return new TapeModel(18_000_000_000_000L, 280, 70, 6.7, 17, 4.3, 6.7, 3.2, 5.2, 11.3, 60, 400e6,
                55, 5_000_000_000L, 110, 50_000_000_000L, 165, 30);
    }

    /** This model with another cartridge capacity (small volumes fill quickly in tests and benches). */
    public TapeModel withCapacity(long bytes) {
        return new TapeModel(bytes, wraps, wrapsPerBand, accessorMoveSeconds, loadSeconds, locateBaseSeconds,
                wrapChangeSeconds, bandChangeSeconds, directionChangeSeconds, backwardSeconds, fullLengthSeconds,
                bytesPerSecond, rewindShortSeconds, rewindShortBelowBytes, rewindMediumSeconds, rewindMediumBelowBytes,
                rewindLongSeconds, unthreadSeconds);
    }

    /** Bytes on one wrap, Cw = C / W. */
    public double wrapCapacity() {
        return (double) capacityBytes / wraps;
    }

    /** The wrap holding byte {@code offset} (the end of a full tape counts as the last wrap). */
    public int wrap(long offset) {
        int w = (int) Math.floor(offset / wrapCapacity());
        return Math.min(Math.max(w, 0), wraps - 1);
    }

    public int band(int wrap) {
        return wrap / wrapsPerBand;
    }

    /** Longitudinal position of {@code offset} in [0, 1] from BOT (odd wraps run backwards). */
    public double position(long offset) {
        int w = wrap(offset);
        double f = (offset - w * wrapCapacity()) / wrapCapacity();
        f = Math.min(Math.max(f, 0), 1);
        return (w & 1) == 0 ? f : 1 - f;
    }

    /**
     * Seconds to position the head from byte {@code from} (where it is) to byte {@code to}: 0 when it is
     * already there (streaming on), else the fixed cost plus wrap, band, direction and backward penalties
     * plus a term linear in longitudinal distance.
     */
    public double locateSeconds(long from, long to) {
        if (from == to) return 0;
        int w1 = wrap(from), w2 = wrap(to);
        double s = locateBaseSeconds;
        if (w1 != w2) s += wrapChangeSeconds;
        if (band(w1) != band(w2)) s += bandChangeSeconds;
        if (((w1 ^ w2) & 1) != 0) s += directionChangeSeconds;
        if (w1 == w2 && to < from) s += backwardSeconds;
        return s + fullLengthSeconds * Math.abs(position(to) - position(from));
    }

    /** Seconds from a just-loaded tape (head at BOT) to {@code offset}. */
    public double locateFromBotSeconds(long offset) {
        return locateSeconds(0, offset);
    }

    /** Seconds to read or write {@code bytes}. */
    public double transferSeconds(long bytes) {
        return bytes / bytesPerSecond;
    }

    /** Drive time of a mount once an accessor is free: move in and load, r + L. */
    public double mountSeconds() {
        return accessorMoveSeconds + loadSeconds;
    }

    /** Rewind plus unthread, by the bytes the mount moved (the move out to the slot is not included). */
    public double unloadSeconds(long bytesMoved) {
        double rewind = bytesMoved < rewindShortBelowBytes ? rewindShortSeconds
                : bytesMoved < rewindMediumBelowBytes ? rewindMediumSeconds : rewindLongSeconds;
        return rewind + unthreadSeconds;
    }

    /** Drive time of a dismount once an accessor is free: unload then move out. */
    public double dismountSeconds(long bytesMoved) {
        return unloadSeconds(bytesMoved) + accessorMoveSeconds;
    }

    /** Seconds as whole nanoseconds, for clocks (rounded, so 6.7 + 17 + 1.0 s is exactly 24.7 s). */
    public static long nanos(double seconds) {
        return Math.round(seconds * 1e9);
    }
}
