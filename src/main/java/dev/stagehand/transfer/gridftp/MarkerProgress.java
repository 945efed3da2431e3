package dev.stagehand.transfer.gridftp;

import java.util.HashMap;
import java.util.Map;
import org.globus.ftp.ByteRange;
import org.globus.ftp.GridFTPRestartMarker;
import org.globus.ftp.Marker;
import org.globus.ftp.PerfMarker;

/**
 * Whether a server's markers report bytes not reported before. A GCT server waiting on a put sends its
 * 112 perf marker every 5 s with the same byte count for as long as it waits: counting every marker as
 * progress hid such a stuck put from the stall watchdog for ever. Only new bytes count.
 */
final class MarkerProgress {

    private final Map<Long, Long> perStripe = new HashMap<>();
    private long restartBytes;

    /** True when {@code marker} reports more bytes written than any marker before it. */
    synchronized boolean advanced(Marker marker) {
        if (marker instanceof PerfMarker perf) {
            try {
                if (!perf.hasStripeBytesTransferred()) return false;
                long stripe = perf.hasStripeIndex() ? perf.getStripeIndex() : 0;
                long bytes = perf.getStripeBytesTransferred();
                Long before = perStripe.put(stripe, bytes);
                return before == null ? bytes > 0 : bytes > before;
            } catch (org.globus.ftp.exception.PerfMarkerException e) {
                return false; // a marker without the field says nothing about progress
            }
        }
        if (marker instanceof GridFTPRestartMarker restart) {
            long total = 0;
            for (Object o : restart.toVector()) {
                ByteRange r = (ByteRange) o;
                total += r.to - r.from;
            }
            // restart markers report ranges cumulatively in GCT, but a partial list must not go backwards
            if (total <= restartBytes) return false;
            restartBytes = total;
            return true;
        }
        return false;
    }
}
