package dev.stagehand.cache;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;
import org.springframework.util.unit.DataSize;

/** Cache directories are healthy while one is writable with room on its file system. */
class CacheHealthTest {

    @TempDir Path tmp;

    CacheProperties dirs(Path... paths) {
        return new CacheProperties(java.util.Arrays.stream(paths).map(p -> new CacheProperties.Directory(p, DataSize.ofGigabytes(1))).toList(), "n");
    }

    @Test
    void upWhileOneDirectoryIsUsableDownWhenNone() throws Exception {
        Path good = Files.createDirectories(tmp.resolve("good"));
        Path missing = tmp.resolve("missing");
        Health h = new CacheHealth(dirs(good, missing), DataSize.ofBytes(1)).health();
        assertThat(h.getStatus()).isEqualTo(Status.UP);
        assertThat(h.getDetails()).containsEntry("usableDirectories", 1);
        @SuppressWarnings("unchecked")
        Map<String, Map<String, Object>> d = (Map<String, Map<String, Object>>) h.getDetails().get("directories");
        assertThat(d.get(missing.toString())).containsEntry("usable", false).containsEntry("problem", "missing or not a directory");
        assertThat(d.get(good.toString())).containsEntry("usable", true).containsKey("freeBytes");
        assertThat(Files.list(good)).isEmpty(); // the write probe leaves nothing behind

        assertThat(new CacheHealth(dirs(missing), DataSize.ofBytes(1)).health().getStatus()).isEqualTo(Status.DOWN);
        // a file system with less free space than the minimum: not usable
        Health full = new CacheHealth(dirs(good), DataSize.ofBytes(Long.MAX_VALUE)).health();
        assertThat(full.getStatus()).isEqualTo(Status.DOWN);
        assertThat(full.getDetails().get("directories").toString()).contains("file system full");
        assertThat(List.of(full.getDetails().get("reason"))).containsExactly("no usable cache directory");
    }
}
