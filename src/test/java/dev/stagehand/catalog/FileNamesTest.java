package dev.stagehand.catalog;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class FileNamesTest {

    @ParameterizedTest
    @ValueSource(strings = {"/a", "/atlas/run1/f000001.root", "/a/..b/c", "/a/b../c", "/a/.hidden", "/a//b", "/ü/日本"})
    void acceptsAbsoluteNamesWithoutDotSegments(String path) {
        assertThat(FileNames.problem(path)).isNull();
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "a/b", "./a", "/a/../b", "/..", "/a/..", "/a/./b", "/a/", "/a\u0000b", "/a\tb", "/a\u007f", "/a\u009fb"})
    void refusesTheRest(String path) {
        assertThat(FileNames.problem(path)).isNotBlank();
    }

    @org.junit.jupiter.api.Test
    void refusesOverlongAndMissingNames() {
        assertThat(FileNames.problem("/" + "x".repeat(FileNames.MAX_LENGTH))).contains("longer");
        assertThat(FileNames.problem(null)).contains("missing");
    }
}
