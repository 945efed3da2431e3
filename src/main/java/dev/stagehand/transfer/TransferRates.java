package dev.stagehand.transfer;

import java.net.URI;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;
import org.springframework.stereotype.Component;

/**
 * Live rates of this instance's movers, for the console: bytes sent per link (as they move) and per
 * destination host (files completed there), and retries per link by failure kind, over a sliding window
 * of one-second buckets. Kept in memory on purpose: rates are a view of the present, and the durable
 * record of every transfer is its transfer_job row.
 */
@Component
public class TransferRates implements TransferListener {

    /** Seconds the window keeps; rates are averaged over {@link #RATE_SECONDS}. */
    static final int WINDOW_SECONDS = 300;
    static final int RATE_SECONDS = 10;

    /** One link's figures: MB/s over the last 10 s, bytes and files over the window, retries by kind over the window. */
    public record LinkRate(String link, double mbPerSecond, long bytes, long files, Map<TransferFailure.Kind, Long> retries) {}

    /** One destination host's figures: MB/s of files completed there over the last 10 s, files over the window. */
    public record HostRate(String host, String link, double mbPerSecond, long bytes, long files) {}

    private final Map<String, Meter> links = new ConcurrentHashMap<>();
    private final Map<String, Meter> hosts = new ConcurrentHashMap<>();
    private final Map<String, String> hostLink = new ConcurrentHashMap<>();
    private final LongSupplier seconds;

    public TransferRates() {
        this(() -> System.nanoTime() / 1_000_000_000L);
    }

    TransferRates(LongSupplier seconds) {
        this.seconds = seconds;
    }

    /**
     * The link of a destination URL, as the movers name it: scheme and host list, each host with its port
     * (2811 when none is given), e.g. {@code ftp://127.0.0.1:2811,b:2811}.
     */
    public static String link(URI destination) {
        String authority = destination.getRawAuthority() == null ? "" : destination.getRawAuthority();
        List<String> hosts = new ArrayList<>();
        for (String part : authority.split(",")) {
            String hp = part.trim();
            int at = hp.lastIndexOf('@');
            if (at >= 0) hp = hp.substring(at + 1);
            int colon = hp.lastIndexOf(':');
            hosts.add(colon > 0 && !hp.endsWith("]") ? hp : hp + ":2811");
        }
        String scheme = destination.getScheme() == null ? "" : destination.getScheme().toLowerCase(Locale.ROOT);
        return scheme + "://" + String.join(",", hosts);
    }

    @Override
    public void bytes(FileCopy copy, long delta) {
        meter(links, link(copy.destination())).add(seconds.getAsLong(), delta, 0, null);
    }

    @Override
    public void written(FileCopy copy, String host, int attempt) {
        String link = link(copy.destination());
        hostLink.put(host, link);
        meter(hosts, host).add(seconds.getAsLong(), copy.sizeBytes(), 1, null);
        meter(links, link).add(seconds.getAsLong(), 0, 1, null);
    }

    @Override
    public void retrying(FileCopy copy, TransferFailure failure) {
        meter(links, link(copy.destination())).add(seconds.getAsLong(), 0, 0, failure.kind());
    }

    /** Every link seen in the window, busiest first. */
    public List<LinkRate> links() {
        long now = seconds.getAsLong();
        List<LinkRate> out = new ArrayList<>();
        links.forEach((link, m) -> {
            Meter.Sums s = m.sums(now);
            if (s.any()) out.add(new LinkRate(link, s.rate(), s.bytes(), s.files(), s.retries()));
        });
        out.sort(Comparator.comparingDouble(LinkRate::mbPerSecond).reversed().thenComparing(LinkRate::link));
        return out;
    }

    /** Every destination host that completed a file in the window, busiest first. */
    public List<HostRate> hosts() {
        long now = seconds.getAsLong();
        List<HostRate> out = new ArrayList<>();
        hosts.forEach((host, m) -> {
            Meter.Sums s = m.sums(now);
            if (s.any()) out.add(new HostRate(host, hostLink.getOrDefault(host, ""), s.rate(), s.bytes(), s.files()));
        });
        out.sort(Comparator.comparingDouble(HostRate::mbPerSecond).reversed().thenComparing(HostRate::host));
        return out;
    }

    private static Meter meter(Map<String, Meter> map, String key) {
        return map.computeIfAbsent(key, k -> new Meter());
    }

    /** A ring of one-second buckets. */
    private static final class Meter {
        record Sums(long rateBytes, long bytes, long files, Map<TransferFailure.Kind, Long> retries) {
            boolean any() {
                return bytes > 0 || files > 0 || !retries.isEmpty();
            }

            double rate() {
                return rateBytes / 1e6 / RATE_SECONDS;
            }
        }

        private final long[] second = new long[WINDOW_SECONDS];
        private final long[] bytes = new long[WINDOW_SECONDS];
        private final long[] files = new long[WINDOW_SECONDS];
        private final List<Map<TransferFailure.Kind, Long>> retries = new ArrayList<>(WINDOW_SECONDS);

        Meter() {
            for (int i = 0; i < WINDOW_SECONDS; i++) retries.add(new EnumMap<>(TransferFailure.Kind.class));
            java.util.Arrays.fill(second, Long.MIN_VALUE);
        }

        synchronized void add(long now, long b, long f, TransferFailure.Kind retry) {
            int i = (int) Math.floorMod(now, (long) WINDOW_SECONDS);
            if (second[i] != now) {
                second[i] = now;
                bytes[i] = 0;
                files[i] = 0;
                retries.get(i).clear();
            }
            bytes[i] += b;
            files[i] += f;
            if (retry != null) retries.get(i).merge(retry, 1L, Long::sum);
        }

        synchronized Sums sums(long now) {
            long rate = 0, b = 0, f = 0;
            Map<TransferFailure.Kind, Long> r = new EnumMap<>(TransferFailure.Kind.class);
            for (int i = 0; i < WINDOW_SECONDS; i++) {
                long age = now - second[i];
                if (age < 0 || age >= WINDOW_SECONDS) continue;
                // the current second is still filling: the rate uses the RATE_SECONDS seconds before it
                if (age >= 1 && age <= RATE_SECONDS) rate += bytes[i];
                b += bytes[i];
                f += files[i];
                retries.get(i).forEach((k, v) -> r.merge(k, v, Long::sum));
            }
            return new Sums(rate, b, f, r);
        }
    }
}
