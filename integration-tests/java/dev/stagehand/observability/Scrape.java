package dev.stagehand.observability;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** A parsed Prometheus text exposition: samples by metric name and labels. */
record Scrape(String text, List<Sample> samples) {

    record Sample(String name, Map<String, String> labels, double value) {}

    private static final Pattern LINE = Pattern.compile("^([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{(.*)})?\\s+(\\S+)(\\s+\\S+)?$");
    private static final Pattern LABEL = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)=\"((?:[^\"\\\\]|\\\\.)*)\"");

    static Scrape parse(String text) {
        List<Sample> out = new ArrayList<>();
        for (String line : text.split("\n")) {
            if (line.isBlank() || line.startsWith("#")) continue;
            Matcher m = LINE.matcher(line.strip());
            if (!m.matches()) throw new IllegalArgumentException("not a sample line: " + line);
            Map<String, String> labels = new LinkedHashMap<>();
            if (m.group(3) != null) {
                Matcher l = LABEL.matcher(m.group(3));
                while (l.find()) labels.put(l.group(1), l.group(2).replace("\\\"", "\"").replace("\\\\", "\\"));
            }
            String v = m.group(4);
            double value = switch (v) {
                case "+Inf" -> Double.POSITIVE_INFINITY;
                case "-Inf" -> Double.NEGATIVE_INFINITY;
                default -> Double.parseDouble(v);
            };
            out.add(new Sample(m.group(1), labels, value));
        }
        return new Scrape(text, out);
    }

    /** Samples of {@code name} whose labels include all of {@code labels} (pairs: key, value, ...). */
    List<Sample> find(String name, String... labels) {
        List<Sample> out = new ArrayList<>();
        for (Sample s : samples) {
            if (!s.name().equals(name)) continue;
            boolean all = true;
            for (int i = 0; i < labels.length; i += 2) all &= labels[i + 1].equals(s.labels().get(labels[i]));
            if (all) out.add(s);
        }
        return out;
    }

    /** The sum of the matching samples (0 when none). */
    double sum(String name, String... labels) {
        return find(name, labels).stream().mapToDouble(Sample::value).sum();
    }

    boolean has(String name, String... labels) {
        return !find(name, labels).isEmpty();
    }
}
