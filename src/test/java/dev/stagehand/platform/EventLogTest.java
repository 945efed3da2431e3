package dev.stagehand.platform;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Instant;
import org.junit.jupiter.api.Test;

/** logfmt lines: bare values, quoted values with spaces, quotes and equals signs, and back. */
class EventLogTest {

    @Test
    void writesLogfmtAndReadsItBack() {
        EventLog e = EventLog.event("transfer").with("bytes", 2_000_000L).with("rate_mb_s", 9.3899).with("skipped", null)
                .with("error", "PROTOCOL: 451 \"bad\" a=b\nnext").with("at", Instant.parse("2026-01-02T03:04:05Z")).with("empty", "");
        String line = e.toString();
        assertThat(line).startsWith("event=transfer bytes=2000000 rate_mb_s=9.390 error=\"PROTOCOL: 451 \\\"bad\\\" a=b\\nnext\"")
                .contains("at=2026-01-02T03:04:05Z", "empty=\"\"").doesNotContain("skipped");
        assertThat(EventLog.parse(line)).containsEntry("event", "transfer").containsEntry("bytes", "2000000")
                .containsEntry("error", "PROTOCOL: 451 \"bad\" a=b\nnext").containsEntry("at", "2026-01-02T03:04:05Z")
                .containsEntry("empty", "").hasSize(6);
    }
}
