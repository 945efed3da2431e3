package dev.stagehand.console;

import dev.stagehand.transfer.LinkStatus;
import dev.stagehand.transfer.Mover;
import dev.stagehand.transfer.MoverSettings;
import dev.stagehand.transfer.TransferProperties;
import dev.stagehand.transfer.TransferRates;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;

/**
 * The transfers page's live figures: per link what the movers' optimizer runs now (concurrency within its
 * bounds, queued and active files, its smoothed throughput, success rate, hosts out of rotation) beside the
 * measured rate and retries of the last minutes; per destination host the rate of files completed there;
 * failed transfers counted by their classified reason. Links and rates are this instance's movers;
 * failures come from the transfer_job rows (all instances).
 */
@Component
class TransferViews {

    /** One link: the optimizer's view ({@link LinkStatus}) joined with the measured rates. */
    record LinkRow(String link, int concurrency, int queued, int active, double optimizerMbPerSecond, double mbPerSecond,
                   double successRate, List<String> hostsOut, long files, long bytes, String retries) {}

    /** How the optimizer may choose: bounds and interval, from stagehand.transfer.mover. */
    record Optimizer(boolean adaptive, int min, int max, int start, String interval) {}

    private final Mover mover;
    private final TransferRates rates;
    private final MoverSettings settings;
    private final JdbcTemplate jdbc;

    TransferViews(Mover mover, TransferRates rates, TransferProperties properties, JdbcTemplate jdbc) {
        this.mover = mover;
        this.rates = rates;
        this.settings = properties.mover();
        this.jdbc = jdbc;
    }

    List<LinkRow> links() {
        Map<String, TransferRates.LinkRate> measured = rates.links().stream()
                .collect(Collectors.toMap(TransferRates.LinkRate::link, r -> r, (a, b) -> a, LinkedHashMap::new));
        List<LinkRow> rows = new ArrayList<>();
        for (LinkStatus s : mover.links()) {
            TransferRates.LinkRate r = measured.remove(s.link());
            rows.add(new LinkRow(s.link(), s.concurrency(), s.queued(), s.active(), s.mbPerSecond(),
                    r == null ? 0 : r.mbPerSecond(), s.successRate(), s.hostsOut(), r == null ? 0 : r.files(),
                    r == null ? 0 : r.bytes(), r == null ? "" : retries(r)));
        }
        return rows;
    }

    private static String retries(TransferRates.LinkRate r) {
        return r.retries().entrySet().stream().map(e -> e.getKey() + " ×" + e.getValue()).collect(Collectors.joining(", "));
    }

    List<TransferRates.HostRate> hosts() {
        return rates.hosts();
    }

    Optimizer optimizer() {
        return new Optimizer(settings.adaptive(), settings.minConcurrency(), settings.maxConcurrency(), settings.concurrency(),
                ConsoleFormat.duration(settings.optimizerInterval()));
    }

    /** Failed transfers by classified reason, most first. */
    Map<String, Long> failureReasons() {
        Map<String, Long> out = new LinkedHashMap<>();
        jdbc.query("""
                SELECT coalesce(last_error_class, 'unclassified') AS reason, count(*) AS n FROM transfer_job
                 WHERE state = 'failed' GROUP BY 1 ORDER BY 2 DESC, 1""", rs -> {
            out.put(rs.getString("reason"), rs.getLong("n"));
        });
        return out;
    }
}
