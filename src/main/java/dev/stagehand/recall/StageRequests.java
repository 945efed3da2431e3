package dev.stagehand.recall;

import dev.stagehand.platform.EntryError;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;

/**
 * Stage (recall) requests as clients see them: submit, read, list, cancel, release. The recall scheduler
 * drives the states afterwards (request submitted &rarr; active &rarr; done/failed; file queued &rarr; staging
 * &rarr; on_disk &rarr; transferring &rarr; done/failed).
 *
 * <p>Every method either does all of its work in one transaction or throws {@link StageRequestRejected}
 * and changes nothing. The {@code owner} is the account on whose behalf the call is made (in the REST
 * API, the authenticated account).
 */
public interface StageRequests {

    /** The most files one request may name. */
    int MAX_FILES = 100_000;

    /** Longest targetedMetadata object (as JSON text) kept for one file. */
    int MAX_TARGETED_METADATA_CHARS = 4096;

    /**
     * Submits a request. With a {@code clientRequestId}, a retry with the same content returns the request
     * stored the first time ({@code created == false}); the same id with different content is rejected
     * ({@link StageRequestRejected.Kind#CONFLICT}).
     */
    Submission submit(String owner, NewStageRequest request);

    /**
     * Submits a request the way the WLCG Tape REST API takes one: files not in the catalog, and those in
     * {@code absent} (the caller may not see them; they are reported alike), do not refuse the request but are
     * recorded as {@link FileState#FAILED} with {@link #ABSENT_FILE}; the others are staged. Every other rule
     * of {@link #submit} holds.
     */
    Submission submitFailingAbsent(String owner, NewStageRequest request, java.util.Set<String> absent);

    /** The error of a file a request named that was not in the catalog (or not the caller's to see). */
    String ABSENT_FILE = "no such file in the catalog";

    /**
     * The errors {@link #submit} would report without looking at the catalog (fields, path rules,
     * duplicates; null list entries count as missing names). Empty when the request is well formed.
     */
    List<EntryError> check(String owner, NewStageRequest request);

    /** The request with its per-state counts and one page of its files (in submitted order). */
    Optional<StageRequestDetail> get(UUID id, int fileOffset, int fileLimit);

    /** The request alone: its files are not read. */
    Optional<StageRequestSummary> summary(UUID id);

    /**
     * Files [fileOffset, fileOffset + fileLimit) of a request in submitted order (empty for an unknown request):
     * read by their place in the list on an index, so a page costs its own size whatever the request's.
     */
    List<RequestFile> files(UUID id, int fileOffset, int fileLimit);

    /**
     * How many of a request's files are in each state (every state present) and released: running counts kept
     * in the database with the files, so this costs the same whatever the request's size.
     */
    FileCounts counts(UUID id);

    record FileCounts(Map<FileState, Long> byState, long released) {}

    /**
     * The smallest and largest of a request's paths in {@link String} order, as recorded at submission (empty for
     * an unknown request or one submitted before they were recorded): every path of the request sorts between them.
     */
    Optional<PathRange> pathRange(UUID id);

    record PathRange(String first, String last) {}

    /** The names of a request's files in submitted order; empty for an unknown request. */
    List<String> paths(UUID id);

    /** Requests, newest first, matching every given filter. */
    RequestPage list(RequestQuery query);

    /**
     * Cancels the whole request ({@code files == null}) or some of its files. Rules:
     * <ul>
     *   <li>a finished request (done, failed, cancelled) cannot be cancelled: {@code CONFLICT};</li>
     *   <li>files still queued, staging or transferring, and files on disk that still wait for a transfer
     *       (request with a destination), become {@code cancelled}; files that ended (done, failed,
     *       cancelled, or on disk in a request without destination) keep their state and are listed as
     *       unchanged;</li>
     *   <li>cancelling the whole request makes it {@code cancelled}; after cancelling some files, a request
     *       with no open file left ends: cancelled when every file was cancelled, failed when one failed,
     *       else done;</li>
     *   <li>a named file that is not part of the request is an error naming it; nothing is changed.</li>
     * </ul>
     * The request's cache pins on the files it cancelled are released.
     */
    FileChange cancel(UUID id, List<String> files);

    /**
     * Releases (unpins) all ({@code files == null}) or some files of a request, in any request state: the
     * cache may evict them once no other request holds them. Release does not stop a recall still in
     * progress (that is what cancel is for); the file is simply not kept pinned once it lands. Releasing a
     * released file again changes nothing. The request's cache pins are removed at once: a release never
     * waits behind stage work, so it frees space when space is short.
     */
    FileChange release(UUID id, List<String> files);

    /**
     * Releases these files in every request of {@code owner} that holds them, whatever its state: a client that
     * no longer knows which request staged a file (gfal2 releasing after a copy) unpins it as {@link #release}
     * would in each. Names no request of the owner holds are passed over. Malformed names: {@code INVALID}.
     *
     * @return files released (one per request holding one)
     */
    long releaseOwned(String owner, List<String> files);

    /**
     * Sets the priority of an unfinished request (an operator's decision). Out of the allowed range:
     * {@code INVALID}; a finished request: {@code CONFLICT}; an unknown one: {@code NOT_FOUND}.
     * Returns the request as stored after the change.
     */
    StageRequestSummary changePriority(UUID id, int priority);

    /**
     * Deletes a request (the WLCG Tape REST API's DELETE): its open files are cancelled, its pins released,
     * and it is gone ({@code NOT_FOUND} afterwards). Files other requests want are still staged for them.
     */
    void delete(UUID id);

    /**
     * Open requests (submitted or active) and their open files (queued or staging), in all and of {@code owner},
     * for admission control; exact at each call (the files from their running counts per request).
     */
    Load load(String owner);

    record Load(long openRequests, long openFiles, long ownerRequests, long ownerFiles) {}

    /**
     * What a client asks for. Null fields take their defaults. {@code targetedMetadata}, when given, holds
     * for each file (same index) the JSON object the client addressed to this site (WLCG targetedMetadata)
     * or null; it goes to the tape driver with the file's read. {@code overwrite}: see {@link #overwriting()}.
     */
    record NewStageRequest(
            String clientRequestId,
            List<String> files,
            Integer priority,
            Long diskLifetimeSeconds,
            String destination,
            String experiment,
            List<String> targetedMetadata,
            boolean overwrite) {

        public NewStageRequest(String clientRequestId, List<String> files, Integer priority, Long diskLifetimeSeconds,
                               String destination, String experiment) {
            this(clientRequestId, files, priority, diskLifetimeSeconds, destination, experiment, null);
        }

        public NewStageRequest(String clientRequestId, List<String> files, Integer priority, Long diskLifetimeSeconds,
                               String destination, String experiment, List<String> targetedMetadata) {
            this(clientRequestId, files, priority, diskLifetimeSeconds, destination, experiment, targetedMetadata, false);
        }

        /** The same request for another experiment. */
        public NewStageRequest withExperiment(String experiment) {
            return new NewStageRequest(clientRequestId, files, priority, diskLifetimeSeconds, destination, experiment,
                    targetedMetadata, overwrite);
        }

        /**
         * The same request, its files' transfers to {@code destination} writing over a file already there that they
         * did not write (the destination is the caller's own place, as a replica's path at a site), instead of
         * keeping or failing as stagehand.transfer.existing-destination says. Not offered to API clients.
         */
        public NewStageRequest overwriting() {
            return new NewStageRequest(clientRequestId, files, priority, diskLifetimeSeconds, destination, experiment,
                    targetedMetadata, true);
        }
    }

    /** The outcome of {@link #submit}: the stored request, and whether this call created it. */
    record Submission(StageRequestSummary request, boolean created) {}

    enum RequestState {
        SUBMITTED, ACTIVE, DONE, FAILED, CANCELLED;

        public String dbName() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }

        public static RequestState ofDb(String s) {
            return valueOf(s.toUpperCase(java.util.Locale.ROOT));
        }

        public boolean finished() {
            return this == DONE || this == FAILED || this == CANCELLED;
        }
    }

    enum FileState {
        QUEUED, STAGING, ON_DISK, TRANSFERRING, DONE, FAILED, CANCELLED;

        public String dbName() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }

        /** The file was read to disk for the request (it may since have left the cache). */
        public boolean staged() {
            return this == ON_DISK || this == TRANSFERRING || this == DONE;
        }

        public static FileState ofDb(String s) {
            return valueOf(s.toUpperCase(java.util.Locale.ROOT));
        }
    }

    /**
     * A request. {@code etaAt}: when the recall scheduler expects its last file on disk (its own model, refreshed
     * each minute and when the request is taken in whole); null when it has none, then {@code etaUnknown} says why
     * if the scheduler did (still being taken in); both null once the request has finished.
     */
    record StageRequestSummary(
            UUID id, String clientRequestId, String owner, String experiment, int priority, String destination,
            long diskLifetimeSeconds, RequestState state, int fileCount,
            Instant createdAt, Instant startedAt, Instant completedAt, Instant etaAt, String etaUnknown) {}

    /** One file of a request; {@code onDisk}: a verified copy is in the disk cache now (looked up live, for files staged). */
    record RequestFile(String path, FileState state, String error, boolean released, Instant startedAt, Instant finishedAt,
                       boolean onDisk) {}

    /**
     * A request, the number of its files in each state (every state present, zeros included), how many are
     * released, and files [fileOffset, fileOffset + files.size()) in submitted order.
     */
    record StageRequestDetail(
            StageRequestSummary request, Map<FileState, Long> counts, long released,
            List<RequestFile> files, int fileOffset, int fileLimit) {}

    /**
     * Filters for {@link #list}; null means "any". {@code experiments}: only requests of one of these
     * experiments (the caller's visibility; requests without an experiment are then excluded).
     */
    record RequestQuery(RequestState state, String experiment, String owner, Instant createdSince, int offset, int limit,
                        java.util.Collection<String> experiments) {
        public RequestQuery(RequestState state, String experiment, String owner, Instant createdSince, int offset, int limit) {
            this(state, experiment, owner, createdSince, offset, limit, null);
        }
    }

    record RequestPage(List<StageRequestSummary> items, long total, int offset, int limit) {}

    /** A file a cancel or release left as it was, and its state. */
    record Unchanged(String path, FileState state) {}

    /** The outcome of cancel or release: how many files changed, which named ones did not, the request's state after. */
    record FileChange(UUID requestId, RequestState requestState, long changed, List<Unchanged> unchanged) {}
}
