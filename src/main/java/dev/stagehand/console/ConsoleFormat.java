package dev.stagehand.console;

import java.time.Duration;
import java.util.Locale;
import org.springframework.stereotype.Component;

/** Number formats for the pages ({@code @consoleFormat} in templates). */
@Component("consoleFormat")
public class ConsoleFormat {

    public String bytes(long b) {
        if (b < 1000) return b + " B";
        String[] units = {"kB", "MB", "GB", "TB", "PB"};
        double v = b;
        int u = -1;
        while (v >= 1000 && u < units.length - 1) {
            v /= 1000;
            u++;
        }
        return String.format(Locale.ROOT, v >= 100 ? "%.0f %s" : "%.1f %s", v, units[u]);
    }

    /** A configured duration as written in the configuration (10s, 2m, 1h). */
    static String duration(Duration d) {
        long ms = d.toMillis();
        if (ms % 3_600_000 == 0 && ms > 0) return ms / 3_600_000 + "h";
        if (ms % 60_000 == 0 && ms > 0) return ms / 60_000 + "m";
        if (ms % 1000 == 0) return ms / 1000 + "s";
        return ms + "ms";
    }

    public String rate(double mbPerSecond) {
        return String.format(Locale.ROOT, mbPerSecond >= 100 ? "%.0f MB/s" : "%.1f MB/s", mbPerSecond);
    }

    public String age(Duration d) {
        if (d == null) return "—";
        long s = Math.max(0, d.toSeconds());
        if (s < 120) return s + " s";
        if (s < 7200) return (s / 60) + " min";
        return String.format(Locale.ROOT, "%.1f h", s / 3600.0);
    }
}
