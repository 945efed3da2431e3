package dev.stagehand.cache;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What require-mount takes for a mount point: a directory on another device than its parent. /proc is mounted in
 * every Linux system and container; a directory made under the test's temporary directory is not a mount point.
 */
class MountPointTest {

    @TempDir
    Path tmp;

    @Test
    void aMountedFileSystemsRootIsAMountPointAndADirectoryUnderItIsNot() throws Exception {
        assertThat(DiskCache.isMountPoint(Path.of("/"))).isTrue();
        assertThat(DiskCache.isMountPoint(Path.of("/proc"))).isTrue();
        assertThat(DiskCache.isMountPoint(Files.createDirectory(tmp.resolve("mnt")))).isFalse();
        assertThat(DiskCache.isMountPoint(tmp.resolve("missing"))).isFalse();
    }

    @Test
    void twoDirectoriesOfOneFileSystemAreTheSameFileSystem() throws Exception {
        Path a = Files.createDirectory(tmp.resolve("a"));
        Path b = Files.createDirectory(tmp.resolve("b"));
        assertThat(DiskCache.fileSystemOf(a)).isEqualTo(DiskCache.fileSystemOf(b)).isNotEqualTo(DiskCache.fileSystemOf(Path.of("/proc")));
    }
}
