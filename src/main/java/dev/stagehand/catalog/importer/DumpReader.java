package dev.stagehand.catalog.importer;

import dev.stagehand.catalog.Adler32Text;
import dev.stagehand.catalog.CatalogImportRejected.RowError;
import dev.stagehand.catalog.FileNames;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * Reads an HSM dump (CSV with a header row, {@code #} comment lines), checks every row and writes the good
 * ones as PostgreSQL COPY text rows to a {@link CopySink}. Checks that need the whole dump (one size per
 * file, ...) are done afterwards in SQL by {@code CatalogImporter}.
 *
 * <p>Columns: file, volume, offset_bytes, size_bytes, experiment (required); dataset, adler32, fseq, library,
 * media_type (optional); arrival_s, request, priority (of the workload format) are ignored, as are unknown
 * columns (reported in the summary).
 */
public final class DumpReader {

    /** Where COPY text goes; one call per chunk. */
    public interface CopySink {
        void write(byte[] bytes, int length) throws IOException;
    }

    /** The outcome of reading: counts and the first errors. */
    public record Result(long rows, List<RowError> errors, long errorCount, List<String> ignoredColumns) {}

    static final List<String> REQUIRED = List.of("file", "volume", "offset_bytes", "size_bytes", "experiment");
    static final List<String> OPTIONAL = List.of("dataset", "adler32", "fseq", "library", "media_type");
    static final List<String> WORKLOAD_ONLY = List.of("arrival_s", "request", "priority");
    /** Order of the COPY columns: line, then REQUIRED, then OPTIONAL. */
    public static final String COPY_COLUMNS =
            "line, file, volume, offset_bytes, size_bytes, experiment, dataset, adler32, fseq, library, media_type";

    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9._+-]{1,64}");
    private static final Pattern LABEL = Pattern.compile("[A-Za-z0-9._+ -]{1,64}");

    private final int maxErrors;
    private final List<RowError> errors = new ArrayList<>();
    private long errorCount;

    public DumpReader(int maxErrors) {
        this.maxErrors = maxErrors;
    }

    public Result read(InputStream in, CopySink sink) throws IOException {
        var decoder = StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT);
        BufferedReader reader = new BufferedReader(new InputStreamReader(in, decoder), 1 << 16);
        int[] index = null; // column position of each of REQUIRED + OPTIONAL (-1 when absent)
        int width = 0;
        List<String> ignored = new ArrayList<>();
        long lineNo = 0, rows = 0;
        StringBuilder out = new StringBuilder(1 << 17);
        List<String> fields = new ArrayList<>(16);
        String line;
        while (true) {
            try {
                line = reader.readLine();
            } catch (CharacterCodingException e) {
                error(lineNo + 1, "not valid UTF-8");
                break;
            }
            if (line == null) break;
            lineNo++;
            if (line.isBlank() || line.startsWith("#")) continue;
            String splitError = split(line, fields);
            if (splitError != null) {
                error(lineNo, splitError);
                continue;
            }
            if (index == null) {
                width = fields.size();
                index = header(lineNo, fields, ignored);
                if (index == null) break; // no usable header: every later row would be meaningless
                continue;
            }
            rows++;
            if (fields.size() != width) {
                error(lineNo, "has " + fields.size() + " fields, the header has " + width);
                continue;
            }
            String reason = row(lineNo, fields, index, out);
            if (reason != null) {
                error(lineNo, reason);
                continue;
            }
            if (errorCount == 0 && out.length() > (1 << 16)) flush(out, sink);
        }
        if (index == null && errorCount == 0) error(0, "no header row (expected columns " + REQUIRED + ")");
        if (errorCount == 0) flush(out, sink);
        return new Result(rows, List.copyOf(errors), errorCount, List.copyOf(ignored));
    }

    private int[] header(long lineNo, List<String> names, List<String> ignored) {
        Map<String, Integer> pos = new HashMap<>();
        for (int i = 0; i < names.size(); i++) {
            String n = names.get(i).trim().toLowerCase(Locale.ROOT);
            if (pos.put(n, i) != null) {
                error(lineNo, "header names column '" + n + "' twice");
                return null;
            }
            if (!REQUIRED.contains(n) && !OPTIONAL.contains(n) && !WORKLOAD_ONLY.contains(n)) ignored.add(n);
        }
        List<String> missing = REQUIRED.stream().filter(c -> !pos.containsKey(c)).toList();
        if (!missing.isEmpty()) {
            error(lineNo, "header lacks column(s) " + missing + " (is the header row missing?)");
            return null;
        }
        int[] index = new int[REQUIRED.size() + OPTIONAL.size()];
        for (int i = 0; i < REQUIRED.size(); i++) index[i] = pos.get(REQUIRED.get(i));
        for (int i = 0; i < OPTIONAL.size(); i++) index[REQUIRED.size() + i] = pos.getOrDefault(OPTIONAL.get(i), -1);
        return index;
    }

    /** Checks one row; on success appends its COPY text line and returns null, else returns the reason. */
    private static String row(long lineNo, List<String> f, int[] ix, StringBuilder out) {
        String file = f.get(ix[0]);
        String pathProblem = pathProblem(file);
        if (pathProblem != null) return "file " + quote(file) + ": " + pathProblem;
        String volume = f.get(ix[1]).trim();
        if (!NAME.matcher(volume).matches()) return "volume " + quote(volume) + ": expected 1-64 of A-Z a-z 0-9 . _ + -";
        long offset = number(f.get(ix[2]));
        if (offset < 0) return "offset_bytes " + quote(f.get(ix[2])) + ": expected a non-negative integer";
        long size = number(f.get(ix[3]));
        if (size < 0) return "size_bytes " + quote(f.get(ix[3])) + ": expected a non-negative integer";
        String experiment = f.get(ix[4]).trim();
        if (!NAME.matcher(experiment).matches()) return "experiment " + quote(experiment) + ": expected 1-64 of A-Z a-z 0-9 . _ + -";
        String dataset = optional(f, ix[5]);
        if (dataset != null && (dataset.length() > 255 || hasControl(dataset)))
            return "dataset " + quote(dataset) + ": at most 255 characters, no control characters";
        String adler = optional(f, ix[6]);
        if (adler != null) {
            try {
                adler = Adler32Text.normalise(adler); // 1-8 digits, 0x: as the API takes it (a dump dropping a leading zero was refused whole)
            } catch (IllegalArgumentException e) {
                return "adler32 " + quote(adler) + ": expected 1-8 hex digits (optionally 0x)";
            }
        }
        String fseqText = optional(f, ix[7]);
        if (fseqText != null) {
            long fseq = number(fseqText);
            if (fseq < 0 || fseq > Integer.MAX_VALUE) return "fseq " + quote(fseqText) + ": expected a non-negative integer";
        }
        String library = optional(f, ix[8]);
        if (library != null && !LABEL.matcher(library).matches()) return "library " + quote(library) + ": expected 1-64 of A-Z a-z 0-9 . _ + - space";
        String media = optional(f, ix[9]);
        if (media != null && !LABEL.matcher(media).matches()) return "media_type " + quote(media) + ": expected 1-64 of A-Z a-z 0-9 . _ + - space";
        out.append(lineNo).append('\t');
        copyText(out, file).append('\t');
        out.append(volume).append('\t').append(offset).append('\t').append(size).append('\t').append(experiment).append('\t');
        copyText(out, dataset).append('\t');
        copyText(out, adler).append('\t');
        copyText(out, fseqText).append('\t');
        copyText(out, library).append('\t');
        copyText(out, media).append('\n');
        return null;
    }

    static String pathProblem(String path) {
        return FileNames.problem(path);
    }

    static boolean hasControl(String s) {
        return FileNames.hasControl(s);
    }

    private static String optional(List<String> f, int i) {
        if (i < 0) return null;
        String v = f.get(i).trim();
        return v.isEmpty() ? null : v;
    }

    /** A non-negative decimal integer, or -1. */
    private static long number(String s) {
        s = s.trim();
        if (s.isEmpty() || s.length() > 18) return -1;
        long v = 0;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < '0' || c > '9') return -1;
            v = v * 10 + (c - '0');
        }
        return v;
    }

    /** COPY text format: \N for NULL; backslash escaped (control characters were refused earlier). */
    private static StringBuilder copyText(StringBuilder out, String v) {
        if (v == null) return out.append("\\N");
        if (v.indexOf('\\') < 0) return out.append(v);
        return out.append(v.replace("\\", "\\\\"));
    }

    private static String quote(String s) {
        String shown = s.length() > 80 ? s.substring(0, 80) + "..." : s;
        StringBuilder b = new StringBuilder("'");
        for (char c : shown.toCharArray()) {
            if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('\'').toString();
    }

    /** Splits one CSV line (RFC 4180 quoting within the line); returns an error text or null. */
    static String split(String line, List<String> fields) {
        fields.clear();
        int n = line.length();
        int i = 0;
        StringBuilder cur = new StringBuilder();
        while (true) {
            cur.setLength(0);
            if (i < n && line.charAt(i) == '"') {
                i++;
                while (true) {
                    if (i >= n) return "unterminated quoted field";
                    char c = line.charAt(i++);
                    if (c == '"') {
                        if (i < n && line.charAt(i) == '"') {
                            cur.append('"');
                            i++;
                        } else break;
                    } else cur.append(c);
                }
                if (i < n && line.charAt(i) != ',') return "characters after a closing quote";
            } else {
                int end = line.indexOf(',', i);
                if (end < 0) end = n;
                String raw = line.substring(i, end);
                if (raw.indexOf('"') >= 0) return "quote inside an unquoted field";
                cur.append(raw);
                i = end;
            }
            fields.add(cur.toString());
            if (i >= n) return null;
            i++; // the comma
            if (i == n) {
                fields.add("");
                return null;
            }
        }
    }

    private void error(long line, String reason) {
        errorCount++;
        if (errors.size() < maxErrors) errors.add(new RowError(line, reason));
    }

    private static void flush(StringBuilder out, CopySink sink) throws IOException {
        if (out.isEmpty()) return;
        byte[] bytes = out.toString().getBytes(StandardCharsets.UTF_8);
        sink.write(bytes, bytes.length);
        out.setLength(0);
    }
}
