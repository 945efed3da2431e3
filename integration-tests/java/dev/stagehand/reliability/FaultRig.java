package dev.stagehand.reliability;

import dev.stagehand.platform.LocalPostgres;
import dev.stagehand.tape.SimulatedContent;
import dev.stagehand.transfer.GridFtpServer;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.Stream;
import java.util.zip.Adler32;
import org.flywaydb.core.Flyway;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DriverManagerDataSource;

/**
 * One fault-injection scenario's world: a PostgreSQL database of its own (in a cluster under
 * target/fault-pg, apart from the other tests' cluster so it can be stopped), a catalog of small files on
 * a few simulated volumes (checksums are those of the simulated library's content), a loopback anonymous
 * GridFTP destination, and Stagehand services run as separate processes ({@code java -jar
 * target/stagehand.jar serve}) that can be killed with SIGKILL and started again. Reads from tape are
 * counted from the simulated library's read log, which survives the restarts.
 */
final class FaultRig implements AutoCloseable {

    static final Path TARGET = Path.of("target").toAbsolutePath();
    static final Path REPORT = TARGET.resolve("reliability-report.txt");

    final String name;
    final Path dir;
    final LocalPostgres pg;
    final LocalPostgres.Connection db;
    final JdbcTemplate jdbc;
    final Path destDir;
    final Path readLog;
    GridFtpServer destination;
    final List<String> files = new ArrayList<>();
    final Map<String, Long> sizes = new HashMap<>();
    final List<String> requests = new ArrayList<>();
    final List<ServiceProcess> services = new ArrayList<>();
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(3)).build();
    int faults;
    private static boolean reportStarted;

    FaultRig(String name) throws Exception {
        this.name = name;
        this.dir = TARGET.resolve("faults").resolve(name);
        deleteTree(dir);
        Files.createDirectories(dir);
        pg = LocalPostgres.at(TARGET.resolve("fault-pg"));
        db = pg.start("f_" + name.toLowerCase().replaceAll("[^a-z0-9]", "_") + "_" + System.currentTimeMillis());
        Flyway.configure().dataSource(db.url(), db.user(), db.password()).locations("classpath:db/migration").load().migrate();
        jdbc = new JdbcTemplate(new DriverManagerDataSource(db.url(), db.user(), db.password()));
        destDir = dir.resolve("dest");
        GridFtpServer.openUp(destDir);
        destination = GridFtpServer.anonymous(dir.resolve("gridftp"));
        readLog = dir.resolve("reads.log");
    }

    /**
     * {@code volumes} volumes of {@code perVolume} files each, 64 KiB to 1 MiB (seeded); with
     * {@code secondCopies} every file also has a copy on the next volume (other end of the tape).
     */
    void catalog(int volumes, int perVolume, boolean secondCopies, long seed) {
        Random rnd = new Random(seed);
        String tag = name.toLowerCase();
        jdbc.update("INSERT INTO dataset (name, experiment) VALUES (?, 'atlas')", "ds-" + tag);
        long ds = jdbc.queryForObject("SELECT id FROM dataset WHERE name = ?", Long.class, "ds-" + tag);
        long[] vol = new long[volumes];
        long[] end = new long[volumes];
        for (int v = 0; v < volumes; v++) {
            vol[v] = jdbc.queryForObject("INSERT INTO volume (label, library) VALUES (?, 'sim') RETURNING id", Long.class,
                    String.format("R%s%02d", tag.substring(0, Math.min(3, tag.length())).toUpperCase(), v));
        }
        for (int v = 0; v < volumes; v++) {
            for (int i = 0; i < perVolume; i++) {
                String file = String.format("/%s-v%02d-f%03d", tag, v, i);
                long size = 65_536 + rnd.nextInt(1_000_000);
                long id = jdbc.queryForObject("""
                        INSERT INTO file (name, size_bytes, adler32, dataset_id, experiment) VALUES (?, ?, ?, ?, 'atlas')
                        RETURNING id""", Long.class, file, size, SimulatedContent.adler32Hex(file, size), ds);
                // files spread along the tape (a few GB apart): reads need real locates
                end[v] += 2_000_000_000L + rnd.nextInt(1_000_000_000);
                jdbc.update("INSERT INTO segment (file_id, volume_id, offset_bytes) VALUES (?, ?, ?)", id, vol[v], end[v]);
                if (secondCopies) {
                    int w = (v + 1) % volumes;
                    jdbc.update("INSERT INTO segment (file_id, volume_id, offset_bytes) VALUES (?, ?, ?)", id, vol[w],
                            9_000_000_000_000L + end[v]);
                }
                files.add(file);
                sizes.put(file, size);
            }
        }
    }

    /** Volume label and file name of the {@code i}-th catalog file's first copy. */
    String volumeOf(String file) {
        return jdbc.queryForObject("""
                SELECT v.label FROM segment s JOIN volume v ON v.id = s.volume_id JOIN file f ON f.id = s.file_id
                 WHERE f.name = ? ORDER BY s.offset_bytes LIMIT 1""", String.class, file);
    }

    /** A service process on this rig's database; {@code extra} are further --key=value settings. */
    ServiceProcess service(String instance, Map<String, String> extra) {
        Map<String, String> p = new LinkedHashMap<>();
        p.put("stagehand.db.url", db.url());
        p.put("stagehand.db.user", db.user());
        p.put("stagehand.db.password", db.password());
        p.put("stagehand.db.pool-size", "8");
        p.put("stagehand.tape.clock", "scaled");
        p.put("stagehand.tape.scale", "100");
        p.put("stagehand.tape.drives", "2");
        p.put("stagehand.tape.accessors", "1");
        p.put("stagehand.tape.sim.root", dir.resolve("tape").toString());
        p.put("stagehand.tape.sim.read-log", readLog.toString());
        p.put("stagehand.cache.directories[0].path", dir.resolve("cache-" + instance).toString());
        p.put("stagehand.cache.directories[0].capacity", "200MB");
        p.put("stagehand.cache.directories[0].create-missing", "true");
        p.put("stagehand.cache.node", instance);
        p.put("stagehand.recall.instance-id", instance);
        p.put("stagehand.recall.poll-interval", "500ms");
        p.put("stagehand.recall.lease", "20s");
        p.put("stagehand.recall.cache-batch-bytes", "4000000");
        p.put("stagehand.transfer.queue.instance-id", instance);
        p.put("stagehand.transfer.queue.poll-interval", "300ms");
        p.put("stagehand.transfer.queue.lease", "30s");
        p.put("stagehand.transfer.mover.stall-timeout", "4s");
        p.put("stagehand.transfer.mover.backoff", "250ms");
        p.put("stagehand.transfer.mover.max-attempts", "20");
        p.put("stagehand.transfer.mover.host-quarantine", "1s");
        p.put("stagehand.transfer.mover.concurrency", "2");
        p.put("stagehand.console.admin-password", "fault-injection");
        p.put("logging.level.dev.stagehand.tape.SimulatedLibrary", "DEBUG"); // each read list, for a duplicate read's post-mortem
        p.putAll(extra);
        ServiceProcess s = new ServiceProcess(instance, dir, p);
        services.add(s);
        return s;
    }

    /** Submits one stage request of {@code names} through the native API, destination the GridFTP server. */
    String submit(ServiceProcess via, List<String> names) throws Exception {
        StringBuilder body = new StringBuilder("{\"experiment\":\"atlas\",\"destination\":\"")
                .append(destination.url(destDir)).append("\",\"files\":[");
        for (int i = 0; i < names.size(); i++) body.append(i == 0 ? "" : ",").append('"').append(names.get(i)).append('"');
        body.append("]}");
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(via.base() + "/api/v1/requests"))
                .header("Authorization", "Bearer " + ServiceProcess.TOKEN).header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body.toString())).build(),
                HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 201) throw new IllegalStateException("submit: " + r.statusCode() + " " + r.body());
        String id = r.body().replaceAll("(?s).*\"id\"\\s*:\\s*\"([0-9a-f-]+)\".*", "$1");
        requests.add(id);
        return id;
    }

    /** Requests of this rig not yet ended (submitted or active); -1 while the database is away. */
    int openRequests() {
        try {
            return jdbc.queryForObject("""
                    SELECT count(*) FROM stage_request WHERE id = ANY(?::uuid[]) AND state IN ('submitted', 'active')""",
                    Integer.class, (Object) requests.toArray(String[]::new));
        } catch (RuntimeException dbAway) {
            return -1;
        }
    }

    /** Files of this rig's requests now done (delivered and verified); -1 while the database is away. */
    int filesDone() {
        try {
            return jdbc.queryForObject("""
                    SELECT count(*) FROM stage_request_file WHERE request_id = ANY(?::uuid[]) AND state = 'done'""",
                    Integer.class, (Object) requests.toArray(String[]::new));
        } catch (RuntimeException dbAway) {
            return -1;
        }
    }

    /** Waits until every request ended or {@code limit} passed; true if all ended. */
    boolean awaitEnd(Duration limit) throws InterruptedException {
        long deadline = System.nanoTime() + limit.toNanos();
        while (System.nanoTime() < deadline) {
            if (openRequests() == 0) return true;
            for (ServiceProcess s : services) s.checkAlive();
            Thread.sleep(250);
        }
        return false;
    }

    /** Waits until at least {@code n} files are done (the run is under way), or {@code limit} passed. */
    void awaitFilesDone(int n, Duration limit) throws InterruptedException {
        long deadline = System.nanoTime() + limit.toNanos();
        while (System.nanoTime() < deadline && filesDone() < n) Thread.sleep(100);
    }

    /** What the run came to: requests, delivered files checked against the catalog, tape reads. */
    Report report(String scenario, String faultsText) throws IOException {
        int submitted = requests.size();
        Map<String, Integer> states = new HashMap<>();
        jdbc.query("SELECT state, count(*) FROM stage_request WHERE id = ANY(?::uuid[]) GROUP BY state",
                rs -> { states.put(rs.getString(1), rs.getInt(2)); }, (Object) requests.toArray(String[]::new));
        int completed = states.getOrDefault("done", 0);
        int failed = states.getOrDefault("failed", 0);
        List<String> doneFiles = jdbc.queryForList("""
                SELECT DISTINCT f.name FROM stage_request_file x JOIN file f ON f.id = x.file_id
                 WHERE x.request_id = ANY(?::uuid[]) AND x.state = 'done'""", String.class, (Object) requests.toArray(String[]::new));
        int notDone = jdbc.queryForObject("""
                SELECT count(*) FROM stage_request_file WHERE request_id = ANY(?::uuid[]) AND state <> 'done'""",
                Integer.class, (Object) requests.toArray(String[]::new));
        int corrupt = 0;
        List<String> corruptNames = new ArrayList<>();
        for (String f : doneFiles) {
            Path p = destDir.resolve(f.substring(1));
            long size = sizes.get(f);
            if (!Files.exists(p) || Files.size(p) != size || adler32(p) != SimulatedContent.adler32(f, size)) {
                corrupt++;
                corruptNames.add(f);
            }
        }
        Reads reads = reads();
        int lost = submitted - completed - failed;
        Report r = new Report(scenario, submitted, completed, failed, lost, notDone, doneFiles.size(), corrupt, corruptNames,
                reads, faults, faultsText);
        String line = r.line();
        System.out.println(line);
        synchronized (FaultRig.class) {
            if (!reportStarted) { // one report per suite run (one failsafe JVM), not an ever-growing file
                Files.writeString(REPORT, "# fault-injection suite, " + java.time.Instant.now() + System.lineSeparator());
                reportStarted = true;
            }
            Files.writeString(REPORT, line + System.lineSeparator(), StandardCharsets.UTF_8, StandardOpenOption.APPEND);
        }
        return r;
    }

    /** Tape reads per file from the read log: successful reads, and those by one process more than once. */
    Reads reads() throws IOException {
        Map<String, Integer> ok = new HashMap<>();
        Map<String, Integer> failed = new HashMap<>();
        Map<String, Long> lastPid = new HashMap<>();
        int samePid = 0;
        if (Files.exists(readLog)) {
            for (String line : Files.readAllLines(readLog)) {
                String[] f = line.split(" ", 6);
                if (f.length < 6) continue;
                String file = f[5];
                if (f[2].equals("ok")) {
                    ok.merge(file, 1, Integer::sum);
                    Long pid = Long.parseLong(f[1]);
                    if (pid.equals(lastPid.put(file, pid))) samePid++;
                } else {
                    failed.merge(file, 1, Integer::sum);
                }
            }
        }
        int total = ok.values().stream().mapToInt(Integer::intValue).sum();
        int failedTotal = failed.values().stream().mapToInt(Integer::intValue).sum();
        return new Reads(total, ok.size(), total - ok.size(), samePid, failedTotal, ok);
    }

    record Reads(int ok, int files, int duplicates, int duplicatesInOneProcess, int failed, Map<String, Integer> perFile) {}

    record Report(String scenario, int submitted, int completed, int failed, int lost, int filesNotDone, int filesDelivered,
                  int corrupt, List<String> corruptNames, Reads reads, int faultCount, String faults) {
        String line() {
            return String.format("RELIABILITY %s: requests submitted %d / completed %d / failed %d / lost %d; files delivered %d,"
                            + " not done %d, corrupt %d; tape reads %d of %d files, duplicate reads %d (same process %d),"
                            + " failed reads %d; faults injected %d: %s",
                    scenario, submitted, completed, failed, lost, filesDelivered, filesNotDone, corrupt, reads.ok(), reads.files(),
                    reads.duplicates(), reads.duplicatesInOneProcess(), reads.failed(), faultCount, faults);
        }
    }

    /** The suite's common verdict: everything asked for was delivered, intact. */
    static void assertNothingLost(boolean ended, Report r) {
        assertNothingLost(ended, r, 0);
    }

    /** @param refusedReads reads the cache refused by checksum (injected corruption): each justifies a re-read */
    static void assertNothingLost(boolean ended, Report r, int refusedReads) {
        org.assertj.core.api.Assertions.assertThat(ended).as("every request ended in time").isTrue();
        org.assertj.core.api.Assertions.assertThat(r.lost()).as("requests lost").isZero();
        org.assertj.core.api.Assertions.assertThat(r.failed()).as("requests failed").isZero();
        org.assertj.core.api.Assertions.assertThat(r.filesNotDone()).as("files not delivered").isZero();
        org.assertj.core.api.Assertions.assertThat(r.corrupt()).as("corrupt deliveries %s", r.corruptNames()).isZero();
        org.assertj.core.api.Assertions.assertThat(r.reads().duplicatesInOneProcess()).as("files read twice by one process")
                .isEqualTo(refusedReads);
    }

    /** Submits {@code requests} requests splitting the catalog's files between them. */
    void submitAll(ServiceProcess via, int requests) throws Exception {
        int per = (files.size() + requests - 1) / requests;
        for (int i = 0; i < files.size(); i += per) submit(via, files.subList(i, Math.min(files.size(), i + per)));
    }

    static long adler32(Path p) throws IOException {
        Adler32 a = new Adler32();
        try (InputStream in = Files.newInputStream(p)) {
            byte[] buf = new byte[1 << 16];
            for (int n; (n = in.read(buf)) > 0; ) a.update(buf, 0, n);
        }
        return a.getValue();
    }

    /** Restarts the destination server on a new port is not possible for queued rows: same port, new process. */
    void restartDestination() throws Exception {
        int port = destination.port;
        destination.kill();
        destination = GridFtpServer.anonymousOn(dir.resolve("gridftp"), port);
    }

    @Override
    public void close() throws Exception {
        for (ServiceProcess s : services) s.kill();
        if (destination != null) destination.close();
        pg.stop();
    }

    static void deleteTree(Path p) throws IOException {
        if (!Files.exists(p)) return;
        try (Stream<Path> walk = Files.walk(p)) {
            for (Path q : walk.sorted(Comparator.reverseOrder()).toList()) Files.deleteIfExists(q);
        }
    }
}
