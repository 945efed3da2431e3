package dev.stagehand.api.archive;

import dev.stagehand.api.requests.BadInput;
import dev.stagehand.api.requests.JsonBodies;
import dev.stagehand.api.requests.NumericIds;
import dev.stagehand.api.security.ApiUser;
import dev.stagehand.api.security.ExperimentAccess;
import dev.stagehand.archive.ArchiveBuffer;
import dev.stagehand.archive.ArchiveBuffer.ArchiveFileStatus;
import dev.stagehand.archive.ArchiveBuffer.BufferUsage;
import dev.stagehand.archive.ArchiveBuffer.FamilyVolume;
import dev.stagehand.archive.ArchiveBuffer.UnverifiedCopy;
import dev.stagehand.archive.ArchiveProperties;
import dev.stagehand.archive.ArchiveRejected;
import dev.stagehand.archive.NewArchiveFile;
import dev.stagehand.catalog.FileNames;
import dev.stagehand.platform.EntryError;
import io.swagger.v3.oas.annotations.Operation;
import io.swagger.v3.oas.annotations.media.Content;
import io.swagger.v3.oas.annotations.media.Schema;
import io.swagger.v3.oas.annotations.tags.Tag;
import jakarta.servlet.http.HttpServletRequest;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.WebDataBinder;
import org.springframework.web.bind.annotation.DeleteMapping;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.InitBinder;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import tools.jackson.databind.JsonNode;

/**
 * The archive (write) path's API: register landed files (bulk), retry or delete (cancel) a file not yet on tape, and
 * read the buffer's usage, one file's state and a file family's volumes. Errors are RFC 9457 problem documents ({@link ArchiveProblemAdvice}).
 */
@RestController
@RequestMapping(path = "/api/v1/archive", produces = MediaType.APPLICATION_JSON_VALUE)
@Tag(name = "Archive", description = "Registration of landed files for tape, buffer and volume status")
class ArchiveController {

    private static final Set<String> BODY_FIELDS = Set.of("files");
    private static final Set<String> FILE_FIELDS = Set.of("path", "size", "adler32", "dataset", "experiment", "name", "storageClass");

    private final ArchiveBuffer buffer;
    private final ExperimentAccess access;
    private final int maxFiles;

    ArchiveController(ArchiveBuffer buffer, ExperimentAccess access, ArchiveProperties props) {
        this.buffer = buffer;
        this.access = access;
        this.maxFiles = props.maxFilesPerCall();
    }

    @Schema(description = "One landed file. Fields not listed are refused.")
    record FileBody(
            @Schema(description = "where it is: absolute, or relative to the landing area; must be inside it", requiredMode = Schema.RequiredMode.REQUIRED) String path,
            @Schema(description = "size in bytes (checked)", requiredMode = Schema.RequiredMode.REQUIRED) Long size,
            @Schema(description = "Adler32 as hex (checked against the bytes; a mismatch is refused)") String adler32,
            @Schema(description = "dataset (created when new); its file family unless grouped by configuration", requiredMode = Schema.RequiredMode.REQUIRED) String dataset,
            @Schema(description = "owning experiment (default: the dataset's)") String experiment,
            @Schema(description = "logical file name (default: / + path relative to the landing area)") String name,
            @Schema(description = "storage class: how many tape copies (stagehand.archive.storage-classes)") String storageClass) {}

    @Schema(description = "Files to register, 1 to stagehand.archive.max-files-per-call")
    record RegisterBody(List<FileBody> files) {}

    record RegisterView(int registered, List<ArchiveFileStatus> files) {}

    @PostMapping(path = "/files", consumes = MediaType.ALL_VALUE)
    @Operation(summary = "Register landed files for archival",
            description = "All or none: each file is checked, checksummed (Adler32) and entered in the catalog, then queued "
                    + "for tape. 201 when any file is new, 200 when all were registered before with the same content. "
                    + "503 with Retry-After when the files would take the buffer past its high-water mark (nothing stored).",
            requestBody = @io.swagger.v3.oas.annotations.parameters.RequestBody(required = true,
                    content = @Content(mediaType = "application/json", schema = @Schema(implementation = RegisterBody.class))))
    ResponseEntity<RegisterView> register(HttpServletRequest http) throws IOException {
        JsonNode body = JsonBodies.parse(JsonBodies.read(http));
        List<EntryError> errors = new ArrayList<>();
        JsonBodies.unknownFields(body, BODY_FIELDS, errors);
        // too many files is 413 before any entry is read or looked up, as in the stage request API
        JsonNode list = body.get("files");
        if (list != null && list.isArray() && list.size() > maxFiles)
            throw new ArchiveRejected(ArchiveRejected.Kind.TOO_LARGE, "at most " + maxFiles + " files per call, got " + list.size(),
                    List.of(EntryError.field("files", list.size() + " files; at most " + maxFiles)));
        List<NewArchiveFile> files = files(body, errors);
        if (!errors.isEmpty()) throw new BadInput(HttpStatus.BAD_REQUEST, JsonBodies.describe(errors), errors);
        long before = files.stream().map(ArchiveController::registeredAs)
                .filter(n -> n != null && buffer.fileByName(n).isPresent()).count();
        List<ArchiveFileStatus> done = buffer.register(files);
        boolean created = before < done.size();
        RegisterView view = new RegisterView(done.size(), done);
        return created ? ResponseEntity.status(HttpStatus.CREATED).body(view) : ResponseEntity.ok(view);
    }

    /**
     * What an entry is found by once registered: its name; with none, its path, or for a path relative to the
     * landing area the name it is given from it (a relative path is stored resolved, so looked up as given it was
     * never found, and registering it again answered 201 Created each time); null when it cannot have been registered.
     */
    private static String registeredAs(NewArchiveFile f) {
        // an entry without a path, or with a control character (NUL) in its path or name, was never registered: the
        // buffer refuses it naming the entry (looked up here, it was a 500: Path.of(null), a NUL in Path.of or in SQL)
        if (f.name() != null) return FileNames.hasControl(f.name()) ? null : f.name();
        if (f.path() == null || FileNames.hasControl(f.path())) return null;
        java.nio.file.Path p = java.nio.file.Path.of(f.path());
        return p.isAbsolute() ? f.path() : "/" + p.normalize().toString().replace('\\', '/');
    }

    private static List<NewArchiveFile> files(JsonNode body, List<EntryError> errors) {
        JsonNode node = body.get("files");
        if (node == null || node.isNull()) {
            errors.add(EntryError.field("files", "required: a list of file objects"));
            return List.of();
        }
        if (!node.isArray()) {
            errors.add(EntryError.field("files", "expected a list of file objects, got " + JsonBodies.kind(node)));
            return List.of();
        }
        List<NewArchiveFile> out = new ArrayList<>();
        Iterator<JsonNode> it = node.iterator();
        for (int i = 0; it.hasNext(); i++) {
            JsonNode f = it.next();
            if (!f.isObject()) {
                errors.add(new EntryError(i, null, "files", "expected a file object, got " + JsonBodies.kind(f)));
                continue;
            }
            String path = text(f, "path", i, null, errors);
            for (var e : f.properties())
                if (!FILE_FIELDS.contains(e.getKey()))
                    errors.add(new EntryError(i, path, e.getKey(), "unknown field; known fields are " + FILE_FIELDS));
            Long size = null;
            JsonNode s = f.get("size");
            if (s != null && !s.isNull()) {
                if (s.isIntegralNumber() && s.canConvertToLong() && s.longValue() >= 0) size = s.longValue();
                else errors.add(new EntryError(i, path, "size", "expected a non-negative integer number of bytes, got "
                        + JsonBodies.kind(s)));
            }
            String experiment = text(f, "experiment", i, path, errors);
            // an account archives only into its own experiments; admins may leave it to the dataset's
            ApiUser user = ApiUser.current();
            if (!user.allExperiments() && (experiment == null || !user.sees(experiment)))
                errors.add(new EntryError(i, path, "experiment", experiment == null
                        ? "required: name one of your experiments " + user.experiments()
                        : "'" + experiment + "' is not one of your experiments " + user.experiments()));
            out.add(new NewArchiveFile(path, size, text(f, "adler32", i, path, errors), text(f, "dataset", i, path, errors),
                    experiment, text(f, "name", i, path, errors), text(f, "storageClass", i, path, errors)));
        }
        return out;
    }

    private static String text(JsonNode f, String field, int i, String path, List<EntryError> errors) {
        JsonNode n = f.get(field);
        if (n == null || n.isNull()) return null;
        if (!n.isString()) {
            errors.add(new EntryError(i, path, field, "expected a string, got " + JsonBodies.kind(n)));
            return null;
        }
        return n.stringValue();
    }

    @GetMapping("/files/{id}")
    @Operation(summary = "One registered file: state, tape copies, last failure")
    ArchiveFileStatus file(@PathVariable long id) {
        return readable(buffer.file(id), "no archived file with id " + id);
    }

    /** An id that is not a number (or beyond a long) names no file: 404 as an unknown one, as the API answers every id. */
    @InitBinder("id")
    void fileIds(WebDataBinder binder) {
        NumericIds.register(binder, long.class, id -> notFound("no archived file with id " + BadInput.shown(id)));
    }

    @PostMapping(path = "/files/{id}/retry", consumes = MediaType.ALL_VALUE)
    @Operation(summary = "Write a failed file to tape again (operator)",
            description = "Once the drive or media that failed it is dealt with: its copies not yet on tape are queued again, "
                    + "attempts counted from zero. 409 when the file is not failed, or when its buffer file no longer has the "
                    + "registered bytes (delete it and register it anew).")
    ArchiveFileStatus retry(@PathVariable long id) {
        readable(buffer.file(id), "no archived file with id " + id); // another experiment's file: 404
        return buffer.retry(id);
    }

    @DeleteMapping("/files/{id}")
    @Operation(summary = "Delete a file not yet on tape (operator): cancel its archival",
            description = "For a queued or failed file, none of its copies being written: its catalog entry, queued copies and "
                    + "any copy already written go in one commit, and its name and path may be registered anew (with other "
                    + "bytes). Its bytes in the landing area are left in place. Answers the file as it was. 409 when a copy is "
                    + "being written now, when it is archived (every copy on tape) or was (queued again only to make a bad tape "
                    + "copy again), or while a stage request wants it (its row of the file not ended in an open request, "
                    + "or the file pinned on disk for it and not released). Requests keep the file in their file list under "
                    + "its name, with the state it ended in: finished ones, and open ones whose row of it failed or was "
                    + "cancelled (such a request ends with its other files).")
    ArchiveFileStatus delete(@PathVariable long id) {
        readable(buffer.file(id), "no archived file with id " + id); // another experiment's file: 404
        return buffer.delete(id);
    }

    @GetMapping("/files")
    @Operation(summary = "One registered file by logical name or buffer path")
    ArchiveFileStatus fileByName(@RequestParam(required = false) String name, @RequestParam(required = false) String path) {
        String key = name != null ? name : path;
        if (key == null) throw BadInput.field("name", "give ?name=LOGICAL-NAME or ?path=BUFFER-PATH");
        // no name or path holds a NUL, and PostgreSQL refuses one in a query parameter (it was a 500)
        BadInput.noNul(name != null ? "name" : "path", key);
        return readable(buffer.fileByName(key), "no archived file named or at " + key);
    }

    @GetMapping("/buffer")
    @Operation(summary = "Buffer capacity, usage, high- and low-water marks, files and bytes per state")
    BufferUsage usage() {
        return buffer.usage();
    }

    @GetMapping("/families/{family}/volumes")
    @Operation(summary = "The volumes written for one file family, in the order they were opened")
    List<FamilyVolume> volumes(@PathVariable String family) {
        return buffer.volumes(family, experiments());
    }

    @GetMapping("/volumes")
    @Operation(summary = "The volumes of every file family the caller's experiments have files in")
    List<FamilyVolume> allVolumes() {
        return buffer.volumes(null, experiments());
    }

    @GetMapping("/unverified-copies")
    @Operation(summary = "Tape copies not confirmed from their volume",
            description = "Copies a site script wrote without reporting the Adler32 of what reached the volume "
                    + "(stagehand.tape.script.write-checksum: trust-source): the buffer file's sum stands in for them. A recall "
                    + "whose read of one matches the catalogue confirms it. By volume and offset, of the caller's experiments.")
    List<UnverifiedCopy> unverifiedCopies(@RequestParam(required = false) String limit) {
        int n = BadInput.intParam("limit", limit, 1000, 1, MAX_UNVERIFIED);
        return buffer.unverifiedCopies(experiments(), n);
    }

    static final int MAX_UNVERIFIED = 10_000;

    /**
     * The file when the caller may read it. Another experiment's file answers exactly as an unknown one (404),
     * so names and ids cannot be probed; one beyond a token's storage scopes is 403 naming the scope needed.
     */
    private ArchiveFileStatus readable(Optional<ArchiveFileStatus> found, String missing) {
        ArchiveFileStatus f = found.orElseThrow(() -> notFound(missing));
        String why = access.unreadableFile(ApiUser.current(), f.name());
        if (ExperimentAccess.NO_SUCH_FILE.equals(why)) throw notFound(missing);
        if (why != null) throw new BadInput(HttpStatus.FORBIDDEN, f.name() + " is " + why, List.of(EntryError.file(0, f.name(), why)));
        return f;
    }

    /**
     * A family is named after its dataset (or a configured group), so the volumes of families holding none of
     * the caller's experiments' files are left out, as their datasets are elsewhere; null: all (admins, '*').
     */
    private static Set<String> experiments() {
        ApiUser user = ApiUser.current();
        return user.allExperiments() ? null : user.experiments();
    }

    private static ArchiveRejected notFound(String message) {
        return new ArchiveRejected(ArchiveRejected.Kind.NOT_FOUND, message,
                List.of(EntryError.field("id", message)));
    }
}
