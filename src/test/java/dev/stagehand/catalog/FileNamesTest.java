package dev.stagehand.catalog;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class FileNamesTest {

    @ParameterizedTest
    @ValueSource(strings = {"/a", "/atlas/run1/f000001.root", "/a/..b/c", "/a/b../c", "/a/.hidden", "/a//b", "/ü/日本", "/a/\uD83D\uDE00"})
    void acceptsAbsoluteNamesWithoutDotSegments(String path) {
        assertThat(FileNames.problem(path)).isNull();
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "a/b", "./a", "/a/../b", "/..", "/a/..", "/a/./b", "/a/", "/a\u0000b", "/a\tb", "/a\u007f", "/a\u009fb"})
    void refusesTheRest(String path) {
        assertThat(FileNames.problem(path)).isNotBlank();
    }

    /** A lone surrogate (Python's surrogateescape makes them of non-UTF-8 names) is stored by PostgreSQL as '?'. */
    @ParameterizedTest
    @ValueSource(strings = {"/a/\uD800", "/a/\uDCff.root", "/a/\uDE00\uD83D", "/\uD83D"})
    void refusesNamesThatAreNotValidUnicode(String path) {
        assertThat(FileNames.problem(path)).contains("lone surrogate");
    }

    @org.junit.jupiter.api.Test
    void refusesOverlongAndMissingNames() {
        assertThat(FileNames.problem("/" + "x".repeat(FileNames.MAX_LENGTH))).contains("longer");
        assertThat(FileNames.problem(null)).contains("missing");
    }
}
