package dev.stagehand.recall.scheduler;

import static dev.stagehand.recall.scheduler.Harness.file;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class QueueModelTest {

    static final long GB = 1_000_000_000L;

    @Test
    void aFileListedTwiceInARequestCountsOnceAndASecondRequestForTheSameFilesJoinsEachOnce() {
        QueueModel m = new QueueModel();
        var a = file(1, "V1", 0, GB);
        var b = file(2, "V1", GB, GB);
        RequestWork r1 = m.addRequest("r1", 0, 0, "exp", List.of(a, b, a), v -> false);
        assertThat(r1.files()).extracting(FileWork::id).containsExactly(1L, 2L);
        assertThat(r1.remaining).isEqualTo(2);
        RequestWork r2 = m.addRequest("r2", 1, 0, "exp", List.of(b, a, b), v -> false);
        assertThat(r2.files()).extracting(FileWork::id).containsExactly(2L, 1L);
        assertThat(r2.remaining).isEqualTo(2);
        assertThat(m.queue("V1").fileCount()).as("each file queued once for both").isEqualTo(2);
        assertThat(m.file(1).requests()).containsExactly(r1, r2);
        assertThat(m.file(2).requests()).containsExactly(r1, r2);
        assertThat(r2.queuedPerVolume).containsEntry("V1", 2);
    }

    /**
     * A large request taken in slices (the service's intake): until its last slice it does not end, even with
     * every file taken so far on disk, and no volume counts as completing it; then it is whole, as if taken at once.
     */
    @Test
    void aRequestTakenInSlicesEndsOnlyAfterItsLastSliceAndNoVolumeCompletesItBefore() {
        QueueModel m = new QueueModel();
        var a = file(1, "V1", 0, GB);
        var b = file(2, "V1", GB, GB);
        var c = file(3, "V2", 0, GB);
        RequestWork r = m.addRequest("r", 0, 5, "exp", List.of(a, b), true, v -> false);
        assertThat(r.intakePending()).isTrue();
        assertThat(r.files()).extracting(FileWork::id).containsExactly(1L, 2L);
        assertThat(m.queue("V1").completable()).as("more files may come on other volumes").isZero();
        assertThat(m.onDisk(m.file(1), 1)).isEmpty();
        assertThat(m.onDisk(m.file(2), 2)).as("every file taken so far on disk: not ended, more come").isEmpty();
        assertThat(r.finished()).isFalse();

        List<FileWork> added = m.addFiles("r", List.of(c), true, 3, v -> false);
        assertThat(added).extracting(FileWork::id).containsExactly(3L);
        assertThat(m.file(3).priority).as("the request's priority").isEqualTo(5);
        assertThat(m.file(3).firstArrival).as("its arrival: as if it came with the request").isEqualTo(0);
        assertThat(m.queue("V2").completable()).isZero();

        assertThat(m.addFiles("r", List.of(), false, 4, v -> false)).isEmpty();
        assertThat(r.intakePending()).isFalse();
        assertThat(m.queue("V2").completable()).as("whole now: V2 completes it").isEqualTo(1);
        assertThat(r.bytes()).isEqualTo(3 * GB);
        assertThat(m.onDisk(m.file(3), 5)).containsExactly(r);
        assertThat(r.finished()).isTrue();
        assertThat(r.completedAt()).isEqualTo(5);
        assertThat(m.queue("V2").completable()).isZero();
    }

    /** A request whose last slice brings nothing to read (its last files were on disk) ends with that slice. */
    @Test
    void aLastSliceWithNothingLeftToReadEndsTheRequest() {
        QueueModel m = new QueueModel();
        RequestWork r = m.addRequest("r", 0, 0, "exp", List.of(file(1, "V1", 0, GB)), true, v -> false);
        m.onDisk(m.file(1), 1);
        m.addFiles("r", List.of(), false, 7, v -> false);
        assertThat(r.finished()).isTrue();
        assertThat(r.completedAt()).isEqualTo(7);
    }
}
