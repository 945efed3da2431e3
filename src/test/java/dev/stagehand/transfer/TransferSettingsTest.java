package dev.stagehand.transfer;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** Settings that would stall, stop or double every transfer are refused when bound, with their name. */
class TransferSettingsTest {

    private static final MoverSettings D = MoverSettings.defaults();

    private static MoverSettings mover(Duration optimizerInterval, Duration stallTimeout, Duration backoff,
                                       Duration hostQuarantine, String dcau) {
        return new MoverSettings(D.parallelism(), D.tcpBufferBytes(), D.concurrency(), D.minConcurrency(),
                D.maxConcurrency(), D.adaptive(), optimizerInterval, D.topUpBytes(), D.splitBytes(), stallTimeout,
                D.maxAttempts(), backoff, hostQuarantine, D.verifyChecksum(), dcau, "", "", D.serverVerifyMaxBytes());
    }

    @Test
    void moverSettingsThatCannotWorkAreRefused() {
        Duration s = Duration.ofSeconds(1);
        // a zero stall timeout marked every attempt stalled (an outage: files waited a day, then failed)
        assertThatThrownBy(() -> mover(s, Duration.ZERO, s, s, "SELF")).hasMessageContaining("stallTimeout");
        // a zero optimizer interval failed every file as BAD_REQUEST (the link's timer refused the period)
        assertThatThrownBy(() -> mover(Duration.ZERO, s, s, s, "SELF")).hasMessageContaining("optimizerInterval");
        assertThatThrownBy(() -> mover(s, s, Duration.ofSeconds(-1), s, "SELF")).hasMessageContaining("backoff");
        assertThatThrownBy(() -> mover(s, s, s, Duration.ofSeconds(-1), "SELF")).hasMessageContaining("hostQuarantine");
        // anything but NONE silently meant SELF
        assertThatThrownBy(() -> mover(s, s, s, s, "N0NE")).hasMessageContaining("dataChannelAuth");
        mover(s, s, Duration.ZERO, Duration.ZERO, "none"); // no backoff, no quarantine: allowed
    }

    private static TransferProperties.Queue queue(Duration poll, int batch, int inFlight, Duration lease) {
        return new TransferProperties.Queue(true, poll, batch, inFlight, lease, "",
                new TransferProperties.Outage(Duration.ofSeconds(30), Duration.ofMinutes(10), Duration.ofHours(24)), 5);
    }

    @Test
    void queueSettingsThatCannotWorkAreRefused() {
        Duration poll = Duration.ofSeconds(1), lease = Duration.ofMinutes(2);
        // batch-size 0 or max-in-flight 0 claimed nothing, ever, without a word
        assertThatThrownBy(() -> queue(poll, 0, 2000, lease)).hasMessageContaining("batch-size");
        assertThatThrownBy(() -> queue(poll, 200, 0, lease)).hasMessageContaining("max-in-flight");
        // a zero lease let every other instance claim (and move) the rows this one was moving
        assertThatThrownBy(() -> queue(poll, 200, 2000, Duration.ZERO)).hasMessageContaining("lease");
        // a zero poll interval claimed in a busy loop; a negative one killed the drainer at its first error
        assertThatThrownBy(() -> queue(Duration.ZERO, 200, 2000, lease)).hasMessageContaining("poll-interval");
        assertThatThrownBy(() -> queue(Duration.ofSeconds(-1), 200, 2000, lease)).hasMessageContaining("poll-interval");
        // leases are renewed between polls: a poll interval as long as the lease let them lapse while moving
        assertThatThrownBy(() -> queue(Duration.ofMinutes(2), 200, 2000, lease)).hasMessageContaining("poll-interval");
        queue(Duration.ofMillis(100), 1, 1, Duration.ofSeconds(1));
        // no claim at all would be allowed
        assertThatThrownBy(() -> new TransferProperties.Queue(true, poll, 200, 2000, lease, "",
                new TransferProperties.Outage(Duration.ofSeconds(30), Duration.ofMinutes(10), Duration.ofHours(24)), 0))
                .hasMessageContaining("max-lapses");
    }
}
