package dev.stagehand.recall.simulation;

import dev.stagehand.recall.scheduler.Copy;
import dev.stagehand.recall.scheduler.QueueModel.FileSpec;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.GZIPInputStream;

/**
 * A recall workload (format: shared/workloads/README.md), CSV or gzipped CSV. The same file name on
 * several volumes is one file with several copies; the same file in several requests is one file.
 */
public record Workload(List<Request> requests, Map<String, FileSpec> files) {

    /** One request: its files (ids into {@link #files}) arrive together. */
    public record Request(String id, double arrival, int priority, String experiment, List<FileSpec> files) {}

    static final List<String> COLUMNS = List.of("arrival_s", "request", "file", "volume", "offset_bytes",
            "size_bytes", "experiment", "priority", "dataset");

    public static Workload read(Path path) throws IOException {
        if (!Files.isRegularFile(path)) throw new IllegalArgumentException("workload " + path + " is not a file");
        try (InputStream raw = Files.newInputStream(path);
             InputStream in = path.toString().endsWith(".gz") ? new GZIPInputStream(raw, 1 << 16) : raw;
             BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8), 1 << 16)) {
            return parse(r, path.toString());
        }
    }

    static Workload parse(BufferedReader r, String source) throws IOException {
        int[] col = null;
        record Row(String file, String volume, long offset, long size, String experiment, String dataset) {}
        Map<String, List<Row>> fileRows = new LinkedHashMap<>();
        Map<String, double[]> reqMeta = new LinkedHashMap<>(); // arrival, priority
        Map<String, String> reqExperiment = new HashMap<>();
        Map<String, List<String>> reqFiles = new LinkedHashMap<>();
        String line;
        int n = 0;
        while ((line = r.readLine()) != null) {
            n++;
            if (line.isBlank() || line.startsWith("#")) continue;
            String[] p = line.split(",", -1);
            if (col == null) {
                col = new int[COLUMNS.size()];
                List<String> header = List.of(p);
                for (int i = 0; i < COLUMNS.size(); i++) {
                    col[i] = header.indexOf(COLUMNS.get(i));
                    if (col[i] < 0) throw new IllegalArgumentException(source + ":" + n + ": header lacks column " + COLUMNS.get(i));
                }
                continue;
            }
            try {
                double arrival = Double.parseDouble(p[col[0]]);
                String req = p[col[1]], file = p[col[2]], volume = p[col[3]];
                long offset = Long.parseLong(p[col[4]]), size = Long.parseLong(p[col[5]]);
                String exp = p[col[6]];
                int prio = Integer.parseInt(p[col[7]]);
                String ds = p[col[8]];
                if (req.isEmpty() || file.isEmpty() || volume.isEmpty()) throw new IllegalArgumentException("empty request, file or volume");
                if (offset < 0 || size < 0 || arrival < 0) throw new IllegalArgumentException("negative arrival, offset or size");
                List<Row> rows = fileRows.computeIfAbsent(file, k -> new ArrayList<>(1));
                boolean known = false;
                for (Row x : rows) {
                    if (x.volume.equals(volume)) {
                        if (x.offset != offset) throw new IllegalArgumentException(file + " has two offsets on " + volume);
                        known = true;
                    }
                }
                if (!known) rows.add(new Row(file, volume, offset, size, exp, ds));
                double[] meta = reqMeta.get(req);
                if (meta == null) {
                    reqMeta.put(req, new double[] {arrival, prio});
                    reqExperiment.put(req, exp);
                } else {
                    meta[0] = Math.min(meta[0], arrival);
                    meta[1] = Math.max(meta[1], prio);
                }
                reqFiles.computeIfAbsent(req, k -> new ArrayList<>()).add(file);
            } catch (RuntimeException e) {
                if (p.length < COLUMNS.size()) throw new IllegalArgumentException(source + ":" + n + ": expected " + COLUMNS.size() + " columns, got " + p.length);
                throw new IllegalArgumentException(source + ":" + n + ": " + e.getMessage(), e);
            }
        }
        if (col == null) throw new IllegalArgumentException(source + ": no header row");
        Map<String, FileSpec> files = new LinkedHashMap<>();
        long id = 1;
        for (var e : fileRows.entrySet()) {
            List<Copy> copies = new ArrayList<>();
            for (Row x : e.getValue()) copies.add(new Copy(x.volume, x.offset));
            Row first = e.getValue().get(0);
            files.put(e.getKey(), new FileSpec(id++, e.getKey(), first.size, copies, first.experiment, first.dataset, null));
        }
        List<Request> requests = new ArrayList<>();
        for (var e : reqFiles.entrySet()) {
            double[] meta = reqMeta.get(e.getKey());
            List<FileSpec> fs = new ArrayList<>(e.getValue().size());
            for (String f : e.getValue()) fs.add(files.get(f));
            requests.add(new Request(e.getKey(), meta[0], (int) meta[1], reqExperiment.get(e.getKey()), fs));
        }
        requests.sort((a, b) -> Double.compare(a.arrival(), b.arrival()));
        return new Workload(List.copyOf(requests), files);
    }
}
