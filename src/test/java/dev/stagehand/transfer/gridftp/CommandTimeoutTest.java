package dev.stagehand.transfer.gridftp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import dev.stagehand.transfer.MoverSettings;
import dev.stagehand.transfer.TransferFailure;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** MKD and DELE outside any transfer: a server that never answers them fails them within the stall limit. */
class CommandTimeoutTest {

    static MoverSettings settings() {
        return MoverSettings.defaults().withRetry(Duration.ofSeconds(1), 2, Duration.ofMillis(50), Duration.ofSeconds(1));
    }

    @Test
    void aSilentMkdTimesOut() throws Exception {
        try (FakeGridFtpServer server = new FakeGridFtpServer(); GridFtpMover mover = new GridFtpMover(settings(), null)) {
            server.silent = Set.of("MKD");
            URI dir = URI.create("ftp://127.0.0.1:" + server.port() + "/a/b/c");
            assertTimeoutPreemptively(Duration.ofSeconds(20), () ->
                    assertThatThrownBy(() -> mover.makeDirectories(dir)).isInstanceOfSatisfying(TransferFailure.class,
                            f -> assertThat(f.kind()).isEqualTo(TransferFailure.Kind.TIMEOUT)));
            assertThat(server.count("MKD")).as("no MKD after one went unanswered").isEqualTo(1);
        }
    }

    @Test
    void aSilentDeleTimesOutForTheFilesNotDeleted() throws Exception {
        try (FakeGridFtpServer server = new FakeGridFtpServer(); GridFtpMover mover = new GridFtpMover(settings(), null)) {
            server.silent = Set.of("DELE");
            String base = "ftp://127.0.0.1:" + server.port() + "/d/";
            List<URI> files = List.of(URI.create(base + "f1"), URI.create(base + "f2"));
            Map<URI, TransferFailure> failed = assertTimeoutPreemptively(Duration.ofSeconds(20), () -> mover.delete(files));
            assertThat(failed).containsOnlyKeys(files);
            assertThat(failed.values()).allSatisfy(f -> assertThat(f.kind()).isEqualTo(TransferFailure.Kind.TIMEOUT));
        }
    }
}
