package dev.stagehand.platform;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.springframework.core.env.MapPropertySource;
import org.springframework.core.env.StandardEnvironment;

/** The settings the records bind, against config/application.yml and against what a configuration names. */
class SettingNamesTest {

    static final SettingNames NAMES = SettingNames.scan();

    @Test
    void everySettingIsDocumentedInConfigApplicationYml() throws IOException {
        Set<String> documented = documentedIn(Path.of("config/application.yml"));
        assertThat(NAMES.documentedKeys()).isNotEmpty()
                .filteredOn(key -> !documented.contains(key))
                .as("settings missing from config/application.yml").isEmpty();
    }

    @Test
    void everyStagehandKeyInConfigApplicationYmlIsASetting() throws IOException {
        assertThat(documentedIn(Path.of("config/application.yml")))
                .filteredOn(key -> key.startsWith("stagehand.") && !NAMES.known(key) && !NAMES.documentedKeys().contains(key)
                        && NAMES.documentedKeys().stream().noneMatch(k -> k.startsWith(key + ".")))
                .as("keys documented in config/application.yml that nothing reads").isEmpty();
    }

    @Test
    void keysAreComparedTheWaySpringBindsThem() {
        assertThat(NAMES.known("stagehand.recall.aging-limit")).isTrue();
        assertThat(NAMES.known("stagehand.recall.agingLimit")).isTrue();
        assertThat(NAMES.known("stagehand.recall.experiment-drive-caps.atlas")).isTrue(); // a map's entry
        assertThat(NAMES.known("stagehand.cache.directories[1].capacity")).isTrue(); // a list's record entry
        assertThat(NAMES.known("stagehand.cache.health.min-free")).isTrue(); // its own record beside stagehand.cache
        assertThat(NAMES.known("stagehand.tape.sim.model.wraps")).isTrue(); // records nested three deep
        assertThat(NAMES.known("stagehand.tape.sim.faults.bad-segments[0]")).isTrue();
        assertThat(NAMES.known("stagehand.db")).isTrue(); // a section left empty in YAML
        assertThat(NAMES.known("stagehand.api")).isTrue(); // a section above stagehand.api.wlcg
        assertThat(NAMES.known("stagehand.tape.sim")).isTrue();
        assertThat(NAMES.known("stagehand.recall.aging-limt")).isFalse();
        assertThat(NAMES.known("stagehand.recall.aging-limit.hours")).isFalse(); // below a plain value
        assertThat(NAMES.known("stagehand.cache.directories.path")).isFalse(); // a list's entry needs its index
        assertThat(NAMES.known("stagehand.recal.aging-limit")).isFalse();
    }

    @Test
    void aMisspeltKeyIsNamedWithTheKeysBesideIt() {
        assertThat(NAMES.problem("stagehand.recall.aging-limt")).get(org.assertj.core.api.InstanceOfAssertFactories.STRING)
                .startsWith("unknown setting stagehand.recall.aging-limt: stagehand.recall has ")
                .contains("aging-limit", "min-mount-bytes");
        assertThat(NAMES.problem("stagehand.recal.aging-limit")).get(org.assertj.core.api.InstanceOfAssertFactories.STRING)
                .contains("stagehand has ").contains("recall", "cache", "tape");
        assertThat(NAMES.problem("stagehand.recall.aging-limit")).isEmpty();
    }

    @Test
    void theStartUpCheckNamesEveryUnknownKeyWithWhereItWasGiven() {
        var env = new StandardEnvironment();
        env.getPropertySources().addFirst(new MapPropertySource("operator.yml", Map.of(
                "stagehand.recall.aging-limit", "2h", "stagehand.recall.aging-limt", "2h",
                "stagehand.transfer.mover.paralelism", "8", "spring.main.banner-mode", "off")));
        assertThat(SettingsCheck.problems(env, NAMES))
                .anySatisfy(p -> assertThat(p).startsWith("unknown setting stagehand.recall.aging-limt:").endsWith("(in operator.yml)"))
                .anySatisfy(p -> assertThat(p).startsWith("unknown setting stagehand.transfer.mover.paralelism:").contains("parallelism"))
                .hasSize(2);
    }

    @Test
    void theServiceRefusesToStartWithAMisspeltKeyBeforeAnythingStarts(@org.junit.jupiter.api.io.TempDir Path tmp) {
        Path pg = tmp.resolve("pg");
        var app = new org.springframework.boot.SpringApplication(dev.stagehand.StagehandApplication.class);
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> app.run("--spring.main.web-application-type=none",
                        "--stagehand.db.local-dir=" + pg, "--stagehand.recall.aging-limt=1h"))
                .isInstanceOf(SettingsCheck.UnknownSettings.class)
                .hasMessageContaining("unknown setting stagehand.recall.aging-limt").hasMessageContaining("(in commandLineArgs)");
        assertThat(pg).doesNotExist(); // no private PostgreSQL cluster was made
    }

    /**
     * The keys config/application.yml documents, commented out or not: a key's parent is the nearest key above it
     * in a lesser column (the comment's "# " counted as indentation, a second "# " not: a key commented out in an
     * example); a dotted stagehand.* key at the top level stands for itself.
     */
    static Set<String> documentedIn(Path yaml) throws IOException {
        Pattern key = Pattern.compile("^(\\s*)(#\\s?)?(\\s*)(-\\s+)?(#\\s?)?([a-z][a-z0-9.-]*):(\\s|$)");
        Set<String> keys = new LinkedHashSet<>();
        Deque<Map.Entry<Integer, String>> path = new ArrayDeque<>();
        for (String line : Files.readAllLines(yaml)) {
            Matcher m = key.matcher(line);
            if (!m.find()) continue;
            int column = m.start(6);
            if (m.group(5) != null) column = m.start(5);
            String name = m.group(6);
            while (!path.isEmpty() && path.peekLast().getKey() >= column) path.removeLast();
            if (name.startsWith("stagehand.") && column <= 2) path.clear();
            path.addLast(Map.entry(column, name));
            keys.add(String.join(".", path.stream().map(Map.Entry::getValue).toList()));
        }
        return keys;
    }
}
