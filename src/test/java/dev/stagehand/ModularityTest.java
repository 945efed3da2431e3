package dev.stagehand;

import org.junit.jupiter.api.Test;
import org.springframework.modulith.core.ApplicationModules;

/**
 * Keeps the module graph one-way: each module's package-info declares what it may use, internals
 * (sub-packages) stay hidden, and no cycles. Fails the build on a dependency against that flow.
 */
class ModularityTest {

    @Test
    void modulesDependOnlyOnWhatTheyDeclare() {
        ApplicationModules.of(StagehandApplication.class).verify();
    }
}
