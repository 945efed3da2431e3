package dev.stagehand.api;

import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.ItDb;
import dev.stagehand.api.ApiClient.Answer;
import dev.stagehand.api.security.ApiAccounts;
import dev.stagehand.api.security.ApiRole;
import dev.stagehand.archive.ArchiveProperties;
import dev.stagehand.cache.Checksums;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The archive API over real HTTP: registration, idempotent retries, status, bad input, back-pressure (503).
 * Runs in the same context as RequestApiIT (default archive settings; each distinct context keeps a
 * connection pool open for the whole run): a full buffer is made by one large placeholder row.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
class ArchiveApiIT {

    static final long MB = 1_000_000;

    @Autowired ArchiveProperties props;
    Path landingRoot;

    @LocalServerPort int port;
    @Autowired JdbcTemplate jdbc;
    @Autowired dev.stagehand.api.security.ApiTokens tokens;
    @Autowired ApiAccounts accounts;
    ApiClient api;
    final String tag = UUID.randomUUID().toString().substring(0, 8);

    @BeforeEach
    void setUp() {
        api = ApiClient.admin(port, tokens);
        landingRoot = props.landing().toAbsolutePath();
        // other tests' buffered files must not count against this test's small buffer
        ItDb.retireArchiveBuffer(jdbc);
    }

    /** Queued files must not be left for other tests' flushers. */
    @org.junit.jupiter.api.AfterEach
    void retire() throws IOException {
        ItDb.retireArchiveBuffer(jdbc);
        org.springframework.util.FileSystemUtils.deleteRecursively(landingRoot.resolve("archive-api-it").resolve(tag));
    }

    /** A placeholder buffered file of {@code bytes} (no tape copy to write): the buffer looks that full. */
    void occupy(long bytes) {
        long id = jdbc.queryForObject("INSERT INTO file (name, size_bytes, experiment) VALUES (?, ?, 'it') RETURNING id", Long.class,
                "/archive-api-it/" + tag + "/placeholder", bytes);
        jdbc.update("""
                INSERT INTO archive_file (file_id, path, size_bytes, adler32, family, storage_class, copies)
                VALUES (?, ?, ?, '00000001', 'placeholder', 'single', 1)""", id, "/nonexistent/" + tag, bytes);
    }

    Path land(String rel, long size) throws IOException {
        Path p = landingRoot.resolve("archive-api-it").resolve(tag).resolve(rel);
        Files.createDirectories(p.getParent());
        byte[] b = new byte[(int) size];
        new Random(rel.hashCode()).nextBytes(b);
        return Files.write(p, b);
    }

    static String body(List<Map<String, Object>> files) {
        return ApiClient.json(Map.of("files", files));
    }

    Map<String, Object> entry(Path p, String dataset) throws IOException {
        return Map.of("path", p.toString(), "size", Files.size(p), "dataset", dataset);
    }

    /**
     * The WLCG archiveinfo of files in the archive buffer: on disk (DISK) until evicted, DISK_AND_TAPE once a copy
     * is on tape; NONE only when no copy is anywhere. It said NONE for a buffered file, which gfal2 takes as fatal:
     * FTS3's archive monitoring failed a file it had just written instead of waiting for its flush.
     */
    @Test
    void archiveinfoAnswersDiskForAFileInTheBufferAndNoneOnceItIsGone() {
        String buffered = "/archive-api-it/" + tag + "/buffered", gone = "/archive-api-it/" + tag + "/gone";
        for (String name : List.of(buffered, gone)) {
            long id = jdbc.queryForObject("INSERT INTO file (name, size_bytes, experiment) VALUES (?, 10, 'it') RETURNING id", Long.class, name);
            jdbc.update("""
                    INSERT INTO archive_file (file_id, path, size_bytes, adler32, family, storage_class, copies, state)
                    VALUES (?, ?, 10, '00000001', 'placeholder', 'single', 1, ?)""",
                    id, "/nonexistent/" + tag + name.substring(name.lastIndexOf('/')), name.equals(gone) ? "evicted" : "queued");
        }
        Answer r = api.post("/api/v1/archiveinfo", ApiClient.json(Map.of("paths", List.of(buffered, gone))));
        assertThat(r.status()).isEqualTo(200);
        assertThat(r.json().get(0).get("locality").asText()).as("waiting for its flush, on disk").isEqualTo("DISK");
        assertThat(r.json().get(1).get("locality").asText()).isEqualTo("NONE");
    }

    @Test
    void registerPollAndRetry() throws Exception {
        Path a = land("a", MB), b = land("b", MB);
        String ds = "api-" + tag;
        List<Map<String, Object>> files = List.of(
                Map.of("path", a.toString(), "size", MB, "dataset", ds, "adler32", Checksums.adler32Of(a).toUpperCase()),
                Map.of("path", landingRoot.relativize(b).toString(), "size", MB, "dataset", ds, "experiment", "it",
                        "name", "/exp/" + tag + "/b", "storageClass", "dual"));
        Answer r = api.post("/api/v1/archive/files", body(files));
        assertThat(r.status()).as(r.body()).isEqualTo(201);
        assertThat(r.json().get("registered").asInt()).isEqualTo(2);
        var first = r.json().get("files").get(0);
        assertThat(first.get("state").asString()).isEqualTo("queued");
        assertThat(first.get("adler32").asString()).isEqualTo(Checksums.adler32Of(a));
        assertThat(first.get("name").asString()).isEqualTo("/archive-api-it/" + tag + "/a");
        assertThat(r.json().get("files").get(1).get("copies").asInt()).isEqualTo(2);
        long id = first.get("fileId").asLong();

        Answer again = api.post("/api/v1/archive/files", body(files));
        assertThat(again.status()).as(again.body()).isEqualTo(200);
        assertThat(again.json().get("files").get(0).get("fileId").asLong()).isEqualTo(id);

        Answer one = api.get("/api/v1/archive/files/" + id);
        assertThat(one.status()).isEqualTo(200);
        assertThat(one.json().get("dataset").asString()).isEqualTo(ds);
        assertThat(api.get("/api/v1/archive/files?name=/exp/" + tag + "/b").json().get("storageClass").asString()).isEqualTo("dual");
        // only a failed file can be written again
        Answer notFailed = api.post("/api/v1/archive/files/" + id + "/retry", "");
        assertThat(notFailed.status()).as(notFailed.body()).isEqualTo(409);
        assertThat(notFailed.json().get("detail").asString()).contains("only a failed file can be retried");
        assertThat(api.post("/api/v1/archive/files/999999999/retry", "").status()).isEqualTo(404);
        Answer missing = api.get("/api/v1/archive/files/999999999");
        assertThat(missing.status()).isEqualTo(404);
        assertThat(missing.contentType()).contains("application/problem+json");
        assertThat(api.get("/api/v1/archive/files/abc").status()).isEqualTo(404); // names no file, as an unknown id

        Answer usage = api.get("/api/v1/archive/buffer");
        assertThat(usage.json().get("usedBytes").asLong()).isEqualTo(2 * MB);
        assertThat(usage.json().get("highWaterBytes").asLong()).isEqualTo(props.highWaterBytes());
        assertBufferFiguresAreTheSums();
        assertThat(api.get("/api/v1/archive/volumes").status()).isEqualTo(200);
        assertThat(api.get("/api/v1/archive/families/" + ds + "/volumes").json().isArray()).isTrue();
        // tape copies not confirmed from their volume (V53): a list; a bad limit is a problem document
        assertThat(api.get("/api/v1/archive/unverified-copies?limit=10").json().isArray()).isTrue();
        for (String bad : List.of("0", "abc", "10001")) {
            Answer refused = api.get("/api/v1/archive/unverified-copies?limit=" + bad);
            assertThat(refused.status()).as(refused.body()).isEqualTo(400);
            assertThat(refused.contentType()).contains("application/problem+json");
        }

        // a path relative to the landing area and no name: registered again, nothing is created
        Path c = land("c", MB);
        List<Map<String, Object>> relative = List.of(Map.of("path", landingRoot.relativize(c).toString(), "size", MB, "dataset", ds));
        assertThat(api.post("/api/v1/archive/files", body(relative)).status()).isEqualTo(201);
        Answer relativeAgain = api.post("/api/v1/archive/files", body(relative));
        assertThat(relativeAgain.status()).as(relativeAgain.body()).isEqualTo(200);
    }

    /**
     * A file not on tape yet whose bytes changed (it failed, or would) is deleted by its experiment's operator and its new
     * bytes registered anew under its name and path. There was no way to do so: the failure said "register it anew", and
     * registering the new bytes was refused for ever as a name already in the catalog with other content.
     */
    @Test
    void aFileNotOnTapeYetIsDeletedAndItsNewBytesRegisteredAnew() throws Exception {
        String exp = "arch-del-" + tag, ds = "del-" + tag;
        Path p = land("del", MB);
        List<Map<String, Object>> entry = List.of(Map.of("path", p.toString(), "size", MB, "dataset", ds, "experiment", exp));
        Answer r = api.post("/api/v1/archive/files", body(entry));
        assertThat(r.status()).as(r.body()).isEqualTo(201);
        long id = r.json().get("files").get(0).get("fileId").asLong();
        String name = r.json().get("files").get(0).get("name").asString();
        jdbc.update("UPDATE archive_copy SET state = 'failed', error = 'the buffer file changed after registration' WHERE file_id = ?", id);
        jdbc.update("UPDATE archive_file SET state = 'failed' WHERE file_id = ?", id);
        byte[] other = new byte[(int) MB];
        new Random(99).nextBytes(other);
        Files.write(p, other); // its producer lands the right bytes

        Answer refused = api.post("/api/v1/archive/files", body(entry));
        assertThat(refused.status()).as(refused.body()).isEqualTo(409);
        assertThat(refused.json().get("errors").get(0).get("reason").asString()).contains("delete it (DELETE /api/v1/archive/files/" + id);
        // only the file's experiment's operators: a viewer may not, another experiment's operator finds no such file
        ApiClient viewer = ApiClient.as(port, accounts, tokens, "arch-del-viewer-" + tag, ApiRole.VIEWER, exp);
        assertThat(viewer.delete("/api/v1/archive/files/" + id).status()).isEqualTo(403);
        ApiClient stranger = ApiClient.as(port, accounts, tokens, "arch-del-other-" + tag, ApiRole.OPERATOR, "other-" + tag);
        assertThat(stranger.delete("/api/v1/archive/files/" + id).status()).isEqualTo(404);
        ApiClient operator = ApiClient.as(port, accounts, tokens, "arch-del-op-" + tag, ApiRole.OPERATOR, exp);
        Answer deleted = operator.delete("/api/v1/archive/files/" + id);
        assertThat(deleted.status()).as(deleted.body()).isEqualTo(200);
        assertThat(deleted.json().get("state").asString()).isEqualTo("failed");
        assertThat(Files.readAllBytes(p)).as("the producer's bytes are left in place").isEqualTo(other);
        assertThat(jdbc.queryForObject("SELECT count(*) FROM file WHERE id = ? OR name = ?", Long.class, id, name)).isZero();
        assertThat(jdbc.queryForObject("SELECT count(*) FROM archive_copy WHERE file_id = ?", Long.class, id)).isZero();
        assertThat(operator.delete("/api/v1/archive/files/" + id).status()).isEqualTo(404);
        assertThat(operator.delete("/api/v1/archive/files/abc").status()).isEqualTo(404);

        Answer again = operator.post("/api/v1/archive/files", body(entry));
        assertThat(again.status()).as(again.body()).isEqualTo(201);
        var file = again.json().get("files").get(0);
        assertThat(file.get("name").asString()).isEqualTo(name);
        assertThat(file.get("state").asString()).isEqualTo("queued");
        assertThat(file.get("adler32").asString()).isEqualTo(Checksums.adler32Of(p));
        assertBufferFiguresAreTheSums();

        // a file whose every copy is on tape is not cancelled: 409, and it stays
        long again2 = file.get("fileId").asLong();
        jdbc.update("UPDATE archive_copy SET state = 'done' WHERE file_id = ?", again2);
        jdbc.update("UPDATE archive_file SET state = 'archived', archived_at = now() WHERE file_id = ?", again2);
        Answer archived = operator.delete("/api/v1/archive/files/" + again2);
        assertThat(archived.status()).as(archived.body()).isEqualTo(409);
        assertThat(archived.json().get("detail").asString()).contains("is archived");
        assertThat(operator.get("/api/v1/archive/files/" + again2).status()).isEqualTo(200);
    }

    /**
     * {@code GET /api/v1/archive/buffer} answers from the kept totals (V29) what summing every file gave: files and
     * bytes per state and the use. Compared once the sums are the same before and after the call (this context's
     * own archive rounds may move files meanwhile).
     */
    void assertBufferFiguresAreTheSums() {
        for (int attempt = 0; ; attempt++) {
            String before = summedFigures();
            var u = api.get("/api/v1/archive/buffer").json();
            if (!before.equals(summedFigures()) && attempt < 10) continue;
            StringBuilder answered = new StringBuilder();
            u.get("files").properties().forEach(e -> {
                long bytes = u.get("bytes").get(e.getKey()).asLong();
                if (e.getValue().asLong() != 0) answered.append(e.getKey() + ' ' + e.getValue().asLong() + ' ' + bytes + ';');
            });
            answered.append(u.get("usedBytes").asLong());
            assertThat(answered.toString()).isEqualTo(before);
            return;
        }
    }

    /** The buffer's files and bytes per state and its use, summed over every file as the API did before V29. */
    String summedFigures() {
        return String.join(";", jdbc.queryForList(
                "SELECT state || ' ' || count(*) || ' ' || sum(size_bytes) FROM archive_file GROUP BY state ORDER BY state", String.class))
                + ";" + jdbc.queryForObject("SELECT coalesce(sum(size_bytes), 0) FROM archive_file WHERE state <> 'evicted'", Long.class);
    }

    @Test
    void anotherExperimentsArchivedFilesAndFamiliesAnswerAsUnknownOnes() throws Exception {
        String expA = "arch-a-" + tag, expB = "arch-b-" + tag, dsA = "dsa-" + tag, dsB = "dsb-" + tag;
        Answer r = api.post("/api/v1/archive/files", body(List.of(
                Map.of("path", land("ea", MB).toString(), "size", MB, "dataset", dsA, "experiment", expA),
                Map.of("path", land("eb", MB).toString(), "size", MB, "dataset", dsB, "experiment", expB))));
        assertThat(r.status()).as(r.body()).isEqualTo(201);
        long idA = r.json().get("files").get(0).get("fileId").asLong(), idB = r.json().get("files").get(1).get("fileId").asLong();
        String nameA = r.json().get("files").get(0).get("name").asString(), nameB = r.json().get("files").get(1).get("name").asString();
        String pathB = r.json().get("files").get(1).get("path").asString();
        // one full volume written for each dataset's family
        for (String family : List.of(dsA, dsB)) {
            long vol = jdbc.queryForObject("INSERT INTO volume (label) VALUES (?) RETURNING id", Long.class, "V" + family);
            jdbc.update("INSERT INTO archive_volume (volume_id, family, copy_no, state, files, opened_at) VALUES (?, ?, 1, 'full', 1, now())",
                    vol, family);
        }
        try {
            ApiClient viewerA = ApiClient.as(port, accounts, tokens, "arch-viewer-" + tag, ApiRole.VIEWER, expA);
            assertThat(viewerA.get("/api/v1/archive/files/" + idA).status()).isEqualTo(200);
            assertThat(viewerA.get("/api/v1/archive/files?name=" + nameA).json().get("fileId").asLong()).isEqualTo(idA);

            // another experiment's file, by id, name or buffer path: exactly what an unknown one gets
            long unknown = 999_999_999L;
            assertSameProblem(viewerA.get("/api/v1/archive/files/" + idB), viewerA.get("/api/v1/archive/files/" + unknown),
                    Long.toString(idB), Long.toString(unknown));
            assertSameProblem(viewerA.get("/api/v1/archive/files?name=" + nameB), viewerA.get("/api/v1/archive/files?name=" + nameB + "-none"),
                    nameB, nameB + "-none");
            assertSameProblem(viewerA.get("/api/v1/archive/files?path=" + pathB), viewerA.get("/api/v1/archive/files?path=" + pathB + "-none"),
                    pathB, pathB + "-none");

            // volumes: only families holding the caller's experiments' files; another's family is an empty list like an unknown one
            assertThat(families(viewerA.get("/api/v1/archive/volumes"))).contains(dsA).doesNotContain(dsB);
            assertThat(families(viewerA.get("/api/v1/archive/families/" + dsA + "/volumes"))).containsExactly(dsA);
            assertThat(viewerA.get("/api/v1/archive/families/" + dsB + "/volumes").body())
                    .isEqualTo(viewerA.get("/api/v1/archive/families/none-" + tag + "/volumes").body()).isEqualTo("[]");
            // a volume's files are those on it now (its one written file is not in the catalog), its written ones beside them
            tools.jackson.databind.JsonNode volA = viewerA.get("/api/v1/archive/families/" + dsA + "/volumes").json().get(0);
            assertThat(volA.get("files").asInt()).isZero();
            assertThat(volA.get("written").asInt()).isEqualTo(1);
            // an admin sees every experiment
            assertThat(families(api.get("/api/v1/archive/volumes"))).contains(dsA, dsB);
            assertThat(api.get("/api/v1/archive/files/" + idB).status()).isEqualTo(200);
        } finally {
            jdbc.update("DELETE FROM archive_volume WHERE family IN (?, ?)", dsA, dsB);
            jdbc.update("DELETE FROM volume WHERE label IN (?, ?)", "V" + dsA, "V" + dsB);
        }
    }

    /** The same status, type and title, and details that differ only where each names what was asked for. */
    static void assertSameProblem(Answer hidden, Answer unknown, String hiddenKey, String unknownKey) {
        assertThat(hidden.status()).as(hidden.body()).isEqualTo(404);
        assertThat(hidden.json().get("type")).isEqualTo(unknown.json().get("type"));
        assertThat(hidden.json().get("title")).isEqualTo(unknown.json().get("title"));
        assertThat(hidden.body().replace(hiddenKey, "KEY")).isEqualTo(unknown.body().replace(unknownKey, "KEY"));
    }

    static List<String> families(Answer a) {
        assertThat(a.status()).as(a.body()).isEqualTo(200);
        List<String> out = new ArrayList<>();
        a.json().forEach(v -> out.add(v.get("family").asString()));
        return out;
    }

    @Test
    void badInputGetsProblemDocumentsAndStoresNothing() throws Exception {
        Path a = land("bad", MB);
        long files = jdbc.queryForObject("SELECT count(*) FROM file", Long.class);
        Answer malformed = api.post("/api/v1/archive/files", "{\"files\": [");
        assertThat(malformed.status()).isEqualTo(400);
        assertThat(malformed.contentType()).contains("application/problem+json");

        Answer r = api.post("/api/v1/archive/files", body(List.of(
                Map.of("path", a.toString(), "size", MB, "dataset", "d", "adler32", "00000001"),
                Map.of("path", a + "-nope", "size", 1, "dataset", "d"),
                Map.of("path", "/etc/hostname", "size", 1, "dataset", "d"),
                Map.of("path", a.toString(), "size", "big", "dataset", "d", "colour", "red"))));
        assertThat(r.status()).isEqualTo(400);
        var errors = r.json().get("errors");
        // type errors are found first (before any file is read); then the per-file checks
        assertThat(errors.toString()).contains("colour").contains("size");
        r = api.post("/api/v1/archive/files", body(List.of(
                Map.of("path", a.toString(), "size", MB, "dataset", "d", "adler32", "00000001"),
                Map.of("path", a + "-nope", "size", 1, "dataset", "d"),
                Map.of("path", "/etc/hostname", "size", 1, "dataset", "d"))));
        assertThat(r.status()).isEqualTo(400);
        errors = r.json().get("errors");
        assertThat(errors.size()).isEqualTo(3);
        assertThat(errors.get(0).get("field").asString()).isEqualTo("adler32");
        assertThat(errors.get(0).get("reason").asString()).contains("checksum mismatch");
        assertThat(errors.get(1).get("reason").asString()).contains("no such file");
        assertThat(errors.get(2).get("reason").asString()).contains("not inside the landing area");
        assertThat(jdbc.queryForObject("SELECT count(*) FROM file", Long.class)).isEqualTo(files);
    }

    /**
     * An entry without a path, or with a NUL in its path or name, is refused naming the entry (400), as every other
     * bad entry is: it was a 500, the controller looking such an entry up before the buffer's checks.
     */
    @Test
    void anEntryWithoutAPathOrWithANulIsRefusedNamingIt() throws Exception {
        Path a = land("nul", MB);
        long files = jdbc.queryForObject("SELECT count(*) FROM file", Long.class);
        Answer noPath = api.post("/api/v1/archive/files", body(List.of(
                entry(a, "d-" + tag), Map.of("size", MB, "dataset", "d-" + tag))));
        assertThat(noPath.status()).as(noPath.body()).isEqualTo(400);
        assertThat(noPath.contentType()).contains("application/problem+json");
        assertThat(noPath.json().get("errors").get(0).get("index").intValue()).isEqualTo(1);
        assertThat(noPath.json().get("errors").get(0).get("field").asString()).isEqualTo("path");
        Answer nulPath = api.post("/api/v1/archive/files", body(List.of(Map.of("path", a + "\u0000x", "size", MB, "dataset", "d-" + tag))));
        assertThat(nulPath.status()).as(nulPath.body()).isEqualTo(400);
        assertThat(nulPath.json().get("errors").get(0).get("field").asString()).isEqualTo("path");
        Answer nulName = api.post("/api/v1/archive/files", body(List.of(
                Map.of("path", a.toString(), "name", "/archive-api-it/" + tag + "/a\u0000b", "size", MB, "dataset", "d-" + tag))));
        assertThat(nulName.status()).as(nulName.body()).isEqualTo(400);
        assertThat(nulName.json().get("errors").get(0).get("field").asString()).isEqualTo("name");
        // a lone surrogate (a non-UTF-8 name through Python's surrogateescape) is not a name PostgreSQL can store
        Answer surrogate = api.post("/api/v1/archive/files", "{\"files\": [{\"path\": \"" + a + "\", \"name\": \"/archive-api-it/" + tag
                + "/a\\udcff\", \"size\": " + MB + ", \"dataset\": \"d-" + tag + "\"}]}");
        assertThat(surrogate.status()).as(surrogate.body()).isEqualTo(400);
        assertThat(surrogate.json().get("errors").get(0).get("reason").asString()).contains("lone surrogate");
        Answer byName = api.get("/api/v1/archive/files?name=/archive-api-it/" + tag + "/a%00b");
        assertThat(byName.status()).as(byName.body()).isEqualTo(400);
        assertThat(byName.json().get("errors").get(0).get("field").asString()).isEqualTo("name");
        assertThat(jdbc.queryForObject("SELECT count(*) FROM file", Long.class)).isEqualTo(files);
    }

    /** More files than one call may register is 413 (as documented, and as the stage request API answers), not 400. */
    @Test
    void moreFilesThanACallMayRegisterIs413() throws Exception {
        long files = jdbc.queryForObject("SELECT count(*) FROM file", Long.class);
        List<Map<String, Object>> many = new ArrayList<>();
        for (int i = 0; i <= props.maxFilesPerCall(); i++) many.add(Map.of("path", "archive-api-it/" + tag + "/n" + i, "size", 1, "dataset", "d"));
        Answer r = api.post("/api/v1/archive/files", body(many));
        assertThat(r.status()).isEqualTo(413);
        assertThat(r.contentType()).contains("application/problem+json");
        assertThat(r.json().get("type").asString()).endsWith("/request-too-large");
        assertThat(r.json().get("errors").get(0).get("field").asString()).isEqualTo("files");
        assertThat(r.json().get("errors").get(0).get("reason").asString()).contains("at most " + props.maxFilesPerCall());
        assertThat(jdbc.queryForObject("SELECT count(*) FROM file", Long.class)).isEqualTo(files);
    }

    @Test
    void aFullBufferAnswers503WithRetryAfterAndKeepsNothing() throws Exception {
        List<Map<String, Object>> fill = new ArrayList<>();
        for (int i = 0; i < 6; i++) fill.add(entry(land("fill" + i, MB), "bp-" + tag));
        assertThat(api.post("/api/v1/archive/files", body(fill)).status()).isEqualTo(201);
        occupy(props.highWaterBytes() - 8 * MB); // 6 MB registered + this: 2 MB below the high-water mark
        List<Map<String, Object>> more = new ArrayList<>();
        for (int i = 0; i < 3; i++) more.add(entry(land("more" + i, MB), "bp-" + tag));
        long files = jdbc.queryForObject("SELECT count(*) FROM file", Long.class);
        Answer r = api.post("/api/v1/archive/files", body(more));
        assertThat(r.status()).isEqualTo(503);
        assertThat(r.contentType()).contains("application/problem+json");
        assertThat(r.json().get("type").asString()).endsWith("/buffer-full");
        assertThat(r.json().get("detail").asString()).contains("high-water mark");
        assertThat(api.retryAfter("/api/v1/archive/files", body(more))).isEqualTo(Long.toString(props.retryAfter().toSeconds()));
        assertThat(jdbc.queryForObject("SELECT count(*) FROM file", Long.class)).isEqualTo(files);
        for (var m : more) assertThat(Files.exists(Path.of((String) m.get("path")))).isTrue();
        // two of them still fit under the mark
        assertThat(api.post("/api/v1/archive/files", body(more.subList(0, 2))).status()).isEqualTo(201);
    }
}
