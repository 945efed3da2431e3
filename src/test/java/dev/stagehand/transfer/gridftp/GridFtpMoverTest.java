package dev.stagehand.transfer.gridftp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.stagehand.transfer.CopyBatch;
import dev.stagehand.transfer.FileCopy;
import dev.stagehand.transfer.MoverSettings;
import dev.stagehand.transfer.TransferFailure;
import java.net.URI;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** What the mover does with a batch before any connection: a file it cannot prepare fails alone. */
class GridFtpMoverTest {

    @Test
    void aFileThatCannotBePreparedFailsAloneAsABadRequest() throws Exception {
        FileCopy remoteHost = new FileCopy("1", URI.create("file://otherhost/cache/f"), URI.create("ftp://127.0.0.1:9/d/f1"), 10, null);
        FileCopy badPort = new FileCopy("2", URI.create("ftp://src:port/d/f"), URI.create("ftp://127.0.0.1:9/d/f2"), 10, null);
        try (GridFtpMover mover = new GridFtpMover(MoverSettings.defaults(), null)) {
            CopyBatch batch = mover.submit(List.of(remoteHost, badPort));
            for (FileCopy c : List.of(remoteHost, badPort)) {
                assertThatThrownBy(() -> batch.result(c).get(10, TimeUnit.SECONDS))
                        .isInstanceOf(ExecutionException.class)
                        .cause().isInstanceOfSatisfying(TransferFailure.class, f -> {
                            assertThat(f.kind()).isEqualTo(TransferFailure.Kind.BAD_REQUEST);
                            assertThat(f.getMessage()).contains(c.source().toString());
                        });
            }
        }
    }

    @Test
    void aDestinationWithABadPortOrAnEmptyHostIsRefusedAsABadRequest() throws Exception {
        // port 0 was refused by the kernel (CONNECTION: waited out as an outage for a day), 70000 failed as
        // PROTOCOL after every retry, and an empty host in a host list ("" resolves to this machine) was tried
        List<FileCopy> bad = List.of(
                new FileCopy("1", URI.create("file:///etc/hostname"), URI.create("ftp://127.0.0.1:70000/d/f1"), 10, null),
                new FileCopy("2", URI.create("file:///etc/hostname"), URI.create("ftp://127.0.0.1:0/d/f2"), 10, null),
                new FileCopy("3", URI.create("file:///etc/hostname"), URI.create("ftp://,127.0.0.1:9/d/f3"), 10, null),
                new FileCopy("4", URI.create("ftp://127.0.0.1:99999/d/f"), URI.create("ftp://127.0.0.1:9/d/f4"), 10, null));
        try (GridFtpMover mover = new GridFtpMover(MoverSettings.defaults(), null)) {
            CopyBatch batch = mover.submit(bad);
            for (FileCopy c : bad) {
                assertThatThrownBy(() -> batch.result(c).get(2, TimeUnit.SECONDS))
                        .as(c.toString())
                        .isInstanceOf(ExecutionException.class)
                        .cause().isInstanceOfSatisfying(TransferFailure.class,
                                f -> assertThat(f.kind()).isEqualTo(TransferFailure.Kind.BAD_REQUEST));
            }
        }
    }
}
