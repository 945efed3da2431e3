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
}
