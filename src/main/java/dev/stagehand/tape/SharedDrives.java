package dev.stagehand.tape;

import dev.stagehand.platform.DatabaseRetry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.transaction.TransactionException;
import org.springframework.transaction.support.TransactionOperations;

/**
 * One physical library shared by several service instances through the script driver: each instance keeps its
 * own view of the drives, so without this each took every drive as its own and mounted on drives another
 * instance was using (volume leases only kept them off the same cartridge). A drive is used by the instance
 * holding its lease ({@code drive_lease}, V53): taken at its mount, held while the drive is not empty (failed
 * and disabled drives included), renewed every quarter of the lease and given up once the drive is empty
 * again, and on shutdown. The other instances see the drive {@link DriveState#ELSEWHERE}. A lease whose holder
 * died lapses; the first instance to look then takes the drive over as its holder left it (its
 * {@code tape_drive} row), a cartridge still in it included.
 */
public final class SharedDrives implements TapeLibrary, AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(SharedDrives.class);

    private final ScriptLibrary library;
    private final JdbcClient jdbc;
    private final TransactionOperations tx;
    private final DriveStateStore rows;
    private final String instance;
    private final Duration lease;
    private final String name;
    /** Drives whose lease this instance holds. */
    private final Set<String> mine = new HashSet<>();
    /** Drives another instance holds a live lease on, with its name, as last looked. */
    private final Map<String, String> elsewhere = new HashMap<>();
    /** Drives with a mount noted by {@link #reserveMount} that {@link #mount} has not started yet. */
    private final Set<String> reserved = new HashSet<>();
    private ScheduledExecutorService renewer;

    public SharedDrives(ScriptLibrary library, JdbcClient jdbc, TransactionOperations tx, DriveStateStore rows,
            String instance, Duration lease) {
        this.library = library;
        this.jdbc = jdbc;
        this.tx = tx;
        this.rows = rows;
        this.instance = instance;
        this.lease = lease;
        this.name = library.layout().name();
    }

    /**
     * The saved drive rows a starting instance's script driver is built from: all but those of drives another
     * instance holds a live lease on. That instance is using them, and a mount or dismount it has under way was not
     * cut off by a stop: restored, such a drive was held FAILED with a warning that it was MOUNTING when the service
     * stopped. Its row is read when this instance takes the drive ({@link ScriptLibrary#adopt}); until then it is
     * {@link DriveState#ELSEWHERE} here.
     */
    public static List<DriveStatus> rowsToRestore(JdbcClient jdbc, String library, String instance, List<DriveStatus> persisted) {
        Set<String> held = new HashSet<>(jdbc.sql(
                "SELECT drive FROM drive_lease WHERE library = ? AND instance <> ? AND lease_until >= now()")
                .params(library, instance).query(String.class).list());
        return persisted.stream().filter(s -> !held.contains(s.drive())).toList();
    }

    /** Looks once, then keeps the leases renewed (every quarter of the lease) until {@link #close}. */
    public synchronized SharedDrives start() {
        sync();
        renewer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "drive-leases");
            t.setDaemon(true);
            return t;
        });
        long ms = Math.max(250, lease.toMillis() / 4);
        renewer.scheduleWithFixedDelay(this::syncLogged, ms, ms, TimeUnit.MILLISECONDS);
        return this;
    }

    /** The script driver under the leases (its health is the library's). */
    public ScriptLibrary script() {
        return library;
    }

    public String instance() {
        return instance;
    }

    private void syncLogged() {
        try {
            sync();
        } catch (RuntimeException e) {
            // the next round renews again; a lease lapsed meanwhile is taken back if nobody took the drive
            if (!DatabaseRetry.noteFailure("drive leases", e)) log.warn("library {}: drive leases not renewed", name, e);
        }
    }

    /**
     * One round: renews this instance's leases, gives up those of its drives that are empty again, notes which
     * drives other instances use, and takes over drives whose holder's lease lapsed with something in them (a
     * cartridge, or a failed or disabled drive) as their rows say. A free empty drive is left to the first mount.
     */
    public synchronized void sync() {
        // a mount noted under way that has ended (its own clearing did not get through) stops counting
        Set<String> mounting = new HashSet<>(reserved);
        for (DriveStatus s : library.drives()) if (s.state() == DriveState.MOUNTING) mounting.add(s.drive());
        Set<String> renewed = new HashSet<>(jdbc.sql("""
                UPDATE drive_lease SET lease_until = now() + make_interval(secs => ?),
                       mounting_since = CASE WHEN drive = ANY(?) THEN mounting_since END
                 WHERE library = ? AND instance = ? RETURNING drive""")
                .params(lease.toMillis() / 1000.0, mounting.toArray(String[]::new),
                        name, instance).query(String.class).list());
        for (String d : new ArrayList<>(mine)) {
            if (!renewed.contains(d)) {
                // our lease lapsed (a long database outage) and another instance took the drive
                log.error("library {}: the lease on drive {} lapsed and was taken by another instance; this instance"
                        + " no longer uses it", name, d);
                mine.remove(d);
            }
        }
        mine.addAll(renewed); // ours from before a restart under the same name
        for (DriveStatus s : library.drives()) {
            if (mine.contains(s.drive()) && s.state() == DriveState.EMPTY && !reserved.contains(s.drive())) {
                jdbc.sql("DELETE FROM drive_lease WHERE library = ? AND drive = ? AND instance = ?")
                        .params(name, s.drive(), instance).update();
                mine.remove(s.drive());
            }
        }
        elsewhere.clear();
        jdbc.sql("SELECT drive, instance FROM drive_lease WHERE library = ? AND instance <> ? AND lease_until >= now()")
                .params(name, instance).query((rs, i) -> elsewhere.put(rs.getString(1), rs.getString(2))).list();
        Map<String, DriveStatus> persisted = persisted();
        for (String d : library.layout().drives()) {
            if (mine.contains(d) || elsewhere.containsKey(d)) continue;
            DriveStatus row = persisted.getOrDefault(d, new DriveStatus(d, DriveState.EMPTY, null, 0));
            if (row.state() == DriveState.EMPTY) {
                library.adopt(row); // what this instance remembered of it is stale
            } else if (claim(d)) {
                library.adopt(row);
                mine.add(d);
                log.warn("library {}: drive {} taken over as its last holder left it ({}{}): that instance's lease lapsed",
                        name, d, row.state(), row.volume() == null ? "" : " " + row.volume());
            }
        }
    }

    private Map<String, DriveStatus> persisted() {
        Map<String, DriveStatus> m = new HashMap<>();
        for (DriveStatus s : rows.load(name)) m.put(s.drive(), s);
        return m;
    }

    /** Takes the drive's lease: free, lapsed or already ours; false while another instance holds it. */
    private boolean claim(String drive) {
        return jdbc.sql("""
                INSERT INTO drive_lease (library, drive, instance, lease_until)
                VALUES (?, ?, ?, now() + make_interval(secs => ?))
                ON CONFLICT (library, drive) DO UPDATE SET instance = excluded.instance, lease_until = excluded.lease_until,
                       acquired_at = CASE WHEN drive_lease.instance = excluded.instance THEN drive_lease.acquired_at ELSE now() END,
                       mounting_since = CASE WHEN drive_lease.instance = excluded.instance THEN drive_lease.mounting_since END
                 WHERE drive_lease.instance = excluded.instance OR drive_lease.lease_until < now()""")
                .params(name, drive, instance, lease.toMillis() / 1000.0).update() == 1;
    }

    /**
     * Makes the drive this instance's before it acts on it: its lease taken and its state read from its row when
     * it was not ours. Null when it is; else why not (another instance holds it, or the database did not answer).
     */
    private synchronized String own(String drive) {
        if (mine.contains(drive)) return null;
        try {
            if (!claim(drive)) {
                String holder = jdbc.sql("SELECT instance FROM drive_lease WHERE library = ? AND drive = ?")
                        .params(name, drive).query(String.class).optional().orElse("another instance");
                elsewhere.put(drive, holder);
                return "drive " + drive + " is in use by " + holder + ", which shares library " + name;
            }
            library.adopt(persisted().getOrDefault(drive, new DriveStatus(drive, DriveState.EMPTY, null, 0)));
        } catch (DataAccessException e) {
            return "cannot take the lease of drive " + drive + ": " + e.getMessage();
        }
        mine.add(drive);
        elsewhere.remove(drive);
        return null;
    }

    @Override
    public LibraryLayout layout() {
        return library.layout();
    }

    @Override
    public synchronized List<DriveStatus> drives() {
        List<DriveStatus> out = new ArrayList<>();
        for (DriveStatus s : library.drives()) {
            out.add(!mine.contains(s.drive()) && elsewhere.containsKey(s.drive())
                    ? new DriveStatus(s.drive(), DriveState.ELSEWHERE, null, 0) : s);
        }
        return out;
    }

    @Override
    public CompletableFuture<Void> mount(String drive, String volume) {
        synchronized (this) { // with sync(): an empty drive of ours is not given up between the claim and the mount
            reserved.remove(drive);
            String refused = own(drive);
            if (refused != null)
                return CompletableFuture.failedFuture(new TapeFailure(TapeFailure.Kind.DRIVE_FAILURE, drive, volume, refused));
            DriveStatus s = library.drives().stream().filter(x -> x.drive().equals(drive)).findFirst().orElseThrow();
            if (s.state() != DriveState.EMPTY) // its last holder left something in it: the caller sees it next time
                return CompletableFuture.failedFuture(new TapeFailure(TapeFailure.Kind.DRIVE_FAILURE, drive, volume,
                        "drive is " + s.state() + (s.volume() == null ? "" : " with " + s.volume()) + " as its last holder left it"));
            noteMount(drive, true);
            CompletableFuture<Void> f = library.mount(drive, volume);
            f.whenComplete((v, e) -> noteMount(drive, false));
            return f; // the library's own: cancelling it abandons the mount
        }
    }

    /**
     * Counts the exchanges under way and notes this mount as one in a single step, under a lock per library that
     * every instance's reservation takes: two instances looking at the same instant each counted the other's mount
     * not yet noted, and both started one. The drive's lease is taken first (a refusal is left to {@link #mount}, which
     * reports it). The note is kept until {@link #mount} follows; not noted (the database did not answer), the mount
     * goes on, as an unnoted one does there.
     */
    @Override
    public synchronized boolean reserveMount(String drive, Collection<String> besides, int budget) {
        if (own(drive) != null) return true;
        String[] exclude = besides.stream().filter(d -> !d.equals(drive)).toArray(String[]::new);
        try {
            boolean got = Boolean.TRUE.equals(tx.execute(status -> {
                // a statement of its own: the count after it sees the notes committed by whoever held the lock before
                jdbc.sql("SELECT pg_advisory_xact_lock(hashtext('drive_lease ' || ?))").params(name).query().listOfRows();
                if (underWay(exclude) >= budget) return false;
                jdbc.sql("UPDATE drive_lease SET mounting_since = now() WHERE library = ? AND drive = ? AND instance = ?")
                        .params(name, drive, instance).update();
                return true;
            }));
            if (got) reserved.add(drive);
            return got;
        } catch (DataAccessException | TransactionException e) {
            if (!DatabaseRetry.noteFailure("drive leases", e)) log.warn("library {}: mount on drive {} not reserved", name, drive, e);
            return true;
        }
    }

    /**
     * Notes in the drive's lease that a mount is under way on it (or no longer): the other instances count it
     * against the robot's accessors ({@link #exchangesUnderWayBesides}). Not noted (the database did not answer),
     * the mount goes on; a note not cleared is cleared by the next lease round, which sees the drive no longer
     * mounting.
     */
    private void noteMount(String drive, boolean underWay) {
        try {
            jdbc.sql("UPDATE drive_lease SET mounting_since = CASE WHEN ? THEN now() END WHERE library = ? AND drive = ? AND instance = ?")
                    .params(underWay, name, drive, instance).update();
        } catch (DataAccessException e) {
            if (!DatabaseRetry.noteFailure("drive leases", e))
                log.warn("library {}: the mount on drive {} not noted as {} in its lease", name, drive,
                        underWay ? "started" : "ended", e);
        }
    }

    /**
     * Mounts under way on the library's other drives, this instance's and the other instances' (their leases live):
     * one library's accessors serve them all. Each instance's scheduler counted only its own, so two together started
     * twice the exchanges the robot can serve. Dismounts are not counted, as no scheduler counts its own: one holds an
     * accessor only for its last move, after minutes of rewind and unthread, and counted whole they held mounts back
     * while the robot was free (bench/shared-library.sh, two instances: makespan 0.81-0.89 of counting them at
     * 16 drives / 1 accessor, never more than 1.06 elsewhere). 0 when the database does not answer (a mount then is
     * refused anyway: its drive's lease cannot be taken).
     */
    @Override
    public int exchangesUnderWayBesides(Collection<String> drives) {
        try {
            return underWay(drives.toArray(String[]::new));
        } catch (DataAccessException e) {
            if (!DatabaseRetry.noteFailure("drive leases", e)) log.warn("library {}: exchanges under way not counted", name, e);
            return 0;
        }
    }

    private int underWay(String[] besides) {
        return jdbc.sql("""
                SELECT count(*) FROM drive_lease
                 WHERE library = ? AND lease_until >= now() AND mounting_since IS NOT NULL
                   AND NOT (drive = ANY(?))""")
                .params(name, besides).query(Integer.class).single();
    }

    @Override
    public ReadBatch read(String drive, List<SegmentRead> segments) {
        return library.read(drive, segments);
    }

    @Override
    public boolean readsWithoutTarget() {
        return library.readsWithoutTarget();
    }

    @Override
    public boolean dropsCancelledReads() {
        return library.dropsCancelledReads();
    }

    @Override
    public WriteBatch write(String drive, List<FileWrite> files) {
        return library.write(drive, files);
    }

    @Override
    public CompletableFuture<Void> dismount(String drive) {
        return library.dismount(drive);
    }

    /** An operator's action on a drive another instance uses is refused: it is taken there. */
    @Override
    public synchronized void setEnabled(String drive, boolean enabled) {
        String refused = own(drive);
        if (refused != null) throw new IllegalStateException(refused + "; disable or enable it there");
        library.setEnabled(drive, enabled);
    }

    /**
     * Not noted as an exchange under way (unlike {@link #mount} and {@link #dismount}): the operator had the HSM take
     * the cartridge out of the failed drive before this; the script driver moves nothing here ({@link
     * ScriptLibrary#recover}).
     */
    @Override
    public synchronized CompletableFuture<Void> recover(String drive) {
        String refused = own(drive);
        if (refused != null) throw new IllegalStateException(refused + "; recover it there");
        return library.recover(drive);
    }

    /** Stops renewing and gives up this instance's leases: another instance takes its drives as they are. */
    @Override
    public void close() {
        ScheduledExecutorService r;
        synchronized (this) {
            r = renewer;
            renewer = null;
        }
        if (r != null) r.shutdownNow();
        try {
            synchronized (this) {
                jdbc.sql("DELETE FROM drive_lease WHERE library = ? AND instance = ?").params(name, instance).update();
                mine.clear();
            }
        } catch (DataAccessException e) {
            log.warn("library {}: drive leases not released on shutdown; they lapse in {}", name, lease, e);
        }
    }
}
