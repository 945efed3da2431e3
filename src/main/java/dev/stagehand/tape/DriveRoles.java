package dev.stagehand.tape;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * Which drives write ({@code stagehand.tape.roles.*}): the last {@code writeDrives} drives of the library
 * are reserved for the archive path, the others belong to the recall scheduler. Both schedulers keep their
 * own view of the drives they run, so splitting the drives between them (as CTA does with its read and
 * write mounts) keeps them from mounting on each other's drives. 0 gives every drive to recall and leaves
 * archive flushing off.
 *
 * @param writeDrives how many drives (counted from the last) the archive path writes with
 */
@ConfigurationProperties("stagehand.tape.roles")
public record DriveRoles(@DefaultValue("1") int writeDrives) {

    public DriveRoles {
        if (writeDrives < 0) throw new IllegalArgumentException("stagehand.tape.roles.write-drives must be >= 0, was " + writeDrives);
    }

    /** The drives the archive path writes with (at most all but one: recall keeps a drive). */
    public List<String> writeDrives(LibraryLayout layout) {
        List<String> all = layout.drives();
        int n = Math.min(writeDrives, Math.max(0, all.size() - 1));
        return List.copyOf(all.subList(all.size() - n, all.size()));
    }

    /** The drives the recall scheduler reads with. */
    public List<String> readDrives(LibraryLayout layout) {
        List<String> w = writeDrives(layout);
        return layout.drives().stream().filter(d -> !w.contains(d)).toList();
    }

    /** {@code library} as seen by its readers: only the read drives. */
    public TapeLibrary forReading(TapeLibrary library) {
        return restrictTo(library, readDrives(library.layout()));
    }

    /**
     * A view of {@code library} showing only {@code drives} (layout and drive states); operations go to
     * the library itself.
     */
    public static TapeLibrary restrictTo(TapeLibrary library, Collection<String> drives) {
        Set<String> keep = Set.copyOf(drives);
        if (keep.containsAll(library.layout().drives())) return library;
        LibraryLayout all = library.layout();
        List<String> names = new ArrayList<>();
        for (String d : all.drives()) if (keep.contains(d)) names.add(d);
        LibraryLayout layout = new LibraryLayout(all.name(), List.copyOf(names), all.accessors());
        return new TapeLibrary() {
            public LibraryLayout layout() { return layout; }
            public List<DriveStatus> drives() { return library.drives().stream().filter(s -> keep.contains(s.drive())).toList(); }
            public CompletableFuture<Void> mount(String drive, String volume) { return library.mount(drive, volume); }
            public ReadBatch read(String drive, List<SegmentRead> segments) { return library.read(drive, segments); }
            public boolean readsWithoutTarget() { return library.readsWithoutTarget(); }
            public boolean dropsCancelledReads() { return library.dropsCancelledReads(); }
            public int exchangesUnderWayBesides(Collection<String> drives) { return library.exchangesUnderWayBesides(drives); }
            public boolean reserveMount(String drive, Collection<String> drives, int budget) { return library.reserveMount(drive, drives, budget); }
            public WriteBatch write(String drive, List<FileWrite> files) { return library.write(drive, files); }
            public CompletableFuture<Void> dismount(String drive) { return library.dismount(drive); }
            public void setEnabled(String drive, boolean enabled) { library.setEnabled(drive, enabled); }
            public CompletableFuture<Void> recover(String drive) { return library.recover(drive); }
        };
    }
}
