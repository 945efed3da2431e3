package dev.stagehand.tape;

import java.util.Collection;
import java.util.HashSet;
import java.util.Set;

/**
 * Faults a {@link SimulatedLibrary} injects, set from configuration ({@code stagehand.tape.sim.faults.*})
 * or at any time through this API. Thread-safe.
 * <ul>
 * <li>bad segment: reading file {@code name} from volume {@code v} fails with MEDIA_ERROR (every time);</li>
 * <li>corrupt segment: reading it succeeds but one byte delivered is altered (silent corruption: only the
 *     checksum of what was written shows it);</li>
 * <li>failing drive: the drive fails half-way through the next segment it reads or file it writes
 *     (DRIVE_FAILURE); it goes FAILED with its volume stuck in it until {@link SimulatedLibrary#recover};</li>
 * <li>hanging mount: the next mount of the volume never finishes loading; the caller gets TIMEOUT after
 *     the mount timeout and the drive goes FAILED with the cartridge in it;</li>
 * <li>missing volume: mounts fail with VOLUME_UNAVAILABLE until it is restored;</li>
 * <li>corrupt write: every write of file {@code name} stores its bytes with one altered (a drive writing bad
 *     data: only the checksum of the copy shows it).</li>
 * </ul>
 */
public final class FaultPlan {

    private final Set<String> badSegments = new HashSet<>();
    private final Set<String> corruptSegments = new HashSet<>();
    private final Set<String> corruptFirstCopies = new HashSet<>();
    private final Set<String> failingDrives = new HashSet<>();
    private final Set<String> hangingMounts = new HashSet<>();
    private final Set<String> missingVolumes = new HashSet<>();
    private final Set<String> corruptWrites = new HashSet<>();

    /** From configuration: bad segments as {@code VOLUME:file-name}, the rest as plain names. */
    public static FaultPlan of(Collection<String> badSegments, Collection<String> failingDrives,
            Collection<String> hangingMounts, Collection<String> missingVolumes) {
        FaultPlan p = new FaultPlan();
        for (String s : badSegments) {
            int i = s.indexOf(':');
            if (i <= 0 || i == s.length() - 1)
                throw new IllegalArgumentException("bad segment must be VOLUME:file-name, was '" + s + "'");
            p.badSegment(s.substring(0, i), s.substring(i + 1));
        }
        failingDrives.forEach(p::failDrive);
        hangingMounts.forEach(p::hangMount);
        missingVolumes.forEach(p::missingVolume);
        return p;
    }

    public synchronized FaultPlan badSegment(String volume, String fileName) {
        badSegments.add(volume + '\0' + fileName);
        return this;
    }

    /** Reading file {@code fileName} from {@code volume} delivers its bytes with one of them altered. */
    public synchronized FaultPlan corruptSegment(String volume, String fileName) {
        corruptSegments.add(volume + '\0' + fileName);
        return this;
    }

    /**
     * The copy of {@code fileName} that is read first, from whichever volume, is corrupt (and stays so, like
     * {@link #corruptSegment}): for tests where the scheduler may pick either copy of a file.
     */
    public synchronized FaultPlan corruptFirstCopy(String fileName) {
        corruptFirstCopies.add(fileName);
        return this;
    }

    public synchronized FaultPlan failDrive(String drive) {
        failingDrives.add(drive);
        return this;
    }

    public synchronized FaultPlan hangMount(String volume) {
        hangingMounts.add(volume);
        return this;
    }

    public synchronized FaultPlan missingVolume(String volume) {
        missingVolumes.add(volume);
        return this;
    }

    public synchronized FaultPlan corruptWrite(String fileName) {
        corruptWrites.add(fileName);
        return this;
    }

    public synchronized FaultPlan restoreVolume(String volume) {
        missingVolumes.remove(volume);
        return this;
    }

    /** Removes every fault. */
    public synchronized void clear() {
        badSegments.clear();
        corruptSegments.clear();
        corruptFirstCopies.clear();
        failingDrives.clear();
        hangingMounts.clear();
        missingVolumes.clear();
        corruptWrites.clear();
    }

    synchronized boolean isBad(String volume, String fileName) {
        return !badSegments.isEmpty() && badSegments.contains(volume + '\0' + fileName);
    }

    synchronized boolean isCorrupt(String volume, String fileName) {
        if (!corruptFirstCopies.isEmpty() && corruptFirstCopies.remove(fileName)) corruptSegments.add(volume + '\0' + fileName);
        return !corruptSegments.isEmpty() && corruptSegments.contains(volume + '\0' + fileName);
    }

    /** True once: the drive fails now. */
    synchronized boolean takeDriveFailure(String drive) {
        return !failingDrives.isEmpty() && failingDrives.remove(drive);
    }

    /** True once: this mount hangs. */
    synchronized boolean takeHang(String volume) {
        return !hangingMounts.isEmpty() && hangingMounts.remove(volume);
    }

    synchronized boolean isCorruptWrite(String fileName) {
        return !corruptWrites.isEmpty() && corruptWrites.contains(fileName);
    }

    synchronized boolean isMissing(String volume) {
        return !missingVolumes.isEmpty() && missingVolumes.contains(volume);
    }
}
