package dev.stagehand.cache;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.boot.context.properties.bind.BindException;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.MapConfigurationPropertySource;
import org.springframework.util.unit.DataSize;

/** {@code stagehand.cache.*} binds as documented in config/application.yml. */
class CachePropertiesTest {

    static CacheProperties bind(Map<String, String> props) {
        return new Binder(new MapConfigurationPropertySource(props))
                .bindOrCreate("stagehand.cache", Bindable.of(CacheProperties.class));
    }

    @Test
    void defaultIsOneDirectoryOf50GB() {
        CacheProperties p = bind(Map.of());
        assertThat(p.directories()).containsExactly(
                new CacheProperties.Directory(Path.of("var/cache"), DataSize.ofGigabytes(50), true));
        assertThat(p.directories().getFirst().path()).isAbsolute();
        assertThat(p.node()).isEmpty();
    }

    @Test
    void severalDirectoriesWithCapacities() {
        CacheProperties p = bind(Map.of(
                "stagehand.cache.directories[0].path", "/data/c1",
                "stagehand.cache.directories[0].capacity", "2TB",
                "stagehand.cache.directories[1].path", "/data/c2",
                "stagehand.cache.node", "stage-01"));
        assertThat(p.directories()).extracting(CacheProperties.Directory::path)
                .containsExactly(Path.of("/data/c1"), Path.of("/data/c2"));
        assertThat(p.directories().get(0).capacity()).isEqualTo(DataSize.ofTerabytes(2));
        assertThat(p.directories().get(1).capacity()).isEqualTo(DataSize.ofGigabytes(50));
        assertThat(p.node()).isEqualTo("stage-01");
        assertThat(p.directories()).as("a configured directory must exist unless create-missing is set")
                .noneMatch(CacheProperties.Directory::createMissing);
        assertThat(p.nodeWait()).hasSeconds(90);
        assertThat(bind(Map.of("stagehand.cache.directories[0].path", "/data/c1",
                "stagehand.cache.directories[0].create-missing", "true")).directories().getFirst().createMissing()).isTrue();
        assertThat(p.directories()).as("a directory need not be a mount point unless require-mount is set")
                .noneMatch(CacheProperties.Directory::requireMount);
        assertThat(bind(Map.of("stagehand.cache.directories[0].path", "/data/c1",
                "stagehand.cache.directories[0].require-mount", "true")).directories().getFirst().requireMount()).isTrue();
    }

    @Test
    void badSettingsAreRefusedClearly() {
        assertThatThrownBy(() -> bind(Map.of(
                "stagehand.cache.directories[0].path", "/data/c1",
                "stagehand.cache.directories[1].path", "/data/c1/../c1")))
                .isInstanceOf(BindException.class).rootCause().hasMessageContaining("listed twice");
        assertThatThrownBy(() -> bind(Map.of("stagehand.cache.directories[0].capacity", "1GB")))
                .isInstanceOf(BindException.class).rootCause().hasMessageContaining("path must be set");
    }

    @Test
    void theHealthChecksMarksAreReadAgainEveryTenSecondsUnlessSetOtherwise() {
        Binder empty = new Binder(new MapConfigurationPropertySource(Map.of()));
        CacheHealthProperties h = empty.bindOrCreate("stagehand.cache.health", Bindable.of(CacheHealthProperties.class));
        assertThat(h.refreshInterval()).hasSeconds(10);
        assertThat(h.minFree()).isEqualTo(DataSize.ofMegabytes(256));
        assertThatThrownBy(() -> new Binder(new MapConfigurationPropertySource(Map.of("stagehand.cache.health.refresh-interval", "0s")))
                .bindOrCreate("stagehand.cache.health", Bindable.of(CacheHealthProperties.class)))
                .isInstanceOf(BindException.class).rootCause().hasMessageContaining("refresh-interval must be positive");
    }
}
