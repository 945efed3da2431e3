package dev.stagehand.archive.internal;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * The archive's pure decisions, kept apart from the database and the library so they can be tested alone:
 * which file family a dataset belongs to, which family (and copy) a free drive flushes next, and how much
 * of a family's queue goes onto the volume it is appending to.
 */
final class FlushPlanner {

    private FlushPlanner() {}

    /** The family of a dataset: the first configured group whose patterns match it (in name order), else the dataset. */
    static String family(String dataset, Map<String, List<String>> groups) {
        return groups.entrySet().stream()
                .sorted(Map.Entry.comparingByKey())
                .filter(e -> e.getValue().stream().anyMatch(p -> glob(p).matcher(dataset).matches()))
                .map(Map.Entry::getKey)
                .findFirst().orElse(dataset);
    }

    private static Pattern glob(String pattern) {
        StringBuilder re = new StringBuilder();
        for (String part : pattern.split("\\*", -1)) {
            if (!re.isEmpty()) re.append(".*");
            re.append(Pattern.quote(part));
        }
        return Pattern.compile(re.toString());
    }

    /**
     * What one family's copy n has queued.
     *
     * @param family     file family
     * @param copy       copy number (copy n goes to the family's copy-n volumes)
     * @param bytes      queued bytes
     * @param files      queued files
     * @param oldest     registration time of its oldest queued file
     * @param openVolume label of the volume it is appending to, or null (a blank one will be opened)
     * @param busy       its volume is being written by another drive or instance: leave it alone
     */
    record FamilyQueue(String family, int copy, long bytes, long files, Instant oldest, String openVolume, boolean busy) {}

    /**
     * The queues worth flushing now, best first: a queue is worth a write mount once it holds
     * {@code minBytes}, or its oldest file waited {@code maxAge}, or the buffer is under pressure (above
     * its low-water mark: then everything goes, the biggest first, to free the most space). Otherwise the
     * oldest go first, so no family waits for ever behind busier ones.
     */
    static List<FamilyQueue> worthFlushing(List<FamilyQueue> queues, Instant now, long minBytes, Duration maxAge, boolean pressure) {
        List<FamilyQueue> out = new ArrayList<>();
        for (FamilyQueue q : queues) {
            if (q.busy() || q.files() == 0) continue;
            if (pressure || q.bytes() >= minBytes || !q.oldest().plus(maxAge).isAfter(now)) out.add(q);
        }
        Comparator<FamilyQueue> order = pressure
                ? Comparator.comparingLong(FamilyQueue::bytes).reversed()
                : Comparator.comparing(FamilyQueue::oldest);
        out.sort(order.thenComparing(FamilyQueue::family).thenComparingInt(FamilyQueue::copy));
        return out;
    }

    /**
     * The queue a drive takes next. {@code mounted} is the queue appending to the volume already in the
     * drive (null: none, or the drive is empty). The drive keeps its volume (no exchange: a rewind, unload
     * and load cost minutes) while that queue is itself worth a mount ({@code minBytes}), or while nothing
     * else is worth one; otherwise it goes to the best queue worth flushing.
     */
    static FamilyQueue choose(List<FamilyQueue> worth, FamilyQueue mounted, long minBytes) {
        if (mounted != null && !mounted.busy() && mounted.files() > 0 && (mounted.bytes() >= minBytes || worth.isEmpty()))
            return mounted;
        return worth.isEmpty() ? null : worth.get(0);
    }

    /**
     * How many files from the head of a family's queue (in write order) go onto a volume with {@code room}
     * bytes left: as many as fit, within the batch limits, stopping at the first that does not fit so the
     * family's write order is kept (the rest start the next volume). 0 when the first file does not fit:
     * the volume is full for this family.
     */
    static int take(long[] sizes, long room, long maxBatchBytes, int maxBatchFiles) {
        long sum = 0;
        int n = 0;
        for (long s : sizes) {
            if (n >= maxBatchFiles || sum + s > room || (n > 0 && sum + s > maxBatchBytes)) break;
            sum += s;
            n++;
        }
        return n;
    }
}
