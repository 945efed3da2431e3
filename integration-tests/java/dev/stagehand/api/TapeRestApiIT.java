package dev.stagehand.api;

import static dev.stagehand.api.Problems.assertProblem;
import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.ItDb;
import dev.stagehand.cache.CacheProperties;
import dev.stagehand.cache.DiskCache;
import dev.stagehand.platform.VirtualClock;
import dev.stagehand.recall.RecallProperties;
import dev.stagehand.recall.service.RecallService;
import dev.stagehand.tape.LibraryEvents;
import dev.stagehand.tape.ReadResult;
import dev.stagehand.tape.SegmentRead;
import dev.stagehand.tape.SimulatedLibrary;
import dev.stagehand.tape.TapeModel;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.transaction.support.TransactionTemplate;
import org.springframework.util.unit.DataSize;
import tools.jackson.databind.JsonNode;

/**
 * The WLCG Tape REST API over real HTTP, real PostgreSQL and the simulated library (virtual clock, the
 * scheduler polled by the test): discovery, stage, progress, partial cancel, release, archiveinfo, delete,
 * errors as problem documents, 429 with Retry-After, and both APIs in the OpenAPI document.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
        "stagehand.recall.enabled=false", "stagehand.api.wlcg.sitename=it-site", "stagehand.api.wlcg.max-active-requests=3",
        "stagehand.api.wlcg.max-active-requests-per-account=2", "stagehand.api.wlcg.retry-after=42s"})
class TapeRestApiIT {

    static final long SIZE = 1_000_000;

    @LocalServerPort int port;
    @Autowired JdbcTemplate jdbc;
    @Autowired JdbcClient db;
    @Autowired TransactionTemplate tx;
    @TempDir Path tmp;
    @Autowired dev.stagehand.api.security.ApiTokens tokens;
    @Autowired dev.stagehand.api.security.ApiAccounts accounts;

    ApiClient api;
    final String tag = UUID.randomUUID().toString().substring(0, 8);

    @BeforeEach
    void setUp() {
        api = ApiClient.admin(port, tokens);
        // IT classes run one at a time: close what earlier classes left open, so the admission limit counts ours
        ItDb.cancelOpenRequests(jdbc);
    }

    String file(String name, String volume, String segmentState) {
        String full = "/wlcg/" + tag + "/" + name;
        long id = ItDb.simulatedFile(jdbc, full, SIZE);
        if (volume != null) {
            jdbc.update("INSERT INTO segment (file_id, volume_id, offset_bytes, state) SELECT ?, id, ?, ? FROM volume WHERE label = ?",
                    id, Math.floorMod(full.hashCode(), 100) * 1_000_000_000L, segmentState, volume);
        }
        return full;
    }

    static String paths(String... p) {
        return ApiClient.json(Map.of("paths", List.of(p)));
    }

    Map<String, JsonNode> filesOf(JsonNode request) {
        Map<String, JsonNode> m = new java.util.HashMap<>();
        for (JsonNode f : request.get("files")) m.put(f.get("path").stringValue(), f);
        return m;
    }

    @Test
    void theWholeFlowDiscoveryStageCancelReleaseArchiveinfoDelete() {
        ApiClient.Answer disc = api.get("/.well-known/wlcg-tape-rest-api");
        assertThat(disc.status()).isEqualTo(200);
        assertThat(disc.json().get("sitename").stringValue()).isEqualTo("it-site");
        assertThat(disc.json().get("endpoints").get(0).get("uri").stringValue()).isEqualTo("http://localhost:" + port + "/api/v1");
        assertThat(disc.json().get("endpoints").get(0).get("version").stringValue()).isEqualTo("v1");

        String vol = "W" + tag;
        jdbc.update("INSERT INTO volume (label) VALUES (?)", vol);
        String a = file("a", vol, "ok"), b = file("b", vol, "ok"), c = file("c", vol, "ok"), d = file("d", vol, "ok");
        String lost = file("lost", vol, "lost"), never = file("never", null, null);

        Map<String, Object> body = Map.of("files", List.of(
                Map.of("path", a, "diskLifetime", "P1D", "targetedMetadata", Map.of("default", Map.of())),
                Map.of("path", b, "diskLifetime", "PT6H"),
                Map.of("path", c)));
        ApiClient.Answer created = api.post("/api/v1/stage", ApiClient.json(body));
        assertThat(created.status()).isEqualTo(201);
        String id = created.json().get("requestId").stringValue();
        // absolute under discovery's endpoint, as the specification shows it (a bare path missed a proxy's prefix)
        assertThat(created.location()).isEqualTo("http://localhost:" + port + "/api/v1/stage/" + id);
        assertThat(jdbc.queryForObject("SELECT disk_lifetime_s FROM stage_request WHERE id = ?::uuid", Long.class, id)).isEqualTo(86_400L);

        JsonNode r = api.get("/api/v1/stage/" + id).json();
        assertThat(r.get("id").stringValue()).isEqualTo(id);
        assertThat(r.get("createdAt").isIntegralNumber()).isTrue();
        assertThat(Math.abs(r.get("createdAt").longValue() - Instant.now().getEpochSecond())).isLessThan(600);
        assertThat(filesOf(r).get(a).get("state").stringValue()).isEqualTo("SUBMITTED");

        // a subset is cancelled; the rest goes on
        assertThat(api.post("/api/v1/stage/" + id + "/cancel", paths(c)).status()).isEqualTo(200);
        assertThat(filesOf(api.get("/api/v1/stage/" + id).json()).get(c).get("state").stringValue()).isEqualTo("CANCELLED");
        // with an error: gfal2 (FTS3) reads onDisk false without one as "not yet on disk" and polls on
        JsonNode cancelled = filesOf(api.get("/api/v1/stage/" + id).json()).get(c);
        assertThat(cancelled.path("error").asString(null)).as(cancelled.toString()).isEqualTo("staging cancelled");
        assertThat(filesOf(api.get("/api/v1/stage/" + id).json()).get(b).has("error")).isFalse();

        // the scheduler stages the rest into the cache
        Recall recall = recall(LibraryEvents.NONE);
        recall.until(() -> filesOf(api.get("/api/v1/stage/" + id).json()).get(b).get("state").stringValue().equals("COMPLETED"));
        DiskCache cache = recall.cache;
        r = api.get("/api/v1/stage/" + id).json();
        Map<String, JsonNode> files = filesOf(r);
        for (String p : List.of(a, b)) {
            assertThat(files.get(p).get("state").stringValue()).isEqualTo("COMPLETED");
            assertThat(files.get(p).get("onDisk").booleanValue()).isTrue();
            assertThat(files.get(p).get("finishedAt").isIntegralNumber()).isTrue();
        }
        assertThat(files.get(c).get("state").stringValue()).isEqualTo("CANCELLED");
        assertThat(r.get("startedAt").isIntegralNumber()).isTrue();
        assertThat(r.get("completedAt").isIntegralNumber()).isTrue();

        // archiveinfo from the catalog and the cache
        ApiClient.Answer info = api.post("/api/v1/archiveinfo", paths(a, d, lost, never, "/wlcg/" + tag + "/nope", "relative"));
        assertThat(info.status()).isEqualTo(200);
        List<String> got = new ArrayList<>();
        for (JsonNode n : info.json()) got.add(n.get("path").stringValue() + " " + (n.has("locality") ? n.get("locality").stringValue() : "error"));
        assertThat(got).containsExactly(a + " DISK_AND_TAPE", d + " TAPE", lost + " LOST", never + " NONE",
                "/wlcg/" + tag + "/nope error", "relative error");
        assertThat(info.json().get(4).get("error").stringValue()).contains("no such file");
        jdbc.update("UPDATE volume SET state = 'disabled' WHERE label = ?", vol);
        assertThat(api.post("/api/v1/archiveinfo", paths(a, d)).json().get(1).get("locality").stringValue()).isEqualTo("UNAVAILABLE");
        assertThat(api.post("/api/v1/archiveinfo", paths(a, d)).json().get(0).get("locality").stringValue()).isEqualTo("DISK");
        jdbc.update("UPDATE volume SET state = 'available' WHERE label = ?", vol);

        // release unpins
        assertThat(jdbc.queryForObject("SELECT count(*) FROM cache_pin p JOIN file f ON f.id = p.file_id WHERE p.owner = ? AND f.name = ?",
                Long.class, id, a)).isEqualTo(1L);
        assertThat(api.post("/api/v1/release/" + id, paths(a)).status()).isEqualTo(200);
        assertThat(jdbc.queryForObject("SELECT count(*) FROM cache_pin p JOIN file f ON f.id = p.file_id WHERE p.owner = ? AND f.name = ?",
                Long.class, id, a)).isZero();
        assertThat(filesOf(api.get("/api/v1/stage/" + id).json()).get(a).get("onDisk").booleanValue()).isFalse();

        // staged once is not on disk for ever: a copy discarded (found corrupt) or evicted is no longer on disk
        long bId = jdbc.queryForObject("SELECT id FROM file WHERE name = ?", Long.class, b);
        assertThat(filesOf(api.get("/api/v1/stage/" + id).json()).get(b).get("onDisk").booleanValue()).isTrue();
        assertThat(cache.discardCopy(bId, "test: copy found corrupt")).isTrue();
        JsonNode bAfter = filesOf(api.get("/api/v1/stage/" + id).json()).get(b);
        assertThat(bAfter.get("state").stringValue()).isEqualTo("COMPLETED");
        assertThat(bAfter.get("onDisk").booleanValue()).isFalse();
        assertThat(api.get("/api/v1/requests/" + id).json().get("files").get(1).get("onDisk").booleanValue()).isFalse();

        // delete: gone, pins released
        assertThat(api.delete("/api/v1/stage/" + id).status()).isEqualTo(200);
        ApiClient.Answer gone = api.get("/api/v1/stage/" + id);
        assertProblem(gone, 404);
        assertThat(jdbc.queryForObject("SELECT count(*) FROM cache_pin WHERE owner = ?", Long.class, id)).isZero();
    }

    /** The scheduler of this test (polled by it) on a virtual clock, one drive, its own cache. */
    record Recall(RecallService service, DiskCache cache, VirtualClock clock) {
        void until(java.util.function.BooleanSupplier done) {
            service.start();
            for (int i = 0; i < 40 && !done.getAsBoolean(); i++) {
                service.poll();
                clock.advance(Duration.ofSeconds(30));
            }
            service.stop();
        }
    }

    Recall recall(LibraryEvents events) {
        VirtualClock clock = new VirtualClock();
        DiskCache cache = new DiskCache(db, tx, new CacheProperties(List.of(new CacheProperties.Directory(tmp.resolve("cache"),
                DataSize.ofMegabytes(100), true)), "wlcg-" + tag), new Clock() {
                    @Override public ZoneId getZone() { return ZoneOffset.UTC; }
                    @Override public Clock withZone(ZoneId zone) { return this; }
                    @Override public Instant instant() { return clock.now(); }
                }, null);
        cache.start();
        RecallService service = new RecallService(jdbc, SimulatedLibrary.builder(clock).name("w" + tag).drives(1).accessors(1)
                .root(tmp.resolve("lib")).events(events).build(), clock, TapeModel.lto9(), new RecallProperties(true, "tape-aware", SIZE,
                Duration.ZERO, Duration.ofMinutes(10), "wlcg-" + tag, 500_000_000_000L, 10_000, Duration.ofMinutes(5),
                Duration.ofHours(4), Duration.ofMinutes(5), 2_000_000_000_000L, 20_000, 4, Map.of(), Map.of()), cache);
        return new Recall(service, cache, clock);
    }

    @Test
    void metadataAddressedToThisSiteIsKeptAndReachesTheTapeDriverWithTheRead() {
        String vol = "M" + tag;
        jdbc.update("INSERT INTO volume (label) VALUES (?)", vol);
        String a = file("a", vol, "ok"), b = file("b", vol, "ok"), c = file("c", vol, "ok");
        ApiClient.Answer first = api.post("/api/v1/stage", ApiClient.json(Map.of("files", List.of(
                Map.of("path", a, "targetedMetadata", Map.of("it-site", Map.of("activity", "reprocessing", "weight", 3),
                        "other-site", Map.of("activity", "not ours"))),
                Map.of("path", b),
                Map.of("path", c, "targetedMetadata", Map.of("default", Map.of("activity", "for whoever")))))));
        assertThat(first.status()).isEqualTo(201);
        String id = first.json().get("requestId").stringValue();
        // a later request for the same file: it is read once, with the first metadata it was given
        assertThat(api.post("/api/v1/stage", ApiClient.json(Map.of("files", List.of(
                Map.of("path", a, "targetedMetadata", Map.of("it-site", Map.of("activity", "later"))))))).status()).isEqualTo(201);

        Map<String, String> stored = new java.util.HashMap<>();
        jdbc.query("SELECT f.name, x.targeted_metadata::text FROM stage_request_file x JOIN file f ON f.id = x.file_id "
                + "WHERE x.request_id = ?::uuid", rs -> { stored.put(rs.getString(1), rs.getString(2)); }, id);
        assertThat(stored).containsEntry(a, "{\"weight\": 3, \"activity\": \"reprocessing\"}")
                .containsEntry(b, null).containsEntry(c, null);

        Map<String, String> seen = new java.util.concurrent.ConcurrentHashMap<>();
        List<String> reads = java.util.Collections.synchronizedList(new ArrayList<>());
        recall(new LibraryEvents() {
            @Override
            public void segmentRead(String drive, ReadResult result) {
                SegmentRead seg = result.segment();
                reads.add(seg.fileName());
                if (seg.targetedMetadata() != null) seen.put(seg.fileName(), seg.targetedMetadata());
            }
        }).until(() -> reads.containsAll(List.of(a, b, c)));
        assertThat(reads).filteredOn(n -> n.equals(a)).hasSize(1);
        assertThat(seen).containsOnlyKeys(a);
        JsonNode got = ApiClient.parse(seen.get(a));
        assertThat(got.get("activity").stringValue()).isEqualTo("reprocessing");
        assertThat(got.get("weight").intValue()).isEqualTo(3);
    }

    @Test
    void aFileNotInTheCatalogFailsAloneAndTheOthersAreStaged() {
        String vol = "U" + tag;
        jdbc.update("INSERT INTO volume (label) VALUES (?)", vol);
        String a = file("a", vol, "ok"), b = file("b", vol, "ok");
        String nowhere = "/wlcg/" + tag + "/never-written", gone = "/wlcg/" + tag + "/gone";
        // as FTS3 sends them: several files in one call, two of them unknown here (dCache and EOS answer 201 too)
        ApiClient.Answer created = api.post("/api/v1/stage", ApiClient.json(Map.of("files", List.of(
                Map.of("path", nowhere), Map.of("path", a, "diskLifetime", "P1D"), Map.of("path", gone), Map.of("path", b)))));
        assertThat(created.status()).as(created.body()).isEqualTo(201);
        String id = created.json().get("requestId").stringValue();
        JsonNode r = api.get("/api/v1/stage/" + id).json();
        List<String> order = new ArrayList<>();
        for (JsonNode f : r.get("files")) order.add(f.get("path").stringValue() + " " + f.get("state").stringValue());
        assertThat(order).containsExactly(nowhere + " FAILED", a + " SUBMITTED", gone + " FAILED", b + " SUBMITTED");
        JsonNode failed = filesOf(r).get(nowhere);
        assertThat(failed.get("error").stringValue()).isEqualTo("no such file in the catalog");
        assertThat(failed.get("onDisk").booleanValue()).isFalse();
        assertThat(failed.get("finishedAt").isIntegralNumber()).isTrue();
        // the native view counts them as failed files of the request; only the known files are queued for tape
        JsonNode detail = api.get("/api/v1/requests/" + id).json();
        assertThat(detail.get("request").get("fileCount").intValue()).isEqualTo(4);
        assertThat(detail.get("counts").get("failed").longValue()).isEqualTo(2);
        assertThat(detail.get("counts").get("queued").longValue()).isEqualTo(2);
        // the native cancel reports it as left as it was
        JsonNode unchanged = api.post("/api/v1/requests/" + id + "/cancel", ApiClient.json(Map.of("files", List.of(nowhere)))).json();
        assertThat(unchanged.get("changed").longValue()).isZero();
        assertThat(unchanged.get("unchanged").get(0).get("path").stringValue()).isEqualTo(nowhere);
        assertThat(unchanged.get("unchanged").get(0).get("state").stringValue()).isEqualTo("failed");
        assertThat(jdbc.queryForObject("SELECT count(*) FROM stage_request_file WHERE request_id = ?::uuid", Long.class, id)).isEqualTo(2L);
        // cancelling an absent file changes nothing and is not an error; a name the request never held still is
        assertThat(api.post("/api/v1/stage/" + id + "/cancel", paths(gone)).status()).isEqualTo(200);
        assertThat(api.post("/api/v1/stage/" + id + "/cancel", paths("/wlcg/" + tag + "/other")).status()).isEqualTo(400);

        // both known files (their order on the volume depends on the run's random names)
        recall(LibraryEvents.NONE).until(() -> {
            Map<String, JsonNode> now = filesOf(api.get("/api/v1/stage/" + id).json());
            return now.get(a).get("state").stringValue().equals("COMPLETED") && now.get(b).get("state").stringValue().equals("COMPLETED");
        });
        r = api.get("/api/v1/stage/" + id).json();
        assertThat(filesOf(r).get(a).get("state").stringValue()).isEqualTo("COMPLETED");
        assertThat(filesOf(r).get(gone).get("state").stringValue()).isEqualTo("FAILED");
        // the request ends once its known files are on disk, failed because some of its files could not be staged
        assertThat(jdbc.queryForObject("SELECT state FROM stage_request WHERE id = ?::uuid", String.class, id)).isEqualTo("failed");
        assertThat(r.get("completedAt").isIntegralNumber()).isTrue();
        // FTS3 aborts every file whose staging failed (gfal2_abort_files: a cancel) and cancels a job's files: on
        // a finished request that is 200, as any cancel (it was a 409, a failed abort to gfal2); the named files'
        // pins go, the others stay; a path the request never held is still refused, and nothing changes then
        assertThat(pins(id, a)).isEqualTo(1);
        assertThat(api.post("/api/v1/stage/" + id + "/cancel", paths(gone, a)).status()).isEqualTo(200);
        assertThat(pins(id, a)).isZero();
        assertThat(pins(id, b)).isEqualTo(1);
        assertThat(filesOf(api.get("/api/v1/stage/" + id).json()).get(a).get("state").stringValue()).isEqualTo("COMPLETED");
        assertProblem(api.post("/api/v1/stage/" + id + "/cancel", paths(b, "/wlcg/" + tag + "/other")), 400);
        assertThat(pins(id, b)).isEqualTo(1);
        assertThat(api.delete("/api/v1/stage/" + id).status()).isEqualTo(200);
        assertThat(jdbc.queryForObject("SELECT count(*) FROM stage_request_absent WHERE request_id = ?::uuid", Long.class, id)).isZero();
    }

    @Test
    void cancelOfAnOpenRequestReleasesItsPinsOnNamedFilesAlreadyOnDiskNotOtherRequests() {
        String vol = "O" + tag;
        jdbc.update("INSERT INTO volume (label) VALUES (?)", vol);
        String a = file("oa", vol, "ok"), q = file("oq", vol, "ok");
        // another account's request stages a first: it is in the cache, pinned for that request
        String others = otherAccount().post("/api/v1/stage", ApiClient.json(Map.of("files", List.of(Map.of("path", a)))))
                .json().get("requestId").stringValue();
        Recall recall = recall(LibraryEvents.NONE);
        recall.until(() -> filesOf(api.get("/api/v1/stage/" + others).json()).get(a).get("state").stringValue().equals("COMPLETED"));
        String id = api.post("/api/v1/stage", ApiClient.json(Map.of("files", List.of(Map.of("path", a, "diskLifetime", "P7D"),
                Map.of("path", q))))).json().get("requestId").stringValue();
        // one round on a standing clock: a is answered from the cache, q waits for its read; the request stays open
        recall.service().start();
        recall.service().poll();
        recall.service().stop();
        Map<String, JsonNode> files = filesOf(api.get("/api/v1/stage/" + id).json());
        assertThat(files.get(a).get("onDisk").booleanValue()).as(files.toString()).isTrue();
        assertThat(files.get(q).get("state").stringValue()).isIn("SUBMITTED", "STARTED");
        assertThat(pins(id, a)).isEqualTo(1);

        // FTS3 cancels a job's files, one of them on disk already: the client no longer wants it. The request's pin
        // on it stayed for the request's disk lifetime (7 days here), as the cache could not evict it
        assertThat(api.post("/api/v1/stage/" + id + "/cancel", paths(a)).status()).isEqualTo(200);
        assertThat(pins(id, a)).isZero();
        assertThat(pins(others, a)).as("another request's pin on the same file stays").isEqualTo(1);
        files = filesOf(api.get("/api/v1/stage/" + id).json());
        assertThat(files.get(a).get("state").stringValue()).isEqualTo("COMPLETED");
        assertThat(files.get(a).get("onDisk").booleanValue()).isFalse();
        assertThat(files.get(q).get("state").stringValue()).as("a file not named goes on").isIn("SUBMITTED", "STARTED");
        assertThat(jdbc.queryForObject("SELECT state FROM stage_request WHERE id = ?::uuid", String.class, id)).isIn("submitted", "active");
        assertThat(filesOf(api.get("/api/v1/stage/" + others).json()).get(a).get("onDisk").booleanValue()).isTrue();
    }

    @Test
    void namesWithASpaceAPercentOrUtf8AreMatchedExactlyAsSentNotPercentDecoded() {
        // gfal2 puts the URL's raw path in the body (davix Uri::getPath does not decode) and dCache looks it up
        // undecoded (FsPath.create of the JSON string): a name is matched as sent, "%20" is not a space
        String vol = "E" + tag;
        jdbc.update("INSERT INTO volume (label) VALUES (?)", vol);
        String space = file("run 1.dat", vol, "ok"), utf8 = file("données-ü.dat", vol, "ok"), pct = file("100%25.dat", vol, "ok");
        ApiClient.Answer created = api.post("/api/v1/stage", ApiClient.json(Map.of("files", List.of(
                Map.of("path", space), Map.of("path", utf8), Map.of("path", pct)))));
        assertThat(created.status()).as(created.body()).isEqualTo(201);
        String id = created.json().get("requestId").stringValue();
        // gfal2 finds its file in the answer by comparing the path strings
        List<String> order = new ArrayList<>();
        for (JsonNode f : api.get("/api/v1/stage/" + id).json().get("files")) {
            order.add(f.get("path").stringValue() + " " + f.get("state").stringValue() + " " + f.has("error"));
        }
        assertThat(order).containsExactly(space + " SUBMITTED false", utf8 + " SUBMITTED false", pct + " SUBMITTED false");

        String encodedSpace = "/wlcg/" + tag + "/run%201.dat", decodedPct = "/wlcg/" + tag + "/100%.dat";
        JsonNode info = api.post("/api/v1/archiveinfo", paths(space, utf8, pct, encodedSpace, decodedPct)).json();
        List<String> got = new ArrayList<>();
        for (JsonNode n : info) got.add(n.get("path").stringValue() + " " + (n.has("locality") ? n.get("locality").stringValue() : "error"));
        assertThat(got).containsExactly(space + " TAPE", utf8 + " TAPE", pct + " TAPE", encodedSpace + " error", decodedPct + " error");

        assertThat(api.post("/api/v1/stage/" + id + "/cancel", paths(space, utf8)).status()).isEqualTo(200);
        assertThat(filesOf(api.get("/api/v1/stage/" + id).json()).get(utf8).get("state").stringValue()).isEqualTo("CANCELLED");
        assertThat(api.post("/api/v1/release/" + id, paths(pct)).status()).isEqualTo(200);
        assertThat(api.delete("/api/v1/stage/" + id).status()).isEqualTo(200);
    }

    @Test
    void badInputIsAProblemDocumentNamingEachEntryAndNothingIsStored() {
        String vol = "X" + tag;
        jdbc.update("INSERT INTO volume (label) VALUES (?)", vol);
        String ok = file("ok", vol, "ok");
        long before = jdbc.queryForObject("SELECT count(*) FROM stage_request", Long.class);
        ApiClient.Answer bad = api.post("/api/v1/stage", ApiClient.json(Map.of("files", List.of(
                Map.of("path", ok, "diskLifetime", "one day"),
                Map.of("diskLifetime", "P1D"),
                Map.of("path", "/wlcg/" + tag + "/unknown"),
                Map.of("path", ok + "2", "colour", "red")))));
        assertProblem(bad, 400);
        List<String> errs = new ArrayList<>();
        for (JsonNode e : bad.json().get("errors")) errs.add(e.get("index") + " " + (e.has("field") ? e.get("field").stringValue() : ""));
        assertThat(errs).contains("0 diskLifetime", "1 path", "3 colour");
        // the catalog check of the native API: an unknown file is named
        ApiClient.Answer unknown = api.post("/api/v1/stage", ApiClient.json(Map.of("files", List.of(Map.of("path", "/wlcg/" + tag + "/unknown")))));
        assertThat(unknown.status()).isEqualTo(400);
        assertThat(unknown.json().get("errors").get(0).get("reason").stringValue()).contains("not in the catalog");
        assertThat(api.post("/api/v1/stage", "{").status()).isEqualTo(400);
        // metadata for this site must be an object, and a small one; what other sites get is not checked
        ApiClient.Answer meta = api.post("/api/v1/stage", ApiClient.json(Map.of("files", List.of(
                Map.of("path", ok, "targetedMetadata", Map.of("it-site", "fast")),
                Map.of("path", ok + "-big", "targetedMetadata", Map.of("it-site", Map.of("blob", "x".repeat(5000)))),
                Map.of("path", ok + "-list", "targetedMetadata", List.of("it-site")),
                Map.of("path", ok + "-elsewhere", "targetedMetadata", Map.of("other-site", "anything"))))));
        assertProblem(meta, 400);
        List<String> metaErrs = new ArrayList<>();
        for (JsonNode e : meta.json().get("errors")) metaErrs.add(e.get("index") + " " + (e.has("field") ? e.get("field").stringValue() : "")
                + " " + e.get("reason").stringValue());
        assertThat(metaErrs).anySatisfy(e -> assertThat(e).startsWith("0 targetedMetadata").contains("(it-site) must be an object"))
                .anySatisfy(e -> assertThat(e).startsWith("1 targetedMetadata").contains("at most 4096 characters"))
                .anySatisfy(e -> assertThat(e).startsWith("2 targetedMetadata").contains("expected an object"))
                .noneSatisfy(e -> assertThat(e).startsWith("3 targetedMetadata"));
        // a lone surrogate is stored as '?': the request was taken and its poll named a path the client never sent
        ApiClient.Answer surrogate = api.post("/api/v1/stage", "{\"files\": [{\"path\": \"/wlcg/" + tag + "/\\udcff\"}, {\"path\": \"" + ok + "\"}]}");
        assertProblem(surrogate, 400);
        assertThat(surrogate.json().get("errors").get(0).get("index").intValue()).isZero();
        assertThat(surrogate.json().get("errors").get(0).get("reason").stringValue()).contains("lone surrogate");
        // PostgreSQL's jsonb cannot hold a NUL: refused naming the entry, not a 500
        ApiClient.Answer nul = api.post("/api/v1/stage", ApiClient.json(Map.of("files", List.of(
                Map.of("path", ok, "targetedMetadata", Map.of("it-site", Map.of("activity", "a\0b")))))));
        assertProblem(nul, 400);
        assertThat(nul.json().get("errors").get(0).get("field").stringValue()).isEqualTo("targetedMetadata");
        assertThat(nul.json().get("errors").get(0).get("index").intValue()).isZero();
        assertThat(api.post("/api/v1/archiveinfo", "{\"files\": []}").status()).isEqualTo(400);
        assertThat(api.get("/api/v1/stage/not-a-uuid").status()).isEqualTo(404);
        assertThat(api.post("/api/v1/stage/" + UUID.randomUUID() + "/cancel", paths(ok)).status()).isEqualTo(404);
        assertThat(jdbc.queryForObject("SELECT count(*) FROM stage_request", Long.class)).isEqualTo(before);
    }

    @Test
    void tooManyOpenRequestsAre429WithRetryAfter() {
        String vol = "Y" + tag;
        jdbc.update("INSERT INTO volume (label) VALUES (?)", vol);
        List<String> ids = new ArrayList<>();
        ApiClient other = otherAccount();
        for (int i = 0; i < 3; i++) {
            // two of ours (the limit per account) and one of another account's: the service's limit of 3
            ApiClient.Answer a = (i < 2 ? api : other).post("/api/v1/stage",
                    ApiClient.json(Map.of("files", List.of(Map.of("path", file("t" + i, vol, "ok"))))));
            assertThat(a.status()).isEqualTo(201);
            ids.add(a.json().get("requestId").stringValue());
        }
        String fourth = ApiClient.json(Map.of("files", List.of(Map.of("path", file("t3", vol, "ok")))));
        ApiClient.Answer refused = other.post("/api/v1/stage", fourth);
        assertProblem(refused, 429);
        assertThat(refused.json().get("detail").stringValue()).contains("the service holds 3 open requests");
        assertThat(other.retryAfter("/api/v1/stage", fourth)).isEqualTo("42");
        // space frees as requests end: admitted again
        assertThat(api.delete("/api/v1/stage/" + ids.getFirst()).status()).isEqualTo(200);
        assertThat(other.post("/api/v1/stage", fourth).status()).isEqualTo(201);
    }

    @Test
    void oneAccountCannotTakeTheWholeQueue() {
        String vol = "Z" + tag;
        jdbc.update("INSERT INTO volume (label) VALUES (?)", vol);
        for (int i = 0; i < 2; i++) {
            assertThat(api.post("/api/v1/stage", ApiClient.json(Map.of("files", List.of(Map.of("path", file("a" + i, vol, "ok"))))))
                    .status()).isEqualTo(201);
        }
        String third = ApiClient.json(Map.of("files", List.of(Map.of("path", file("a2", vol, "ok")))));
        ApiClient.Answer refused = api.post("/api/v1/stage", third);
        assertProblem(refused, 429);
        assertThat(refused.json().get("detail").stringValue()).contains("account " + dev.stagehand.api.security.ApiAccounts.ADMIN)
                .contains("limits per account 2");
        assertThat(api.retryAfter("/api/v1/stage", third)).isEqualTo("42");
        // the service still has room: another account is admitted
        assertThat(otherAccount().post("/api/v1/stage", third).status()).isEqualTo(201);
    }

    @Test
    void gfal2ReleasesWithoutARequestIdAndTheCallersPinsGo() {
        String vol = "G" + tag;
        jdbc.update("INSERT INTO volume (label) VALUES (?)", vol);
        String a = file("ga", vol, "ok"), b = file("gb", vol, "ok");
        // the caller stages a in two requests; another account stages it too
        String first = api.post("/api/v1/stage", ApiClient.json(Map.of("files", List.of(Map.of("path", a), Map.of("path", b)))))
                .json().get("requestId").stringValue();
        String second = api.post("/api/v1/stage", ApiClient.json(Map.of("files", List.of(Map.of("path", a)))))
                .json().get("requestId").stringValue();
        String others = otherAccount().post("/api/v1/stage", ApiClient.json(Map.of("files", List.of(Map.of("path", a)))))
                .json().get("requestId").stringValue();
        recall(LibraryEvents.NONE).until(() -> List.of(first, second, others).stream().allMatch(id ->
                filesOf(api.get("/api/v1/stage/" + id).json()).values().stream()
                        .allMatch(f -> f.get("state").stringValue().equals("COMPLETED"))));
        for (String id : List.of(first, second, others)) assertThat(pins(id, a)).as(id).isEqualTo(1);

        // gfal2 without the request id (FTS3 evicting the source after its copy): 404 before, a and b stayed pinned
        assertThat(api.post("/api/v1/release/gfal2-placeholder-id", paths(a, "/wlcg/" + tag + "/never-staged")).status())
                .isEqualTo(200);
        assertThat(pins(first, a)).isZero();
        assertThat(pins(second, a)).isZero();
        assertThat(pins(first, b)).as("a file not named keeps its pin").isEqualTo(1);
        assertThat(pins(others, a)).as("another account's request keeps its pin").isEqualTo(1);
        assertThat(filesOf(api.get("/api/v1/stage/" + first).json()).get(a).get("onDisk").booleanValue()).isFalse();
        assertThat(api.get("/api/v1/requests/" + second).json().get("released").longValue()).isEqualTo(1);
        // malformed names are refused as with a request id
        assertProblem(api.post("/api/v1/release/gfal2-placeholder-id", paths("relative")), 400);
    }

    long pins(String requestId, String path) {
        return jdbc.queryForObject("SELECT count(*) FROM cache_pin p JOIN file f ON f.id = p.file_id WHERE p.owner = ? AND f.name = ?",
                Long.class, requestId, path);
    }

    ApiClient otherAccount() {
        return ApiClient.as(port, accounts, tokens, "fts-" + tag, dev.stagehand.api.security.ApiRole.ADMIN);
    }

    @Test
    void bothApisAreInTheOpenApiDocument() {
        JsonNode doc = api.get("/v3/api-docs").json();
        assertThat(doc.get("paths").has("/api/v1/requests")).isTrue();
        for (String p : List.of("/.well-known/wlcg-tape-rest-api", "/api/v1/stage", "/api/v1/stage/{id}", "/api/v1/stage/{id}/cancel",
                "/api/v1/release/{id}", "/api/v1/archiveinfo")) {
            assertThat(doc.get("paths").has(p)).as(p).isTrue();
        }
    }
}
