package dev.stagehand.platform;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.joran.JoranConfigurator;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** config/logback-events.xml puts the event lines, and only them, in a file of their own. */
class EventsLogbackConfigTest {

    @TempDir Path tmp;

    @Test
    void eventLinesGoToTheirOwnFileWithATimestamp() throws Exception {
        Path file = tmp.resolve("events.log");
        LoggerContext ctx = new LoggerContext();
        ctx.setMDCAdapter(new ch.qos.logback.classic.util.LogbackMDCAdapter()); // a context of its own needs one
        ctx.putProperty("stagehand.events.file", file.toString());
        JoranConfigurator joran = new JoranConfigurator();
        joran.setContext(ctx);
        joran.doConfigure(Path.of("config/logback-events.xml").toFile());
        try {
            EventLog.event("transfer").with("job", 7).with("bytes", 42L).with("result", "done").log(ctx.getLogger("stagehand.events.transfer"));
            EventLog.event("dismount").with("drive", "drive01").log(ctx.getLogger("stagehand.events.mount"));
            ctx.getLogger("dev.stagehand.recall.service.RecallService").info("an ordinary line");
        } finally {
            ctx.stop();
        }
        List<String> lines = Files.readAllLines(file);
        assertThat(lines).hasSize(2);
        assertThat(lines.get(0)).matches("\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z event=transfer job=7 bytes=42 result=done");
        assertThat(lines.get(1)).endsWith(" event=dismount drive=drive01");
        assertThat(ctx.getStatusManager().getCopyOfStatusList()).noneMatch(s -> s.getLevel() >= ch.qos.logback.core.status.Status.ERROR);
    }
}
