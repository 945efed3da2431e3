package dev.stagehand.recall.scheduler;

/**
 * The tape timings the scheduler plans with (ordering, mount choice, ETAs). Production and simulation
 * adapt the tape module's model to this, so there is one copy of the timing logic.
 */
public interface CostModel {

    /** Seconds to position from the head at {@code fromOffset} to {@code toOffset} (0 when streaming on). */
    double locateSeconds(long fromOffset, long toOffset);

    /**
     * Seconds to get from the head at {@code fromOffset} to {@code toOffset} when the bytes between may
     * also be read through instead: the cheaper of a locate and streaming over the gap (forward only).
     */
    default double positionSeconds(long fromOffset, long toOffset) {
        double locate = locateSeconds(fromOffset, toOffset);
        return toOffset > fromOffset ? Math.min(locate, readSeconds(toOffset - fromOffset)) : locate;
    }

    /** Whether reading through the gap from {@code fromOffset} to {@code toOffset} beats a locate. */
    default boolean readThrough(long fromOffset, long toOffset) {
        return toOffset > fromOffset && readSeconds(toOffset - fromOffset) < locateSeconds(fromOffset, toOffset);
    }

    /** The wrap (track pass) holding {@code offset}; even wraps run forward from BOT, odd ones back. */
    int wrap(long offset);

    /** Longitudinal position of {@code offset} in [0, 1] from BOT. */
    double position(long offset);

    /** The shortest possible locate (its fixed part): every run after the first costs at least this. */
    double minLocateSeconds();

    /** Seconds to read {@code bytes} once positioned. */
    double readSeconds(long bytes);

    /** Drive time of a mount once an accessor is free: move in + load. */
    double mountSeconds();

    /** Drive time of a dismount after a mount that moved {@code bytesMoved}: rewind + unthread + move out. */
    double dismountSeconds(long bytesMoved);

    /** One cartridge move by one accessor. */
    double accessorMoveSeconds();
}
