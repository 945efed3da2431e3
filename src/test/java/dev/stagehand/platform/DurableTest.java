package dev.stagehand.platform;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The real fsync, as the drivers and the cache call it: a file (through a read-only descriptor, as for a file a
 * site script wrote and this service may not write) and its directory can be forced on this platform, and a
 * missing file says so as NoSuchFileException (the script driver leaves that case to the cache's commit).
 */
class DurableTest {

    @TempDir
    Path tmp;

    @Test
    void aReadOnlyFileAndItsDirectoryAreForced() throws Exception {
        Path dir = Files.createDirectory(tmp.resolve("0a"));
        Path file = Files.write(dir.resolve("10.1"), new byte[4096]);
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("r--r--r--"));
        Durable.FSYNC.force(file);
        Durable.fsyncDirectory(tmp);
        assertThat(Files.size(file)).isEqualTo(4096);
    }

    @Test
    void aMissingFileIsNoSuchFile() {
        assertThatThrownBy(() -> Durable.FSYNC.force(tmp.resolve("gone"))).isInstanceOf(NoSuchFileException.class);
    }
}
