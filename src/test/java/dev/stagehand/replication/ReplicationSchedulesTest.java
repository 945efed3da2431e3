package dev.stagehand.replication;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class ReplicationSchedulesTest {

    @Test
    void aCronThatNeverFiresIsRefusedAsTheRulesInput() {
        // well-formed, but no such day: Quartz refuses to schedule it ("will never fire"), which was a 500
        for (String never : new String[] {"0 0 0 30 2 ?", "0 0 2 31 4 ?", "0 0 2 * * ? 2001"}) {
            assertThatThrownBy(() -> ReplicationSchedules.checkCron(never)).as(never)
                    .isInstanceOfSatisfying(ReplicationRejected.class, e -> {
                        org.assertj.core.api.Assertions.assertThat(e.field()).isEqualTo("schedule");
                        org.assertj.core.api.Assertions.assertThat(e.getMessage()).contains("never fires");
                    });
        }
        assertThatCode(() -> ReplicationSchedules.checkCron("0 0 2 * * ?")).doesNotThrowAnyException();
        assertThatCode(() -> ReplicationSchedules.checkCron("0 0 0 29 2 ?")).doesNotThrowAnyException(); // leap years
    }
}
