package dev.stagehand.console;

import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.springframework.web.util.HtmlUtils;

/** Server-rendered SVG charts (no JavaScript chart library): throughput over the last hour, drive timeline. */
final class Svg {

    private static final DateTimeFormatter HM = DateTimeFormatter.ofPattern("HH:mm").withZone(ZoneId.systemDefault());
    private static final DateTimeFormatter HMS = DateTimeFormatter.ofPattern("HH:mm:ss").withZone(ZoneId.systemDefault());

    private Svg() {}

    /** Two lines, MB/s per minute: tape read and WAN out. */
    static String throughput(ConsoleViews.Throughput t) {
        int w = 1300, h = 220, left = 56, right = 12, top = 14, bottom = 28;
        double max = 1;
        for (int i = 0; i < t.tapeRead().size(); i++) max = Math.max(max, Math.max(t.tapeRead().get(i), t.wanOut().get(i)) / 60e6);
        max = niceCeil(max);
        StringBuilder s = new StringBuilder();
        s.append(String.format(Locale.ROOT, "<svg class=\"chart\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"throughput, last hour\" xmlns=\"http://www.w3.org/2000/svg\">", w, h));
        double pw = w - left - right, ph = h - top - bottom;
        for (int g = 0; g <= 4; g++) {
            double y = top + ph - ph * g / 4;
            s.append(String.format(Locale.ROOT, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" class=\"grid\"/>", left, w - right, y, y));
            s.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%.1f\" class=\"axis\" text-anchor=\"end\">%s</text>", left - 6, y + 4, fmt(max * g / 4)));
        }
        for (int m = 0; m <= 60; m += 10) {
            double x = left + pw * m / 60;
            s.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\" class=\"axis\" text-anchor=\"middle\">%s</text>", x, h - 8,
                    HM.format(t.from().plus(Duration.ofMinutes(m)))));
        }
        line(s, t.tapeRead(), "tape", left, top, pw, ph, max);
        line(s, t.wanOut(), "wan", left, top, pw, ph, max);
        s.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" class=\"axis\">MB/s</text>", left + 6, top + 12));
        s.append("</svg>");
        return s.toString();
    }

    private static void line(StringBuilder s, List<Long> bytesPerMinute, String cls, int left, int top, double pw, double ph, double max) {
        StringBuilder pts = new StringBuilder();
        int n = bytesPerMinute.size();
        for (int i = 0; i < n; i++) {
            double x = left + pw * (i + 0.5) / n;
            double y = top + ph - ph * Math.min(1, bytesPerMinute.get(i) / 60e6 / max);
            pts.append(String.format(Locale.ROOT, "%.1f,%.1f ", x, y));
        }
        s.append("<polyline class=\"").append(cls).append("\" points=\"").append(pts.toString().trim()).append("\"/>");
    }

    /** One lane per drive; a bar per mount labelled with its volume (mounting part lighter, failed red). */
    static String timeline(List<MountLog.Mount> mounts, List<String> drives, Instant from, Instant to) {
        Map<String, Integer> lanes = new LinkedHashMap<>();
        for (String d : drives) lanes.put(d, lanes.size());
        for (MountLog.Mount m : mounts) lanes.putIfAbsent(m.drive(), lanes.size());
        int lane = 30, left = 80, right = 12, top = 10, bottom = 28, w = 960;
        int h = top + bottom + lane * Math.max(1, lanes.size());
        double pw = w - left - right;
        double span = Math.max(1, Duration.between(from, to).toMillis());
        StringBuilder s = new StringBuilder();
        s.append(String.format(Locale.ROOT, "<svg class=\"timeline\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"drive timeline\" xmlns=\"http://www.w3.org/2000/svg\">", w, h));
        for (var e : lanes.entrySet()) {
            int y = top + e.getValue() * lane;
            s.append(String.format(Locale.ROOT, "<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" class=\"grid\"/>", left, w - right, y + lane, y + lane));
            s.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" class=\"lane\" text-anchor=\"end\">%s</text>", left - 8, y + 19, esc(e.getKey())));
        }
        for (int i = 0; i <= 6; i++) {
            double x = left + pw * i / 6;
            s.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" class=\"grid\"/>", x, x, top, h - bottom));
            s.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\" class=\"axis\" text-anchor=\"middle\">%s</text>", x, h - 8,
                    HMS.format(from.plusMillis((long) (span * i / 6)))));
        }
        for (MountLog.Mount m : mounts) {
            int y = top + lanes.get(m.drive()) * lane + 5;
            Instant start = max(m.requestedAt(), from);
            Instant ready = m.mountedAt() == null ? null : max(m.mountedAt(), from);
            Instant end = m.dismountedAt() == null ? to : min(m.dismountedAt(), to);
            double x0 = left + pw * Duration.between(from, start).toMillis() / span;
            double x2 = left + pw * Duration.between(from, end).toMillis() / span;
            double x1 = ready == null ? x2 : left + pw * Duration.between(from, ready).toMillis() / span;
            String title = esc(m.volume() + " on " + m.drive() + ": asked " + HMS.format(m.requestedAt())
                    + (m.mountedAt() == null ? "" : ", mounted " + HMS.format(m.mountedAt()))
                    + (m.dismountedAt() == null ? ", still mounted" : ", out " + HMS.format(m.dismountedAt()))
                    + ", " + m.segmentsRead() + " files read" + (m.failure() == null ? "" : ", FAILED " + m.failure()));
            String cls = m.failure() != null ? "mount failed" : "mount";
            s.append("<g class=\"").append(cls).append("\" data-volume=\"").append(esc(m.volume())).append("\"><title>").append(title).append("</title>");
            s.append(String.format(Locale.ROOT, "<rect class=\"loading\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"20\"/>", x0, y, Math.max(1, x1 - x0)));
            if (x2 > x1) s.append(String.format(Locale.ROOT, "<rect class=\"mounted\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"20\"/>", x1, y, Math.max(1, x2 - x1)));
            if (x2 - x0 > 44) s.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\" class=\"vol\">%s</text>", x0 + 4, y + 15, esc(m.volume())));
            s.append("</g>");
        }
        s.append("</svg>");
        return s.toString();
    }

    static String fmt(double mbps) {
        return mbps >= 100 ? String.format(Locale.ROOT, "%.0f", mbps) : String.format(Locale.ROOT, "%.1f", mbps);
    }

    private static double niceCeil(double v) {
        double p = Math.pow(10, Math.floor(Math.log10(v)));
        for (double m : new double[] {1, 2, 5, 10}) if (m * p >= v) return m * p;
        return 10 * p;
    }

    private static Instant max(Instant a, Instant b) { return a.isAfter(b) ? a : b; }

    private static Instant min(Instant a, Instant b) { return a.isBefore(b) ? a : b; }

    private static String esc(String s) {
        return HtmlUtils.htmlEscape(s == null ? "" : s);
    }

    static List<String> names(List<ConsoleViews.DriveRow> drives) {
        List<String> out = new ArrayList<>();
        for (ConsoleViews.DriveRow d : drives) out.add(d.name());
        return out;
    }
}
