package dev.stagehand.api.tape;

import dev.stagehand.api.requests.BadInput;
import dev.stagehand.api.requests.JsonBodies;
import dev.stagehand.api.requests.RequestIds;
import dev.stagehand.api.security.ApiUser;
import dev.stagehand.api.security.ExperimentAccess;
import dev.stagehand.api.security.StorageScopes;
import dev.stagehand.recall.FileLocality;
import dev.stagehand.platform.EntryError;
import dev.stagehand.recall.StageRequestRejected;
import dev.stagehand.recall.StageRequests;
import dev.stagehand.recall.StageRequests.NewStageRequest;
import dev.stagehand.recall.StageRequests.RequestFile;
import dev.stagehand.recall.StageRequests.StageRequestDetail;
import io.swagger.v3.oas.annotations.Operation;
import io.swagger.v3.oas.annotations.media.Content;
import io.swagger.v3.oas.annotations.media.Schema;
import io.swagger.v3.oas.annotations.tags.Tag;
import jakarta.servlet.http.HttpServletRequest;
import java.io.IOException;
import java.net.URI;
import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.DeleteMapping;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.servlet.support.ServletUriComponentsBuilder;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The WLCG Tape REST API v1 (what FTS3, Rucio and gfal2 call), on the same stage requests, pins and states
 * as the native API: a stage request is a native request whose disk lifetime is the longest asked for;
 * release unpins; DELETE cancels what is open, unpins and forgets the request. Times are epoch seconds,
 * as dCache serves them. Input is checked by the native API's rules; errors are RFC 9457 problem documents.
 */
@RestController
@Tag(name = "WLCG Tape REST API", description = "v1: stage, cancel, release, archiveinfo (FTS3, Rucio, gfal2)")
class TapeRestController {

    private static final Set<String> FILE_FIELDS = Set.of("path", "diskLifetime", "targetedMetadata");

    /**
     * The id gfal2 releases with when it has no stage request id (FTS3 evicting a source after its copy): the
     * listed files are released in every request of the caller's account holding them, as EOS unpins the paths
     * whatever the id. It was a 404, and the files stayed pinned for their whole disk lifetime.
     */
    static final String GFAL2_PLACEHOLDER_ID = "gfal2-placeholder-id";

    /** The error of a cancelled file in a poll's answer (it has no error of its own). */
    static final String CANCELLED_FILE = "staging cancelled";

    private final StageRequests requests;
    private final FileLocality locality;
    private final dev.stagehand.archive.ArchiveBuffer archive;
    private final TapeRestProperties props;
    private final ExperimentAccess access;

    TapeRestController(StageRequests requests, FileLocality locality, TapeRestProperties props, ExperimentAccess access,
                       dev.stagehand.archive.ArchiveBuffer archive) {
        this.archive = archive;
        this.requests = requests;
        this.access = access;
        this.locality = locality;
        this.props = props;
    }

    // ---- bodies, as documented in the OpenAPI document ----

    record StageFile(@Schema(description = "logical file name", requiredMode = Schema.RequiredMode.REQUIRED) String path,
                     @Schema(description = "ISO-8601 duration the file stays pinned once on disk, e.g. P1D") String diskLifetime,
                     @Schema(description = "metadata per endpoint: {\"<sitename>\": {...}}; the object under this site's name (discovery's sitename) goes to the tape system with the file's read, other endpoints' entries are ignored") Map<String, Object> targetedMetadata) {}

    record StageBody(List<StageFile> files) {}

    record PathsBody(@Schema(requiredMode = Schema.RequiredMode.REQUIRED) List<String> paths) {}

    record Created(String requestId) {}

    record Endpoint(String uri, String version, Map<String, Object> metadata) {}

    record Discovery(String sitename, String description, List<Endpoint> endpoints) {}

    // ---- endpoints ----

    @GetMapping(path = "/.well-known/wlcg-tape-rest-api", produces = MediaType.APPLICATION_JSON_VALUE)
    @Operation(summary = "WLCG Tape REST API discovery")
    Discovery discovery() {
        return new Discovery(props.sitename(), "Stagehand tape staging service",
                List.of(new Endpoint(endpoint(), "v1", Map.of())));
    }

    /** The API's base URI as discovery announces it: the configured one (behind a proxy), else from the request. */
    private String endpoint() {
        return props.endpointUri().isBlank()
                ? ServletUriComponentsBuilder.fromCurrentContextPath().path("/api/v1").build().toUriString()
                : props.endpointUri();
    }

    @PostMapping(path = "/api/v1/stage", consumes = MediaType.ALL_VALUE, produces = MediaType.APPLICATION_JSON_VALUE)
    @Operation(summary = "Stage files (WLCG)", description = "201 with Location and requestId; 429 with Retry-After when "
            + "the service holds as much open stage work as it admits; 413 when the request names more files than "
            + "the limits on open files admit at all.",
            requestBody = @io.swagger.v3.oas.annotations.parameters.RequestBody(required = true,
                    content = @Content(mediaType = "application/json", schema = @Schema(implementation = StageBody.class))))
    ResponseEntity<Created> stage(HttpServletRequest http) throws IOException {
        ApiUser user = ApiUser.current();
        String who = user.account();
        JsonNode body = JsonBodies.parse(JsonBodies.read(http));
        List<EntryError> errors = new ArrayList<>();
        JsonBodies.unknownFields(body, Set.of("files"), errors);
        JsonNode files = body.get("files");
        List<String> paths = new ArrayList<>();
        List<String> metadata = new ArrayList<>(); // per file: the targetedMetadata object addressed to this site
        boolean anyMetadata = false;
        Long lifetime = null;
        if (files == null || !files.isArray()) {
            errors.add(EntryError.field("files", files == null ? "required: a list of {path, diskLifetime, targetedMetadata}"
                    : "expected a list, got " + JsonBodies.kind(files)));
        } else {
            if (files.size() > StageRequests.MAX_FILES) {
                throw new BadInput(HttpStatus.CONTENT_TOO_LARGE, "a request may name at most " + StageRequests.MAX_FILES
                        + " files, this one names " + files.size(),
                        List.of(EntryError.field("files", files.size() + " files; at most " + StageRequests.MAX_FILES)));
            }
            // more files than a limit on open files admits could never be admitted: a 429 would be retried for ever
            tooLargeForTheLimits(files.size());
            Iterator<JsonNode> it = files.iterator();
            for (int i = 0; it.hasNext(); i++) {
                JsonNode f = it.next();
                if (!f.isObject()) {
                    errors.add(new EntryError(i, null, "files", "expected an object {path, diskLifetime, targetedMetadata}, got " + JsonBodies.kind(f)));
                    paths.add(null);
                    metadata.add(null);
                    continue;
                }
                for (var e : f.properties()) {
                    if (!FILE_FIELDS.contains(e.getKey())) errors.add(new EntryError(i, null, e.getKey(), "unknown field; known fields are " + FILE_FIELDS));
                }
                JsonNode p = f.get("path");
                String path = p != null && p.isString() ? p.stringValue() : null;
                if (p == null || p.isNull()) errors.add(new EntryError(i, null, "path", "required: the file's logical name"));
                else if (!p.isString()) errors.add(new EntryError(i, null, "path", "expected a string, got " + JsonBodies.kind(p)));
                paths.add(path);
                metadata.add(null);
                JsonNode life = f.get("diskLifetime");
                if (life != null && !life.isNull()) {
                    Long s = lifetimeSeconds(life);
                    if (s == null) {
                        errors.add(new EntryError(i, path, "diskLifetime", "expected an ISO-8601 duration such as P1D or PT6H, got " + life));
                    } else if (lifetime == null || s > lifetime) {
                        lifetime = s; // one lifetime per request: the longest asked for
                    }
                }
                JsonNode meta = f.get("targetedMetadata");
                if (meta == null || meta.isNull()) continue;
                if (!meta.isObject()) {
                    errors.add(new EntryError(i, path, "targetedMetadata", "expected an object, got " + JsonBodies.kind(meta)));
                    continue;
                }
                // keys name the endpoints the metadata is for; what is addressed to another site is not ours to keep
                JsonNode ours = meta.get(props.sitename());
                if (ours == null || ours.isNull()) continue;
                if (!ours.isObject()) {
                    errors.add(new EntryError(i, path, "targetedMetadata", "the entry for this site (" + props.sitename()
                            + ") must be an object, got " + JsonBodies.kind(ours)));
                    continue;
                }
                if (hasNul(ours)) { // PostgreSQL's jsonb cannot hold a NUL: the insert failed, a 500
                    errors.add(new EntryError(i, path, "targetedMetadata", "the entry for this site must not hold the character \\u0000"));
                    continue;
                }
                metadata.set(i, JsonMapper.shared().writeValueAsString(ours));
                anyMetadata = true;
            }
        }
        NewStageRequest req = new NewStageRequest(null, paths, null, lifetime, null, null, anyMetadata ? metadata : null);
        // the native rules on whatever is usable, so one answer names every offending entry; checked before the
        // limits on open work, so bad input is a 400 (it could be a 429, which a client retries for ever)
        if (files != null && files.isArray()) {
            Set<Integer> named = new java.util.HashSet<>();
            errors.forEach(e -> { if (e.index() != null) named.add(e.index()); });
            for (EntryError e : requests.check(who, req)) if (e.index() == null || !named.contains(e.index())) errors.add(wlcg(e));
        }
        if (!errors.isEmpty()) throw new BadInput(HttpStatus.BAD_REQUEST, JsonBodies.describe(errors), errors);
        Set<String> absent = Set.of();
        if (!paths.isEmpty()) {
            // A file not in the catalog fails alone, as dCache and EOS have it: FTS3 sends many files per call and
            // wants an answer per path. When none is known there is nothing to stage: 400 naming each, as natively.
            Set<String> unknown = access.absent(user, paths);
            boolean someKnown = unknown.size() < paths.size();
            List<String> known = someKnown ? paths.stream().filter(p -> !unknown.contains(p)).toList() : paths;
            // the request's experiment: the one its files belong to (WLCG clients do not name one)
            req = req.withExperiment(access.experimentFor(user, null, known));
            if (someKnown) absent = unknown;
        }
        StageRequests.Load load = requests.load(who);
        if (load.openRequests() >= props.maxActiveRequests() || load.openFiles() + paths.size() > props.maxActiveFiles()) {
            throw new TooManyRequests("the service holds " + load.openRequests() + " open requests with " + load.openFiles()
                    + " files waiting (limits " + props.maxActiveRequests() + " and " + props.maxActiveFiles()
                    + "); try again later", props.retryAfter().toSeconds());
        }
        // one client (an FTS instance, a user's script) must not fill the whole queue and lock the others out
        if (load.ownerRequests() >= props.maxActiveRequestsPerAccount()
                || load.ownerFiles() + paths.size() > props.maxActiveFilesPerAccount()) {
            throw new TooManyRequests("account " + who + " holds " + load.ownerRequests() + " open requests with "
                    + load.ownerFiles() + " files waiting (limits per account " + props.maxActiveRequestsPerAccount()
                    + " and " + props.maxActiveFilesPerAccount() + "); try again later", props.retryAfter().toSeconds());
        }
        UUID id = (absent.isEmpty() ? requests.submit(who, req) : requests.submitFailingAbsent(who, req, absent)).request().id();
        // absolute under the endpoint discovery announces, as the specification shows it: a path alone resolved
        // against the proxy's host, not under the configured endpoint URI
        String base = endpoint();
        return ResponseEntity.created(URI.create((base.endsWith("/") ? base : base + "/") + "stage/" + id))
                .body(new Created(id.toString()));
    }

    /**
     * A native rule's error in this API's terms: the request's lifetime is the longest diskLifetime asked for (the
     * error named diskLifetimeSeconds, a field a WLCG client never sends).
     */
    private static EntryError wlcg(EntryError e) {
        return "diskLifetimeSeconds".equals(e.field()) ? new EntryError(e.index(), e.path(), "diskLifetime", e.reason()) : e;
    }

    /** 413 naming the limit when {@code files} is more than a limit on open files admits even with none open. */
    private void tooLargeForTheLimits(int files) {
        boolean perAccount = props.maxActiveFilesPerAccount() < props.maxActiveFiles();
        long limit = perAccount ? props.maxActiveFilesPerAccount() : props.maxActiveFiles();
        if (files <= limit) return;
        String why = "the limit on open files" + (perAccount ? " per account" : "") + " is " + limit
                + " (stagehand.api.wlcg.max-active-files" + (perAccount ? "-per-account" : "") + "); this request names "
                + files + ": split it";
        throw new BadInput(HttpStatus.CONTENT_TOO_LARGE, why, List.of(EntryError.field("files", why)));
    }

    @GetMapping(path = "/api/v1/stage/{id}", produces = MediaType.APPLICATION_JSON_VALUE)
    @Operation(summary = "A stage request's progress (WLCG)",
            description = "Per file: state SUBMITTED, STARTED, CANCELLED, FAILED or COMPLETED, onDisk, error, "
                    + "startedAt/finishedAt; times in epoch seconds.")
    Map<String, Object> get(@PathVariable("id") String id) {
        UUID uuid = visible(uuid(id), id); // another experiment's request is not found
        // a token limited by storage scopes reads a request only when it may read every file of it
        ExperimentAccess.withinScopes(ApiUser.current(), StorageScopes.Op.READ, null, requests, uuid);
        // every file (the specification has no pages; at most MAX_FILES can be submitted)
        StageRequestDetail d = requests.get(uuid, 0, StageRequests.MAX_FILES).orElseThrow(() -> notFound(id));
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("id", uuid.toString());
        out.put("createdAt", epoch(d.request().createdAt()));
        out.put("startedAt", epoch(d.request().startedAt()));
        out.put("completedAt", epoch(d.request().completedAt()));
        List<Map<String, Object>> files = new ArrayList<>(d.files().size());
        for (RequestFile f : d.files()) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("path", f.path());
            String state = switch (f.state()) {
                case QUEUED -> "SUBMITTED";
                case STAGING -> "STARTED";
                case ON_DISK, TRANSFERRING, DONE -> "COMPLETED";
                case FAILED -> "FAILED";
                case CANCELLED -> "CANCELLED";
            };
            m.put("state", state);
            m.put("onDisk", state.equals("COMPLETED") && !f.released() && f.onDisk());
            if (f.error() != null) m.put("error", f.error());
            // gfal2 (FTS3) takes a file with an error as ended and one with onDisk false as still staging: a file
            // cancelled without one (by an operator, the native API or the console) was polled until FTS3's
            // bring-online timeout, its transfer held in STAGING for hours
            else if (f.state() == StageRequests.FileState.CANCELLED) m.put("error", CANCELLED_FILE);
            if (f.startedAt() != null) m.put("startedAt", epoch(f.startedAt()));
            if (f.finishedAt() != null) m.put("finishedAt", epoch(f.finishedAt()));
            files.add(m);
        }
        out.put("files", files);
        return out;
    }

    @PostMapping(path = "/api/v1/stage/{id}/cancel", consumes = MediaType.ALL_VALUE)
    @Operation(summary = "Cancel some files of a stage request (WLCG)",
            requestBody = @io.swagger.v3.oas.annotations.parameters.RequestBody(required = true,
                    content = @Content(mediaType = "application/json", schema = @Schema(implementation = PathsBody.class))))
    ResponseEntity<Void> cancel(@PathVariable("id") String id, HttpServletRequest http) throws IOException {
        UUID uuid = visible(uuid(id), id);
        List<String> paths = JsonBodies.selection(JsonBodies.read(http), "paths", true);
        ExperimentAccess.withinScopes(ApiUser.current(), StorageScopes.Op.STAGE, paths, null);
        List<String> ended = paths;
        try {
            ended = requests.cancel(uuid, paths).unchanged().stream().map(StageRequests.Unchanged::path).toList();
        } catch (StageRequestRejected e) {
            // A finished request: every named file ended already. It was a 409, a failed abort to gfal2: FTS3 aborts
            // every file whose staging failed (so the last failure of a request always got it) and reports a failed
            // abort on a cancelled job's files.
            if (e.kind() != StageRequestRejected.Kind.CONFLICT) throw e;
        }
        // Named files that ended already (on disk) are not cancelled, but the client says it no longer needs them,
        // so this request's pins on them go, whether the request is still open or not (the specification lets the
        // endpoint drop staged copies on cancel; dCache unpins only targets still staging). Kept, they held the
        // cache for the request's whole disk lifetime. Other requests' pins stay; a path the request never held is
        // refused (by the cancel, or by the release on a finished request) and nothing changes.
        if (!ended.isEmpty()) requests.release(uuid, ended);
        return ResponseEntity.ok().build();
    }

    @DeleteMapping(path = "/api/v1/stage/{id}")
    @Operation(summary = "Delete a stage request (WLCG): open files cancelled, pins released, the request forgotten")
    ResponseEntity<Void> delete(@PathVariable("id") String id) {
        UUID uuid = visible(uuid(id), id);
        ExperimentAccess.withinScopes(ApiUser.current(), StorageScopes.Op.STAGE, null, requests, uuid);
        requests.delete(uuid);
        return ResponseEntity.ok().build();
    }

    @PostMapping(path = "/api/v1/release/{id}", consumes = MediaType.ALL_VALUE)
    @Operation(summary = "Release (unpin) files of a stage request (WLCG)",
            description = "With the id gfal2-placeholder-id (gfal2 without a request id): the files are released in "
                    + "every request of the caller's account that holds them.",
            requestBody = @io.swagger.v3.oas.annotations.parameters.RequestBody(required = true,
                    content = @Content(mediaType = "application/json", schema = @Schema(implementation = PathsBody.class))))
    ResponseEntity<Void> release(@PathVariable("id") String id, HttpServletRequest http) throws IOException {
        UUID uuid = GFAL2_PLACEHOLDER_ID.equals(id) ? null : visible(uuid(id), id);
        List<String> paths = JsonBodies.selection(JsonBodies.read(http), "paths", true);
        ExperimentAccess.withinScopes(ApiUser.current(), StorageScopes.Op.STAGE, paths, null);
        if (uuid == null) requests.releaseOwned(ApiUser.current().account(), paths);
        else requests.release(uuid, paths);
        return ResponseEntity.ok().build();
    }

    @PostMapping(path = "/api/v1/archiveinfo", consumes = MediaType.ALL_VALUE, produces = MediaType.APPLICATION_JSON_VALUE)
    @Operation(summary = "Where files are (WLCG): locality TAPE, DISK, DISK_AND_TAPE, NONE, LOST or UNAVAILABLE, or an error",
            requestBody = @io.swagger.v3.oas.annotations.parameters.RequestBody(required = true,
                    content = @Content(mediaType = "application/json", schema = @Schema(implementation = PathsBody.class))))
    List<Map<String, Object>> archiveInfo(HttpServletRequest http) throws IOException {
        List<String> paths = JsonBodies.selection(JsonBodies.read(http), "paths", true);
        List<Map<String, Object>> out = new ArrayList<>(paths.size());
        Map<String, String> unreadable = access.unreadable(ApiUser.current(), paths);
        List<FileLocality.Info> infos = locality.locality(paths);
        // a file written to the archive buffer is on disk until its flush (and after it, until evicted): dCache
        // answers DISK for such a file; NONE, which gfal2 takes as fatal, failed FTS3's archive monitoring at once
        java.util.Set<String> buffered = archive.inBuffer(infos.stream()
                .filter(i -> i.locality() == FileLocality.Locality.NONE || i.locality() == FileLocality.Locality.TAPE)
                .map(FileLocality.Info::path).toList());
        for (FileLocality.Info i : infos) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("path", i.path());
            if (unreadable.containsKey(i.path())) { // outside a token's scopes, or another experiment's file
                m.put("error", unreadable.get(i.path()));
                out.add(m);
                continue;
            }
            FileLocality.Locality where = !buffered.contains(i.path()) ? i.locality()
                    : i.locality() == FileLocality.Locality.TAPE ? FileLocality.Locality.DISK_AND_TAPE : FileLocality.Locality.DISK;
            if (where != null) m.put("locality", where.name());
            if (i.error() != null) m.put("error", i.error());
            out.add(m);
        }
        return out;
    }

    /** Whether a NUL character is in any name or string value of {@code n}. */
    private static boolean hasNul(JsonNode n) {
        if (n.isString()) return n.stringValue().indexOf('\0') >= 0;
        for (var e : n.properties()) if (e.getKey().indexOf('\0') >= 0 || hasNul(e.getValue())) return true;
        if (n.isArray()) for (JsonNode x : n) if (hasNul(x)) return true;
        return false;
    }

    private static Long lifetimeSeconds(JsonNode n) {
        if (!n.isString()) return null;
        try {
            Duration d = Duration.parse(n.stringValue());
            return d.isNegative() || d.isZero() ? null : d.toSeconds();
        } catch (DateTimeParseException e) {
            return null;
        }
    }

    private static Long epoch(Instant t) {
        return t == null ? null : t.getEpochSecond();
    }

    /** The id, when the request exists and the caller may see it; else 404, as for an unknown id. */
    private UUID visible(UUID uuid, String id) {
        ApiUser user = ApiUser.current();
        // the request row alone: its files (there may be 10^6) are not read
        if (!user.allExperiments() && requests.summary(uuid).filter(r -> user.sees(r.experiment())).isEmpty()) throw notFound(id);
        return uuid;
    }

    /** Unknown ids, well-formed or not, are simply not found (WLCG clients only echo ids they were given). */
    private static UUID uuid(String id) {
        return RequestIds.parse(id).orElseThrow(() -> notFound(id));
    }

    private static BadInput notFound(String id) {
        return BadInput.notFound("stage request", id);
    }
}
