package dev.stagehand.recall.scheduler;

import java.util.HashMap;
import java.util.Map;

/**
 * How much each volume is asked for lately: the requests that wanted it, each counting 1 when it arrived and
 * decaying exponentially with {@link #TAU_S}. Read popularity on tape is skewed (a few volumes get most
 * requests), so this says which idle mounted volume is likely to be asked for again soon and is worth keeping
 * in its drive, and which can go to make a drive ready. Pure bookkeeping on the engine's time line.
 */
public final class VolumeDemand {

    /** Decay time constant: demand older than about an hour hardly counts. */
    static final double TAU_S = 1800;
    /** A volume asked for by more than one recent request (a repeat is what keeping it mounted pays off for). */
    static final double POPULAR = 1.5;
    /** Below this a volume's entry is dropped (it counts as never asked for). */
    private static final double NEGLIGIBLE = 0.01;

    private final Map<String, double[]> byVolume = new HashMap<>();

    /** A request arrived at {@code t} wanting files on {@code volume} (count each request once per volume). */
    public void asked(String volume, double t) {
        double[] d = byVolume.get(volume);
        if (d == null) byVolume.put(volume, new double[] {1, t});
        else {
            d[0] = decayed(d, t) + 1;
            d[1] = Math.max(d[1], t);
        }
    }

    /** The decayed number of requests for {@code volume} at {@code now}; 0 if never asked for. */
    public double of(String volume, double now) {
        double[] d = byVolume.get(volume);
        return d == null ? 0 : decayed(d, now);
    }

    /** Asked for by more than one request lately. */
    public boolean popular(String volume, double now) {
        return of(volume, now) >= POPULAR;
    }

    /** Forgets volumes whose demand has decayed to nothing (keeps the map to the volumes in use). */
    public void prune(double now) {
        byVolume.values().removeIf(d -> decayed(d, now) < NEGLIGIBLE);
    }

    int size() { return byVolume.size(); }

    private static double decayed(double[] d, double t) {
        return d[0] * Math.exp(-Math.max(0, t - d[1]) / TAU_S);
    }
}
