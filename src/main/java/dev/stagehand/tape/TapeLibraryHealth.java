package dev.stagehand.tape;

import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.stereotype.Component;

/**
 * Health of the tape library (contributor {@code tapeLibrary}, part of readiness): DOWN when no drive is
 * usable (every drive FAILED or DISABLED), or, for the script driver, when the last site-script call could
 * not be started or several calls in a row did not answer in time (the HSM is not reachable; one timed-out
 * list may just be slow). A volume or media error is not a library problem and leaves it UP. Reads only
 * in-memory state: cheap enough for every probe.
 */
@Component("tapeLibraryHealthIndicator")
class TapeLibraryHealth implements HealthIndicator {

    private final ObjectProvider<TapeLibrary> library;
    private final TapeProperties props;

    TapeLibraryHealth(ObjectProvider<TapeLibrary> library, TapeProperties props) {
        this.library = library;
        this.props = props;
    }

    @Override
    public Health health() {
        TapeLibrary lib = library.getIfAvailable();
        if (lib == null) return Health.unknown().withDetail("reason", "no tape library configured").build();
        return check(lib, props.driver().name().toLowerCase(Locale.ROOT));
    }

    static Health check(TapeLibrary lib, String driver) {
        Map<String, Integer> byState = new TreeMap<>();
        int usable = 0;
        for (DriveStatus d : lib.drives()) {
            byState.merge(d.state().name().toLowerCase(Locale.ROOT), 1, Integer::sum);
            if (d.state() != DriveState.FAILED && d.state() != DriveState.DISABLED) usable++;
        }
        Health.Builder h = usable > 0 ? Health.up() : Health.down().withDetail("reason", "no usable drive");
        h.withDetail("library", lib.layout().name()).withDetail("driver", driver).withDetail("drives", byState)
                .withDetail("usableDrives", usable).withDetail("accessors", lib.layout().accessors());
        ScriptLibrary script = lib instanceof SharedDrives shared ? shared.script() : lib instanceof ScriptLibrary s ? s : null;
        if (script != null) {
            ScriptLibrary.CallResult last = script.lastCall();
            if (last != null) {
                Map<String, Object> call = new TreeMap<>();
                call.put("command", last.command());
                call.put("outcome", last.outcome());
                call.put("exit", last.exit());
                call.put("at", last.at().toString());
                if (last.drive() != null) call.put("drive", last.drive());
                if (last.failure() != null) call.put("failure", last.failure());
                h.withDetail("lastCall", call).withDetail("timeoutsInRow", script.timeoutsInRow());
                if (!script.reachable()) h.down().withDetail("reason", last.outcome().equals("not-run")
                        ? "the last " + last.command() + " call " + last.outcome() + ": the library is not reachable"
                        : script.timeoutsInRow() + " calls in a row timed out (the last: " + last.command()
                                + "): the library is not reachable");
            }
        }
        return h.build();
    }
}
