package dev.stagehand.api.security;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The Globus {@code <hash>.signing_policy} files of a CA directory: which subject names each CA may sign
 * ({@code access_id_CA X509 '<CA DN>'}, {@code pos_rights globus CA:sign},
 * {@code cond_subjects globus '"<pattern>" ...'}; {@code *} matches any characters). An IGTF CA accredited
 * for {@code /DC=org/DC=example/*} cannot vouch for anyone else's names even though it is trusted.
 */
final class SigningPolicies {

    private static final Pattern QUOTED = Pattern.compile("'([^']*)'");
    private static final Pattern SUBJECT = Pattern.compile("\"([^\"]*)\"");

    /** CA DN (OpenSSL slash form, lower case) → the subject patterns it may sign. */
    private final Map<String, List<Pattern>> namespaces;

    private SigningPolicies(Map<String, List<Pattern>> namespaces) {
        this.namespaces = namespaces;
    }

    static SigningPolicies none() {
        return new SigningPolicies(Map.of());
    }

    int size() {
        return namespaces.size();
    }

    /** Reads the policies of {@code files}; a file that cannot be parsed is reported to {@code problems}. */
    static SigningPolicies read(List<Path> files, java.util.function.BiConsumer<Path, String> problems) {
        Map<String, List<Pattern>> out = new HashMap<>();
        for (Path f : files) {
            try {
                parse(Files.readAllLines(f), out);
            } catch (IOException | IllegalArgumentException e) {
                problems.accept(f, e.getMessage());
            }
        }
        return new SigningPolicies(Map.copyOf(out));
    }

    private static void parse(List<String> lines, Map<String, List<Pattern>> into) {
        String ca = null;
        boolean maySign = false;
        for (String raw : lines) {
            String line = raw.strip();
            if (line.isEmpty() || line.startsWith("#")) continue;
            String[] words = line.split("\\s+", 3);
            if (words.length < 3) throw new IllegalArgumentException("cannot read the line: " + line);
            switch (words[0]) {
                case "access_id_CA" -> {
                    ca = quoted(words[2], line).toLowerCase(Locale.ROOT);
                    maySign = false;
                }
                case "pos_rights" -> maySign = ca != null && words[2].contains("CA:sign");
                case "cond_subjects" -> {
                    if (ca == null || !maySign) throw new IllegalArgumentException("cond_subjects without a CA allowed to sign: " + line);
                    Matcher m = SUBJECT.matcher(quoted(words[2], line));
                    List<Pattern> patterns = into.computeIfAbsent(ca, k -> new ArrayList<>());
                    while (m.find()) patterns.add(glob(m.group(1)));
                }
                default -> { /* neg_rights and the like: nothing a CA may sign is added by them */ }
            }
        }
    }

    private static String quoted(String text, String line) {
        Matcher m = QUOTED.matcher(text);
        if (!m.find()) throw new IllegalArgumentException("expected a quoted value: " + line);
        return m.group(1);
    }

    private static Pattern glob(String pattern) {
        StringBuilder re = new StringBuilder();
        for (String part : pattern.split("\\*", -1)) {
            if (!re.isEmpty()) re.append(".*");
            re.append(Pattern.quote(part));
        }
        return Pattern.compile(re.toString(), Pattern.CASE_INSENSITIVE);
    }

    /** Whether {@code ca} has a policy at all. */
    boolean covers(String ca) {
        return namespaces.containsKey(ca.toLowerCase(Locale.ROOT));
    }

    /** Whether {@code ca}'s policy lets it sign {@code subject} (false when it has no policy). */
    boolean permits(String ca, String subject) {
        List<Pattern> patterns = namespaces.get(ca.toLowerCase(Locale.ROOT));
        return patterns != null && patterns.stream().anyMatch(p -> p.matcher(subject).matches());
    }
}
