package dev.stagehand.recall.service;

import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.cache.DiskCache;
import dev.stagehand.platform.ScaledClock;
import dev.stagehand.recall.RecallProperties;
import dev.stagehand.tape.DriveRoles;
import dev.stagehand.tape.DriveState;
import dev.stagehand.tape.DriveStateStore;
import dev.stagehand.tape.DriveStatus;
import dev.stagehand.tape.LibraryEvents;
import dev.stagehand.tape.LibraryLayout;
import dev.stagehand.tape.ScriptLibrary;
import dev.stagehand.tape.SharedDrives;
import dev.stagehand.tape.TapeFailure;
import dev.stagehand.tape.TapeLibrary;
import dev.stagehand.tape.TapeModel;
import dev.stagehand.tape.TapeProperties;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.zip.Adler32;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Two service instances drive one physical library (config/examples/script-driver/dirlib.sh over one directory)
 * through the script driver, on one database: with shared drives each drive is used by one instance at a time,
 * and a drive whose instance died is taken over with the cartridge it left in it.
 */
@SpringBootTest(properties = {"stagehand.recall.enabled=false"})
class SharedLibraryIT {

    static final Path DIRLIB = Path.of("config/examples/script-driver/dirlib.sh").toAbsolutePath();

    @Autowired
    JdbcTemplate jdbc;

    @Autowired
    JdbcClient db;

    @Autowired
    TransactionTemplate tx;

    @TempDir
    Path tmp;

    String tag, libraryName;
    /** The test's two instances, a-{@code tag} and b-{@code tag} (set by {@link #name}). */
    String ia, ib;
    /** Each instance's view of the library, with shared drives, not started; the requests {@link #catalog} made (set by {@link #open}). */
    SharedDrives libA, libB;
    List<UUID> requests;
    final List<String> collisions = Collections.synchronizedList(new ArrayList<>());
    final List<String> mountFailures = Collections.synchronizedList(new ArrayList<>());
    final List<String> dismounts = Collections.synchronizedList(new ArrayList<>());
    /** Which instance's cartridge is in each drive of the physical library, as the instances' events tell. */
    final Map<String, String> occupant = new HashMap<>();
    /** The physical library the test opened. */
    LibraryShape shape = LibraryShape.ONE_DRIVE;
    /** Mounts under way in the physical library, by any instance, now and at most; mounts ended. */
    int mountsUnderWay, mostMountsUnderWay, mountsEnded;
    /** Mounts started, by instance. */
    final Map<String, Integer> mountsStarted = new HashMap<>();

    /**
     * The physical library's drives, the seconds its mounts and dismounts take (the robot's exchange; 0: at once), and
     * the mounts each instance's recall scheduler may have under way at once per accessor.
     */
    record LibraryShape(List<String> drives, int mountSeconds, int dismountSeconds, int exchangesPerAccessor) {
        /** One drive, exchanges at once, four under way per accessor. */
        static final LibraryShape ONE_DRIVE = new LibraryShape(List.of("drive01"), 0, 0, 4);
        /** Two drives and one accessor, each scheduler allowed one exchange under way at it; exchanges at once. */
        static final LibraryShape TWO_DRIVES_ONE_EXCHANGE = new LibraryShape(List.of("drive01", "drive02"), 0, 0, 1);

        LibraryShape mountsTaking(int seconds) {
            return new LibraryShape(drives, seconds, dismountSeconds, exchangesPerAccessor);
        }

        LibraryShape dismountsTaking(int seconds) {
            return new LibraryShape(drives, mountSeconds, seconds, exchangesPerAccessor);
        }
    }

    /** Names the test's library ({@code letter} and a random tag) and its two instances. */
    void name(String letter) {
        tag = letter + UUID.randomUUID().toString().substring(0, 6);
        libraryName = "shared-" + tag;
        ia = "a-" + tag;
        ib = "b-" + tag;
    }

    /** Names the library, gives it {@code shape}, catalogues its volumes and builds both instances' views of it. */
    void open(String letter, LibraryShape shape) throws Exception {
        name(letter);
        this.shape = shape;
        requests = catalog();
        libA = (SharedDrives) library(ia, true);
        libB = (SharedDrives) library(ib, true);
    }

    /** One instance's view of the physical library: its events tell the occupancy tracker. */
    TapeLibrary library(String instance, boolean shared) {
        DriveStateStore store = new DriveStateStore(db);
        List<String> base = List.of(DIRLIB.toString(), tmp.resolve("lib").toString());
        TapeProperties.Script cfg = new TapeProperties.Script(slow(base, "mount", shape.mountSeconds()), cmd(base, "read"), cmd(base, "write"),
                slow(base, "dismount", shape.dismountSeconds()), tmp.resolve("work-" + instance), Duration.ofSeconds(30), Duration.ofSeconds(30),
                Duration.ofSeconds(30), Duration.ofSeconds(30), TapeProperties.WriteChecksum.TRUST_SOURCE);
        LibraryEvents tracker = new LibraryEvents() {
            @Override
            public void mountStarted(String drive, String volume, Instant at) {
                synchronized (occupant) {
                    String there = occupant.get(drive);
                    if (there != null && !there.equals(instance)) collisions.add(instance + " mounts " + volume + " on " + drive + " holding " + there + "'s cartridge");
                    occupant.put(drive, instance);
                    mostMountsUnderWay = Math.max(mostMountsUnderWay, ++mountsUnderWay);
                    mountsStarted.merge(instance, 1, Integer::sum);
                }
            }

            @Override
            public void mountFinished(String drive, String volume, Instant at, TapeFailure failure) {
                synchronized (occupant) {
                    mountsUnderWay--;
                    mountsEnded++;
                }
                if (failure != null) mountFailures.add(instance + ": " + failure.getMessage());
            }

            @Override
            public void dismounted(String drive, String volume, Instant at) {
                dismounts.add(instance + " " + volume);
                synchronized (occupant) {
                    occupant.remove(drive);
                }
            }
        };
        List<DriveStatus> rows = store.load(libraryName); // as TapeConfiguration builds it
        if (shared) rows = SharedDrives.rowsToRestore(db, libraryName, instance, rows);
        ScriptLibrary script = new ScriptLibrary(new LibraryLayout(libraryName, shape.drives(), 1), cfg,
                LibraryEvents.all(List.of(store, tracker)), rows);
        return shared ? new SharedDrives(script, db, tx, store, instance, Duration.ofSeconds(2)) : script;
    }

    /** dirlib's {@code verb}, taking {@code seconds} first (the robot's exchange). */
    List<String> slow(List<String> base, String verb, int seconds) {
        return seconds == 0 ? cmd(base, verb)
                : List.of("sh", "-c", "sleep " + seconds + "; exec \"$0\" \"$@\"", DIRLIB.toString(), tmp.resolve("lib").toString(), verb);
    }

    static List<String> cmd(List<String> base, String verb) {
        List<String> c = new ArrayList<>(base);
        c.add(verb);
        return c;
    }

    RecallProperties props(String instance, Duration idleDismount) {
        return new RecallProperties(true, "tape-aware", 1_000_000L, Duration.ZERO, Duration.ofSeconds(3), instance,
                500_000_000_000L, 10_000, Duration.ofMinutes(5), Duration.ofHours(4), idleDismount,
                2_000_000_000_000L, 20_000, shape.exchangesPerAccessor(), Map.of(), Map.of());
    }

    /** Volumes {@code tag}a and {@code tag}b of three files each in dirlib's slots, catalogued; one request per volume. */
    List<UUID> catalog() throws Exception {
        Random r = new Random(7);
        List<UUID> requests = new ArrayList<>();
        for (String v : List.of("a", "b")) {
            String label = tag + v;
            Path slot = Files.createDirectories(tmp.resolve("lib/slots/" + label));
            long vol = jdbc.queryForObject("INSERT INTO volume (label, library) VALUES (?, ?) RETURNING id", Long.class, label, libraryName);
            UUID req = UUID.randomUUID();
            jdbc.update("INSERT INTO stage_request (id, owner, experiment, file_count) VALUES (?, 'it', 'atlas', 3)", req);
            long offset = 0;
            for (int k = 0; k < 3; k++) {
                byte[] b = new byte[10_000 + k];
                r.nextBytes(b);
                Files.write(slot.resolve(Long.toString(offset)), b);
                Adler32 a = new Adler32();
                a.update(b);
                long id = jdbc.queryForObject("INSERT INTO file (name, size_bytes, adler32, experiment) VALUES (?, ?, ?, 'atlas') RETURNING id",
                        Long.class, "/it/shared/" + tag + "/" + v + k, b.length, String.format("%08x", a.getValue()));
                jdbc.update("INSERT INTO segment (file_id, volume_id, offset_bytes) VALUES (?, ?, ?)", id, vol, offset);
                jdbc.update("INSERT INTO stage_request_file (request_id, file_id, ordinal) VALUES (?, ?, ?)", req, id, k + 1);
                offset += b.length;
            }
            requests.add(req);
        }
        return requests;
    }

    boolean allDone(List<UUID> requests) {
        return jdbc.queryForObject("SELECT count(*) FROM stage_request WHERE id = ANY(?) AND state <> 'done'", Integer.class,
                (Object) requests.toArray(UUID[]::new)) == 0;
    }

    /** Polls {@code services} every 100 ms until the requests are all done or {@code within} has passed. */
    void pollUntilAllDone(Duration within, RecallService... services) throws InterruptedException {
        long until = System.nanoTime() + within.toNanos();
        while (!allDone(requests) && System.nanoTime() < until) {
            for (RecallService s : services) s.poll();
            Thread.sleep(100);
        }
    }

    RecallService service(String instance, TapeLibrary lib, Duration idleDismount) {
        return service(instance, lib, idleDismount, ScaledClock.real());
    }

    RecallService service(String instance, TapeLibrary lib, Duration idleDismount, dev.stagehand.platform.EventClock clock) {
        DiskCache cache = TestCaches.cache(db, tx, tmp.resolve("cache-" + instance), 1_000_000_000L, instance, clock);
        return new RecallService(jdbc, lib, clock, TapeModel.lto9(), props(instance, idleDismount), cache);
    }

    @Test
    void twoInstancesSharingOneLibraryNeverMountOnEachOthersDrive() throws Exception {
        open("S", LibraryShape.ONE_DRIVE);
        libA.start();
        libB.start();
        RecallService a = service(ia, libA, Duration.ofSeconds(1)), b = service(ib, libB, Duration.ofSeconds(1));
        a.start();
        b.start();
        try {
            pollUntilAllDone(Duration.ofSeconds(60), a, b);
        } finally {
            a.stop();
            b.stop();
            libA.close();
            libB.close();
        }
        assertThat(collisions).as("a drive is one instance's at a time").isEmpty();
        assertThat(mountFailures).isEmpty();
        assertThat(allDone(requests)).isTrue();
        assertThat(jdbc.queryForObject("SELECT count(*) FROM drive_lease WHERE library = ?", Integer.class, libraryName))
                .as("leases given up on shutdown").isZero();
    }

    /**
     * Two instances on one library of two drives and one accessor, each scheduler allowed one mount under way per
     * accessor: while A's mount is under way B starts none, though it has work and a free drive; it mounts once A's
     * has ended. Each counted only its own mounts, so B started its own beside A's: two exchanges queued at a robot
     * that serves one. The mount under way is noted in A's drive lease, which B counts.
     */
    @Test
    void anInstanceCountsTheMountsAnotherHasUnderWayAgainstTheAccessors() throws Exception {
        open("X", LibraryShape.TWO_DRIVES_ONE_EXCHANGE.mountsTaking(4));
        libA.start();
        libB.start();
        RecallService a = service(ia, libA, Duration.ofSeconds(1)), b = service(ib, libB, Duration.ofSeconds(1));
        a.start();
        try {
            long until = System.nanoTime() + 30_000_000_000L;
            while (mountsUnderWay() == 0 && System.nanoTime() < until) {
                a.poll();
                Thread.sleep(50);
            }
            assertThat(mountsUnderWay()).as("A is mounting").isEqualTo(1);
            b.start();
            pollUntilAllDone(Duration.ofSeconds(60), a, b);
        } finally {
            a.stop();
            b.stop();
            libA.close();
            libB.close();
        }
        assertThat(allDone(requests)).isTrue();
        assertThat(mostMountsUnderWay).as("mounts under way at once in the library, both instances'").isEqualTo(1);
        assertThat(collisions).isEmpty();
        assertThat(mountFailures).isEmpty();
    }

    int mountsUnderWay() {
        synchronized (occupant) {
            return mountsUnderWay;
        }
    }

    int mountsEnded() {
        synchronized (occupant) {
            return mountsEnded;
        }
    }

    int mountsStartedBy(String instance) {
        synchronized (occupant) {
            return mountsStarted.getOrDefault(instance, 0);
        }
    }

    /**
     * Two instances on one library of two drives and one accessor (one mount under way per accessor), deciding a
     * mount at the same instant: both passes are held at their look at the exchanges under way (the test holds
     * drive_lease locked) and let go together. Looking and noting were two steps, so each saw none under way and
     * both started a mount. Now the count and the note are one step: one mounts, the other's pass starts none, and a
     * later pass of either mounts the second volume once the first mount has ended.
     */
    @Test
    void twoInstancesDecidingAMountAtTheSameInstantStartOneBetweenThem() throws Exception {
        open("R", LibraryShape.TWO_DRIVES_ONE_EXCHANGE.mountsTaking(2));
        // the lease rounds start once the passes are let go: held at the lock, a round would hold the library's
        // monitor, which the intake needs before it asks for a pass
        libA.sync();
        libB.sync();
        // each instance's scheduler uses a drive of its own: they decide for different drives (on one drive the lease
        // taken at the mount kept the second off it)
        RecallService a = service(ia, DriveRoles.restrictTo(libA, List.of("drive01")), Duration.ofSeconds(1)),
                b = service(ib, DriveRoles.restrictTo(libB, List.of("drive02")), Duration.ofSeconds(1));
        a.start();
        b.start();
        ExecutorService intake = Executors.newFixedThreadPool(2);
        try {
            try (Connection gate = jdbc.getDataSource().getConnection()) {
                gate.setAutoCommit(false);
                try (Statement st = gate.createStatement()) {
                    st.execute("LOCK TABLE drive_lease IN ACCESS EXCLUSIVE MODE");
                }
                Future<?> pa = intake.submit(a::poll), pb = intake.submit(b::poll);
                long until = System.nanoTime() + 10_000_000_000L;
                while (passesLooking() < 2 && System.nanoTime() < until) Thread.sleep(20);
                int looking = passesLooking();
                gate.commit();
                assertThat(looking).as("both passes wait at their look").isEqualTo(2);
                pa.get(10, TimeUnit.SECONDS);
                pb.get(10, TimeUnit.SECONDS);
            }
            libA.start();
            libB.start();
            pollUntilAllDone(Duration.ofSeconds(20), a, b);
        } finally {
            intake.shutdownNow();
            a.stop();
            b.stop();
            libA.close();
            libB.close();
        }
        assertThat(mostMountsUnderWay).as("mounts under way at once in the library, both instances'").isEqualTo(1);
        assertThat(allDone(requests)).as("the second volume mounted after the first (nothing lost)").isTrue();
        assertThat(mountsEnded()).isEqualTo(2);
        assertThat(collisions).isEmpty();
        assertThat(mountFailures).isEmpty();
    }

    /** Sessions waiting on a lock at a count of the exchanges under way (the schedulers' look). */
    int passesLooking() {
        return jdbc.queryForObject("""
                SELECT count(*) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND wait_event_type = 'Lock'
                   AND query LIKE '%count(*) FROM drive_lease%'""", Integer.class);
    }

    /**
     * A dismount holds an accessor only for its last move, after minutes of rewind and unthread: with one exchange
     * per accessor, B mounts while A is dismounting, as no scheduler counts its own dismounts. Counted whole, they
     * held B's mounts back while the robot was free (bench/shared-library.sh: makespan 0.81-0.89 of that at 16/1).
     */
    @Test
    void anInstanceDoesNotHoldItsMountsBackForADismountAnotherHasUnderWay() throws Exception {
        open("U", LibraryShape.TWO_DRIVES_ONE_EXCHANGE.dismountsTaking(5));
        Files.createDirectories(tmp.resolve("lib/slots/" + tag + "z")); // A's own cartridge, no request's
        libA.start();
        libB.start();
        RecallService b = service(ib, libB, Duration.ofSeconds(1));
        int duringDismount = 0;
        try {
            libA.mount("drive01", tag + "z").get(30, TimeUnit.SECONDS);
            CompletableFuture<Void> out = libA.dismount("drive01");
            b.start();
            while (!out.isDone()) {
                b.poll();
                Thread.sleep(100);
                int started = mountsStartedBy(ib);
                if (!out.isDone()) duringDismount = started; // started while A's dismount was still under way
            }
            out.get();
            pollUntilAllDone(Duration.ofSeconds(20), b);
        } finally {
            b.stop();
            libA.close();
            libB.close();
        }
        assertThat(duringDismount).as("B's mounts started while A's dismount was under way").isPositive();
        assertThat(allDone(requests)).isTrue();
        assertThat(mountFailures).isEmpty();
    }

    /**
     * An instance starting while another is mounting on a shared drive took that drive's row for its own state
     * cut off by a stop: it warned that the drive 'was MOUNTING when the service stopped' and held it FAILED behind
     * ELSEWHERE. It now leaves such a drive alone; if that instance dies mid-mount, the takeover reads the row then.
     */
    @Test
    @org.junit.jupiter.api.extension.ExtendWith(org.springframework.boot.test.system.OutputCaptureExtension.class)
    void anInstanceStartingWhileAnotherMountsDoesNotTakeThatMountForOneItsStopCutOff(
            org.springframework.boot.test.system.CapturedOutput output) throws Exception {
        name("M");
        // A is mounting on drive01: its lease and its row
        jdbc.update("INSERT INTO drive_lease (library, drive, instance, lease_until) VALUES (?, 'drive01', ?, now() + interval '1 minute')",
                libraryName, ia);
        new DriveStateStore(db).save(libraryName, new DriveStatus("drive01", DriveState.MOUNTING, tag + "a", 0));
        libB = (SharedDrives) library(ib, true);
        libB.sync();
        try {
            assertThat(libB.drives().getFirst().state()).isEqualTo(DriveState.ELSEWHERE);
            assertThat(output.getAll()).as("no warning about a mount B never made").doesNotContain("when the service stopped");
            assertThat(libB.script().drives().getFirst().state()).isEqualTo(DriveState.EMPTY);

            // A dies mid-mount: B takes the drive over as A's row says, and now the cut-off mount is B's to report
            jdbc.update("UPDATE drive_lease SET lease_until = now() - interval '1 second' WHERE library = ?", libraryName);
            libB.sync();
            assertThat(libB.drives().getFirst()).isEqualTo(new DriveStatus("drive01", DriveState.FAILED, tag + "a", 0));
            assertThat(output.getAll()).contains("was MOUNTING " + tag + "a when the service stopped");
        } finally {
            libB.close();
        }
    }

    @Test
    void aDriveWhoseInstanceDiedWithItsCartridgeInItIsTakenOverAndUsed() throws Exception {
        open("D", LibraryShape.ONE_DRIVE);
        // A never dismounts by itself (a long idle time) and renews its leases only while it lives (sync by hand)
        libA.sync();
        libB.sync();
        // A's scheduler runs on a clock only this test moves: once A is dead, nothing of it acts any more
        dev.stagehand.platform.VirtualClock clockA = new dev.stagehand.platform.VirtualClock();
        RecallService a = service(ia, libA, Duration.ofMinutes(10), clockA), b = service(ib, libB, Duration.ofSeconds(1));
        a.start();
        long until = System.nanoTime() + 30_000_000_000L;
        while (libA.drives().getFirst().state() != DriveState.MOUNTED_IDLE && System.nanoTime() < until) {
            a.poll();
            clockA.advance(Duration.ofMillis(100));
            libA.sync();
            Thread.sleep(100);
        }
        String held = libA.drives().getFirst().volume();
        assertThat(held).as("A mounted a volume").isNotNull();
        b.start();
        b.poll();
        libB.sync();
        assertThat(libB.drives().getFirst().state()).isEqualTo(DriveState.ELSEWHERE);
        // A dies: it neither polls nor renews from here
        try {
            until = System.nanoTime() + 60_000_000_000L;
            while (!allDone(requests) && System.nanoTime() < until) {
                libB.sync();
                b.poll();
                Thread.sleep(100);
            }
        } finally {
            b.stop();
            libB.close();
            a.stop();
        }
        assertThat(collisions).as("B took A's cartridge over as it was, and never mounted on it").isEmpty();
        assertThat(mountFailures).isEmpty();
        assertThat(allDone(requests)).isTrue();
        assertThat(dismounts).as("B unloaded the cartridge A left in the drive").contains(ib + " " + held);
        assertThat(dismounts).as("A did nothing after its death").noneMatch(d -> d.startsWith(ia));
        List<DriveStatus> rows = new DriveStateStore(db).load(libraryName);
        assertThat(rows).extracting(DriveStatus::state).doesNotContain(DriveState.FAILED);
    }
}
