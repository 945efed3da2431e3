package dev.stagehand.api.requests;

import dev.stagehand.api.security.ApiUser;
import dev.stagehand.api.security.ExperimentAccess;
import dev.stagehand.api.security.StorageScopes;
import dev.stagehand.platform.EntryError;
import dev.stagehand.recall.StageRequests.NewStageRequest;
import dev.stagehand.recall.StageRequests;
import dev.stagehand.recall.StageRequests.FileChange;
import dev.stagehand.recall.StageRequests.RequestFile;
import dev.stagehand.recall.StageRequests.RequestQuery;
import dev.stagehand.recall.StageRequests.RequestState;
import dev.stagehand.recall.StageRequests.StageRequestDetail;
import dev.stagehand.recall.StageRequests.StageRequestSummary;
import dev.stagehand.recall.StageRequests.Submission;
import io.swagger.v3.oas.annotations.Operation;
import io.swagger.v3.oas.annotations.media.Content;
import io.swagger.v3.oas.annotations.media.Schema;
import io.swagger.v3.oas.annotations.tags.Tag;
import jakarta.servlet.http.HttpServletRequest;
import java.io.IOException;
import java.net.URI;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.PutMapping;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * The native bulk request API: submit, poll, list, cancel and release stage requests. Errors are RFC 9457
 * problem documents whose {@code errors} array names each offending entry (see {@link ProblemAdvice}).
 */
@RestController
@RequestMapping(path = "/api/v1/requests", produces = MediaType.APPLICATION_JSON_VALUE)
@Tag(name = "Stage requests", description = "Bulk recall (stage) requests of up to 100,000 files")
class RequestsController {

    static final int DEFAULT_FILE_PAGE = 1000, MAX_FILE_PAGE = 10_000, DEFAULT_LIST_PAGE = 50, MAX_LIST_PAGE = 1000;

    private final StageRequests requests;
    private final ExperimentAccess access;

    RequestsController(StageRequests requests, ExperimentAccess access) {
        this.requests = requests;
        this.access = access;
    }

    // ---- bodies and answers, as documented in the OpenAPI document ----

    @Schema(description = "A stage request. Fields not listed are refused.")
    record SubmitBody(
            @Schema(description = "logical file names (absolute paths), 1 to 100,000, no duplicates", requiredMode = Schema.RequiredMode.REQUIRED)
            List<String> files,
            @Schema(description = "idempotency key chosen by the client: a retry with the same key and content returns the first request (200); other content is refused (409)")
            String clientRequestId,
            @Schema(description = "-1000..1000, higher is more urgent, default 0") Integer priority,
            @Schema(description = "pin lifetime once on disk, 1 s to 30 days, default 1 day") Long diskLifetimeSeconds,
            @Schema(description = "optional URL staged files are sent to, e.g. gsiftp://host:2811/path") String destination,
            @Schema(description = "owning experiment / VO") String experiment) {}

    @Schema(description = "Files to act on; omit the body (or the list) to act on every file of the request")
    record FilesBody(List<String> files) {}

    record RequestView(UUID id, String clientRequestId, String owner, String experiment, int priority, String destination,
                       long diskLifetimeSeconds, String state, int fileCount, Instant createdAt, Instant startedAt,
                       Instant completedAt,
                       @Schema(description = "when the recall scheduler expects the request's last file on disk (its own "
                               + "model, refreshed each minute); null while it has none, or once the request has finished")
                       Instant etaAt,
                       @Schema(description = "why there is no etaAt yet, when the scheduler says (the request is still "
                               + "being taken into its queue); else null")
                       String etaUnknown) {
        static RequestView of(StageRequestSummary s) {
            return new RequestView(s.id(), s.clientRequestId(), s.owner(), s.experiment(), s.priority(), s.destination(),
                    s.diskLifetimeSeconds(), s.state().dbName(), s.fileCount(), s.createdAt(), s.startedAt(), s.completedAt(),
                    s.etaAt(), s.etaUnknown());
        }
    }

    record FileView(String path, String state, String error, boolean released, boolean onDisk, Instant startedAt,
                    Instant finishedAt) {
        static FileView of(RequestFile f) {
            return new FileView(f.path(), f.state().dbName(), f.error(), f.released(), f.onDisk(), f.startedAt(),
                    f.finishedAt());
        }
    }

    record DetailView(RequestView request, Map<String, Long> counts, long released, int fileOffset, int fileLimit,
                      List<FileView> files) {}

    record ListView(List<RequestView> items, long total, int offset, int limit) {}

    record UnchangedView(String path, String state) {}

    record ChangeView(UUID id, String state, long changed, List<UnchangedView> unchanged) {
        static ChangeView of(FileChange c) {
            return new ChangeView(c.requestId(), c.requestState().dbName(), c.changed(),
                    c.unchanged().stream().map(u -> new UnchangedView(u.path(), u.state().dbName())).toList());
        }
    }

    // ---- endpoints ----

    @PostMapping(consumes = MediaType.ALL_VALUE)
    @Operation(summary = "Submit a stage request",
            description = "201 with Location for a new request, 200 for a retry of an earlier one with the same "
                    + "clientRequestId and content. A rejected request stores nothing. The owner is the authenticated "
                    + "account; the experiment is the one named, else the one all files belong to, and must be one of "
                    + "the caller's. Files of other experiments are reported as not in the catalog.",
            requestBody = @io.swagger.v3.oas.annotations.parameters.RequestBody(required = true,
                    content = @Content(mediaType = "application/json", schema = @Schema(implementation = SubmitBody.class))))
    ResponseEntity<RequestView> submit(HttpServletRequest http) throws IOException {
        ApiUser user = ApiUser.current();
        String who = user.account();
        var parsed = JsonBodies.submit(JsonBodies.parse(JsonBodies.read(http)));
        if (!parsed.errors().isEmpty()) throw typeErrors(who, parsed);
        NewStageRequest req = parsed.request();
        if (req.files() != null && !req.files().isEmpty() && req.files().size() <= StageRequests.MAX_FILES
                && requests.check(who, req).isEmpty()) {
            String experiment = access.experimentFor(user, req.experiment(), req.files());
            req = new NewStageRequest(req.clientRequestId(), req.files(), req.priority(), req.diskLifetimeSeconds(),
                    req.destination(), experiment);
        }
        Submission s = requests.submit(who, req);
        RequestView view = RequestView.of(s.request());
        return s.created()
                ? ResponseEntity.created(URI.create("/api/v1/requests/" + view.id())).body(view)
                : ResponseEntity.ok(view);
    }

    @GetMapping("/{id}")
    @Operation(summary = "A request with per-state counts and one page of its files, in submitted order")
    DetailView get(@PathVariable("id") String id,
                   @RequestParam(name = "fileOffset", required = false) String fileOffset,
                   @RequestParam(name = "fileLimit", required = false) String fileLimit) {
        UUID uuid = uuid(id);
        int offset = BadInput.intParam("fileOffset", fileOffset, 0, 0, Integer.MAX_VALUE);
        int limit = BadInput.intParam("fileLimit", fileLimit, DEFAULT_FILE_PAGE, 0, MAX_FILE_PAGE);
        visible(uuid); // another experiment's request is not found
        // a token limited by storage scopes reads a request only when it may read every file of it, not just this page
        ExperimentAccess.withinScopes(ApiUser.current(), StorageScopes.Op.READ, null, requests, uuid);
        StageRequestDetail d = requests.get(uuid, offset, limit).orElseThrow(() -> notFound(id));
        Map<String, Long> counts = new LinkedHashMap<>();
        d.counts().forEach((k, v) -> counts.put(k.dbName(), v));
        return new DetailView(RequestView.of(d.request()), counts, d.released(), offset, limit,
                d.files().stream().map(FileView::of).toList());
    }

    @GetMapping
    @Operation(summary = "Requests, newest first", description = "Filters: state, experiment, owner, since (ISO-8601 instant). "
            + "Only requests of the caller's experiments are listed.")
    ListView list(@RequestParam(name = "state", required = false) String state,
                  @RequestParam(name = "experiment", required = false) String experiment,
                  @RequestParam(name = "owner", required = false) String owner,
                  @RequestParam(name = "since", required = false) String since,
                  @RequestParam(name = "offset", required = false) String offset,
                  @RequestParam(name = "limit", required = false) String limit) {
        RequestState st = null;
        if (state != null) {
            try {
                st = RequestState.valueOf(state.toUpperCase(Locale.ROOT));
            } catch (IllegalArgumentException e) {
                throw BadInput.field("state", "unknown state '" + state + "'; one of submitted, active, done, failed, cancelled");
            }
        }
        Instant createdSince = null;
        if (since != null) {
            try {
                createdSince = OffsetDateTime.parse(since).toInstant();
            } catch (DateTimeParseException e) {
                throw BadInput.field("since", "expected an ISO-8601 time such as 2026-01-31T12:00:00Z, got '" + since + "'");
            }
        }
        // a NUL cannot reach PostgreSQL (it refused the query: a 500); no owner or experiment holds a control character
        for (String[] f : new String[][] {{"experiment", experiment}, {"owner", owner}}) {
            if (f[1] != null && dev.stagehand.catalog.FileNames.hasControl(f[1]))
                throw BadInput.field(f[0], "contains a control character; no " + f[0] + " does");
        }
        ApiUser user = ApiUser.current();
        var page = requests.list(new RequestQuery(st, experiment, owner, createdSince,
                BadInput.intParam("offset", offset, 0, 0, Integer.MAX_VALUE), BadInput.intParam("limit", limit, DEFAULT_LIST_PAGE, 1, MAX_LIST_PAGE),
                user.allExperiments() ? null : user.experiments()));
        return new ListView(page.items().stream().map(RequestView::of).toList(), page.total(), page.offset(), page.limit());
    }

    @PostMapping(path = "/{id}/cancel", consumes = MediaType.ALL_VALUE)
    @Operation(summary = "Cancel a request, or some of its files",
            description = "409 when the request has already finished. Files that already ended are listed as unchanged.",
            requestBody = @io.swagger.v3.oas.annotations.parameters.RequestBody(required = false,
                    content = @Content(mediaType = "application/json", schema = @Schema(implementation = FilesBody.class))))
    ChangeView cancel(@PathVariable("id") String id, HttpServletRequest http) throws IOException {
        UUID uuid = visible(uuid(id));
        List<String> files = JsonBodies.fileSelection(JsonBodies.read(http));
        ExperimentAccess.withinScopes(ApiUser.current(), StorageScopes.Op.STAGE, files, requests, uuid);
        return ChangeView.of(requests.cancel(uuid, files));
    }

    @PostMapping(path = "/{id}/release", consumes = MediaType.ALL_VALUE)
    @Operation(summary = "Release (unpin) a request's files, or some of them",
            description = "Allowed in any state; does not stop a recall in progress. Files already released are listed as unchanged.",
            requestBody = @io.swagger.v3.oas.annotations.parameters.RequestBody(required = false,
                    content = @Content(mediaType = "application/json", schema = @Schema(implementation = FilesBody.class))))
    ChangeView release(@PathVariable("id") String id, HttpServletRequest http) throws IOException {
        UUID uuid = visible(uuid(id));
        List<String> files = JsonBodies.fileSelection(JsonBodies.read(http));
        ExperimentAccess.withinScopes(ApiUser.current(), StorageScopes.Op.STAGE, files, requests, uuid);
        return ChangeView.of(requests.release(uuid, files));
    }

    @PutMapping(path = "/{id}/priority", consumes = MediaType.ALL_VALUE)
    @Operation(summary = "Change an unfinished request's priority",
            description = "Body {\"priority\": N}. Its queued files are re-ranked at the scheduler's next poll, raised or lowered; "
                    + "a file shared with another request goes by the highest priority among them. 400 outside the "
                    + "allowed range, 409 when the request has finished.",
            requestBody = @io.swagger.v3.oas.annotations.parameters.RequestBody(required = true,
                    content = @Content(mediaType = "application/json", schema = @Schema(implementation = PriorityBody.class))))
    RequestView priority(@PathVariable("id") String id, HttpServletRequest http) throws IOException {
        UUID uuid = visible(uuid(id));
        ExperimentAccess.withinScopes(ApiUser.current(), StorageScopes.Op.STAGE, null, requests, uuid);
        return RequestView.of(requests.changePriority(uuid, JsonBodies.priority(JsonBodies.read(http))));
    }

    record PriorityBody(@Schema(description = "higher is more urgent", requiredMode = Schema.RequiredMode.REQUIRED) Integer priority) {}

    /** Type errors plus whatever else is wrong with the usable parts, so one answer names every offending entry. */
    private BadInput typeErrors(String owner, JsonBodies.Parsed parsed) {
        List<EntryError> errors = new java.util.ArrayList<>(parsed.errors());
        java.util.Set<Object> named = new java.util.HashSet<>();
        parsed.errors().forEach(e -> named.add(e.index() != null ? e.index() : e.field()));
        for (EntryError e : requests.check(owner, parsed.request())) {
            if (!named.contains(e.index() != null ? e.index() : e.field())) errors.add(e);
        }
        errors.sort(java.util.Comparator.comparing((EntryError e) -> e.index() == null ? -1 : e.index()));
        return new BadInput(HttpStatus.BAD_REQUEST, JsonBodies.describe(errors), errors);
    }

    /** The id, when the request exists and the caller may see it; else 404, as for an unknown id. */
    private UUID visible(UUID id) {
        ApiUser user = ApiUser.current();
        // the request row alone: its files (there may be 10^6) are not read
        if (!user.allExperiments() && requests.summary(id).filter(r -> user.sees(r.experiment())).isEmpty()) throw notFound(id.toString());
        return id;
    }

    /**
     * Unknown ids, well-formed or not, are not found: 404, as the WLCG Tape REST API answers any id it did not give
     * out (dCache's too). A malformed one was 400 here and 404 there.
     */
    private static UUID uuid(String id) {
        return RequestIds.parse(id).orElseThrow(() -> notFound(id));
    }

    private static BadInput notFound(String id) {
        return BadInput.notFound("request", id);
    }
}
