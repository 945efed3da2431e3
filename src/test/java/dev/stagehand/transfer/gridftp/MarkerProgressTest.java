package dev.stagehand.transfer.gridftp;

import static org.assertj.core.api.Assertions.assertThat;

import org.globus.ftp.GridFTPRestartMarker;
import org.globus.ftp.PerfMarker;
import org.junit.jupiter.api.Test;

/** Markers are progress only when they report new bytes (a stuck GCT put repeats its perf marker every 5 s). */
class MarkerProgressTest {

    private static PerfMarker perf(long bytes) {
        // the text of a GCT 112 reply, as seen during a put
        return new PerfMarker("Perf Marker\n Timestamp:  1795321870.8\n Stripe Index: 0\n Stripe Bytes Transferred: "
                + bytes + "\n Total Stripe Count: 1\n112 End.");
    }

    @Test
    void aRepeatedPerfMarkerIsNotProgress() {
        MarkerProgress p = new MarkerProgress();
        assertThat(p.advanced(perf(0))).isFalse();
        assertThat(p.advanced(perf(2_097_152))).isTrue();
        assertThat(p.advanced(perf(2_097_152))).isFalse();
        assertThat(p.advanced(perf(2_097_152))).isFalse();
        assertThat(p.advanced(perf(4_194_304))).isTrue();
    }

    @Test
    void restartMarkersCountOnlyWhenTheWrittenRangesGrow() {
        MarkerProgress p = new MarkerProgress();
        assertThat(p.advanced(new GridFTPRestartMarker("Range Marker 0-1048576"))).isTrue();
        assertThat(p.advanced(new GridFTPRestartMarker("Range Marker 0-1048576"))).isFalse();
        assertThat(p.advanced(new GridFTPRestartMarker("Range Marker 0-1048576,2097152-3145728"))).isTrue();
    }
}
