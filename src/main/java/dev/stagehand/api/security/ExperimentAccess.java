package dev.stagehand.api.security;

import dev.stagehand.api.requests.BadInput;
import dev.stagehand.catalog.FileExperiments;
import dev.stagehand.catalog.FileNames;
import dev.stagehand.platform.EntryError;
import dev.stagehand.recall.StageRequests;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.function.Supplier;
import org.springframework.http.HttpStatus;
import org.springframework.stereotype.Component;

/**
 * Per-experiment authorization. A request belongs to one experiment: the one named at submission, else the
 * one all its files belong to. A caller sees and acts on requests of its experiments only (admins: all);
 * other requests answer exactly as unknown ones (404), so ids cannot be probed. Files of experiments the
 * caller does not belong to are "not in the catalog" to it, in submissions and archiveinfo alike, so their
 * names cannot be probed either.
 */
@Component
public class ExperimentAccess {

    /** The answer a submission gives for a name the caller may not see, the same as for an unknown one. */
    public static final String NOT_IN_CATALOG = "not in the catalog";
    /** What archiveinfo answers for a path the caller may not see, the same as for an unknown one. */
    public static final String NO_SUCH_FILE = "no such file in the catalog";

    private final FileExperiments files;

    ExperimentAccess(FileExperiments files) {
        this.files = files;
    }

    /**
     * The experiment a new request of {@code user} naming {@code names} belongs to ({@code given}, or the one
     * its files share). Refused (400, naming each entry): an experiment that is not the caller's, files the
     * caller may not see or that are not in the catalog (reported alike), files of another experiment than the
     * one named, files of several experiments with none named — except for callers who see every experiment
     * (admins): their request then has no experiment, and only such callers see it. Call it on well-formed names only.
     */
    public String experimentFor(ApiUser user, String given, List<String> names) {
        // a token limited by storage scopes stages only beneath its storage.stage paths (it knows them: nothing is given away)
        withinScopes(user, StorageScopes.Op.STAGE, names, null);
        List<String> valid = wellFormed(names);
        Map<String, String> of = files.of(valid);
        List<EntryError> errors = new ArrayList<>();
        if (given != null && !user.sees(given)) {
            errors.add(EntryError.field("experiment", "'" + given + "' is not one of your experiments " + new TreeSet<>(user.experiments())));
        }
        Set<String> seen = new TreeSet<>();
        for (int i = 0; i < names.size(); i++) {
            String n = names.get(i);
            if (n == null) continue;
            String e = of.get(n);
            if (e == null || !user.sees(e)) {
                if (!user.allExperiments()) errors.add(EntryError.file(i, n, NOT_IN_CATALOG)); // else submit reports unknown ones
                continue;
            }
            if (given != null && !e.equals(given)) errors.add(EntryError.file(i, n, "belongs to experiment " + e + ", not " + given));
            seen.add(e);
        }
        if (given == null && seen.size() > 1 && !user.allExperiments()) {
            errors.add(EntryError.field("experiment", "the files belong to several experiments " + seen
                    + ": name one in experiment and submit the others in their own requests"));
        }
        if (!errors.isEmpty()) throw refused(errors);
        if (given != null) return given;
        return seen.size() == 1 ? seen.iterator().next() : null; // several: an admin's request of no experiment
    }

    /**
     * The well-formed names among {@code names} that a WLCG stage request of {@code user} cannot stage: not in
     * the catalog, or of an experiment the caller does not see (the two alike, so nothing is given away). A name
     * outside a token's storage.stage scopes is refused first (403), as by {@link #experimentFor}.
     */
    public Set<String> absent(ApiUser user, List<String> names) {
        withinScopes(user, StorageScopes.Op.STAGE, names, null);
        List<String> valid = wellFormed(names);
        Map<String, String> of = files.of(valid);
        Set<String> out = new java.util.HashSet<>();
        for (String n : valid) {
            String e = of.get(n);
            if (e == null || !user.sees(e)) out.add(n);
        }
        return out;
    }

    /** The names that are well-formed logical names (others are reported by the submission's own checks). */
    private static List<String> wellFormed(List<String> names) {
        List<String> valid = new ArrayList<>(names.size());
        for (String n : names) if (n != null && FileNames.problem(n) == null) valid.add(n);
        return valid;
    }

    /**
     * For a caller limited by storage scopes, a call on a request is allowed only when every file it touches is
     * within its {@code op} scopes: the files it names ({@code named}), else every file of the request
     * ({@code named} null: {@code all} supplies them, asked only for such a caller). Otherwise 403 naming the files
     * outside and the scope needed. A whole-request call (cancel-all, release-all, delete, priority, reading it) is
     * refused, not narrowed: as dCache's bulk service refuses a token narrower than the one the request came with.
     */
    public static void withinScopes(ApiUser user, StorageScopes.Op op, List<String> named, Supplier<List<String>> all) {
        StorageScopes scopes = user.scopes();
        if (scopes == null) return;
        List<String> names = named != null ? named : all.get();
        List<EntryError> outside = new ArrayList<>();
        for (int i = 0; i < names.size(); i++) {
            String n = names.get(i);
            if (n != null && FileNames.problem(n) == null && !scopes.allows(op, n)) outside.add(EntryError.file(i, n, scopes.refusal(op)));
        }
        if (outside.isEmpty()) return;
        List<String> shown = outside.stream().limit(5).map(EntryError::path).toList();
        throw new BadInput(HttpStatus.FORBIDDEN, outside.size() + " of the " + (named != null ? "named files" : "request's files")
                + " are " + scopes.refusal(op) + ": " + String.join(", ", shown)
                + (outside.size() > shown.size() ? " and " + (outside.size() - shown.size()) + " more" : ""), outside);
    }

    /**
     * {@link #withinScopes} for a call on request {@code id}, with {@code named} null for every file of it. Those
     * are checked by the request's smallest and largest path first ({@link StageRequests#pathRange}: a request row),
     * and read only when that does not settle it: a request beneath no one granted path, or from before V30.
     */
    public static void withinScopes(ApiUser user, StorageScopes.Op op, List<String> named, StageRequests requests, UUID id) {
        StorageScopes scopes = user.scopes();
        if (scopes == null) return;
        if (named == null && requests.pathRange(id).filter(r -> scopes.allowsAllBetween(op, r.first(), r.last())).isPresent()) return;
        withinScopes(user, op, named, () -> requests.paths(id));
    }

    /**
     * Of {@code paths}, those the caller may not read, each with the answer to give: beyond a token's storage
     * scopes, the scope it needs; another experiment's file, {@link #NO_SUCH_FILE}, as for an unknown one.
     */
    public Map<String, String> unreadable(ApiUser user, List<String> paths) {
        Map<String, String> out = new java.util.HashMap<>();
        StorageScopes scopes = user.scopes();
        List<String> valid = new ArrayList<>(paths.size());
        for (String p : paths) {
            if (p == null || FileNames.problem(p) != null) continue;
            if (scopes != null && !scopes.allows(StorageScopes.Op.READ, p)) out.put(p, scopes.refusal(StorageScopes.Op.READ));
            else valid.add(p);
        }
        if (user.allExperiments()) return out;
        files.of(valid).forEach((name, experiment) -> {
            if (!user.sees(experiment)) out.put(name, NO_SUCH_FILE);
        });
        return out;
    }

    /**
     * Why the caller may not read catalog file {@code name}, found by an id or name it gave: null when it may;
     * {@link #NO_SUCH_FILE} for another experiment's file, to be answered as an unknown one; beyond a token's
     * storage scopes, the scope it needs. The experiment goes first, so another experiment's id answers as unknown.
     */
    public String unreadableFile(ApiUser user, String name) {
        if (!user.allExperiments() && !user.sees(files.of(List.of(name)).get(name))) return NO_SUCH_FILE;
        StorageScopes scopes = user.scopes();
        return scopes == null || scopes.allows(StorageScopes.Op.READ, name) ? null : scopes.refusal(StorageScopes.Op.READ);
    }

    private static BadInput refused(List<EntryError> errors) {
        errors.sort((a, b) -> Integer.compare(a.index() == null ? -1 : a.index(), b.index() == null ? -1 : b.index()));
        long named = errors.stream().filter(e -> e.index() != null).count();
        String msg = named > 0 ? named + " of the named files cannot be staged" + (named < errors.size() ? ", and other fields are wrong" : "")
                : errors.getFirst().field() + ": " + errors.getFirst().reason();
        return new BadInput(HttpStatus.BAD_REQUEST, msg, errors);
    }
}
