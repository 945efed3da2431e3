package dev.stagehand.recall.scheduler;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.IntSupplier;

/**
 * Lets short requests cut in ahead of a mounted volume's tour. The tour along the tape reads the files of every
 * request waiting for the volume in one pass, so a short request arriving after a long one waits for most of
 * the long one's files (at 16 drives / 1 accessor, waits for a busy or unloading tape pushed 11 of the 36
 * requests of random-user seed 213 past 0.8 x greedy's p95, most of them small requests behind a large one on
 * the same tape).
 *
 * <p>Here the files of a request that completes on this volume go first (in their own best tour from the head,
 * the rest in its best tour from where they end) when that lowers, in order: the number of requests that
 * would finish later than the recent p95 latency (the tail this is about), then the sum of the completion
 * times of the requests this volume completes, plus the plan's whole length times the requests waiting for a
 * mount (drive time spent on detours is taken from them). Repeated from the new head position for the next
 * request. A request already aging ({@link MountPlanner#startsAging}) is never delayed: then the tour stays as
 * it is.
 */
final class ShortRequestsFirst {

    /** Requests whose own tour is planned per round, candidates tried per round, rounds. */
    static final int PLANNED = 32, CANDIDATES = 4, ROUNDS = 4;
    /** Queues larger than this keep the plain tour (bulk tapes: few requests, costly to plan again and again). */
    static final int MAX_FILES = 400;
    /** Weight, in seconds of completion time, of one request finishing later than the recent p95 latency. */
    static final double OVER_RECENT_P95_S = 1e6;
    /** Completed requests whose latencies make the recent p95. */
    static final int RECENT_REQUESTS = 200;

    private final CostModel cost;
    private final RunPlanner runPlanner;
    private final MountPlanner mountPlanner;
    private final ArrayDeque<Double> recentLatencies = new ArrayDeque<>();
    /** p95 latency of the last {@link #RECENT_REQUESTS} completed requests (infinite until 20 have). */
    private double recentP95 = Double.POSITIVE_INFINITY;

    ShortRequestsFirst(CostModel cost, RunPlanner runPlanner, MountPlanner mountPlanner) {
        this.cost = cost;
        this.runPlanner = runPlanner;
        this.mountPlanner = mountPlanner;
    }

    /** p95 latency of the recently completed requests (infinite until 20 have). */
    double recentP95() { return recentP95; }

    /** A request completed after waiting {@code latency} seconds. */
    void completed(double latency) {
        recentLatencies.addLast(latency);
        if (recentLatencies.size() > RECENT_REQUESTS) recentLatencies.removeFirst();
        if (recentLatencies.size() >= 20) {
            double[] v = recentLatencies.stream().mapToDouble(Double::doubleValue).sorted().toArray();
            recentP95 = v[(int) Math.ceil(0.95 * v.length) - 1];
        }
    }

    /**
     * The read order for {@code volume}: {@code tour} (its best tour from {@code head}) with short requests
     * moved ahead where that pays. {@code waitingForMounts} counts the open requests waiting for a mount; it is
     * asked only when there is a choice to make.
     */
    List<FileWork> order(String volume, List<FileWork> tour, long head, double now, IntSupplier waitingForMounts) {
        if (tour.size() < 2 || tour.size() > MAX_FILES) return tour;
        Map<RequestWork, List<FileWork>> completing = new LinkedHashMap<>();
        for (FileWork f : tour) {
            for (RequestWork r : f.requests) {
                if (now - r.arrival >= mountPlanner.startsAging()) return tour;
                if (volume.equals(r.completesOn())) {
                    completing.computeIfAbsent(r, k -> new ArrayList<>()).add(f);
                }
            }
        }
        if (completing.size() < 2) return tour;
        int waiting = waitingForMounts.getAsInt();
        List<FileWork> prefix = new ArrayList<>();
        List<FileWork> rest = tour;
        long at = head;
        double best = planCost(volume, prefix, rest, head, completing.keySet(), now, waiting);
        for (int round = 0; round < ROUNDS; round++) {
            Set<FileWork> left = new HashSet<>(rest);
            List<List<FileWork>> theirs = new ArrayList<>();
            for (List<FileWork> files : completing.values()) {
                List<FileWork> mine = new ArrayList<>();
                for (FileWork f : files) if (left.contains(f)) mine.add(f);
                if (!mine.isEmpty() && mine.size() < left.size()) theirs.add(mine);
            }
            // the requests with the least work of their own left from here are the candidates
            theirs.sort(Comparator.comparingInt(List::size));
            List<Map.Entry<List<FileWork>, Double>> own = new ArrayList<>();
            for (List<FileWork> mine : theirs.subList(0, Math.min(PLANNED, theirs.size()))) {
                List<FileWork> first = runPlanner.order(volume, mine, at);
                own.add(Map.entry(first, runPlanner.workSeconds(volume, first, at)));
            }
            own.sort(Map.Entry.comparingByValue());
            List<FileWork> bestPrefix = null, bestRest = null;
            for (int k = 0; k < Math.min(CANDIDATES, own.size()); k++) {
                List<FileWork> first = own.get(k).getKey();
                FileWork last = first.get(first.size() - 1);
                Set<FileWork> taken = new HashSet<>(first);
                List<FileWork> others = new ArrayList<>(rest.size());
                for (FileWork f : rest) if (!taken.contains(f)) others.add(f);
                List<FileWork> p = new ArrayList<>(prefix);
                p.addAll(first);
                List<FileWork> r = runPlanner.order(volume, others, last.offsetOn(volume) + last.sizeBytes);
                double c = planCost(volume, p, r, head, completing.keySet(), now, waiting);
                if (c < best - 1e-6) {
                    best = c;
                    bestPrefix = p;
                    bestRest = r;
                }
            }
            if (bestPrefix == null) break;
            prefix = bestPrefix;
            rest = bestRest;
            FileWork last = prefix.get(prefix.size() - 1);
            at = last.offsetOn(volume) + last.sizeBytes;
        }
        if (prefix.isEmpty()) return tour;
        List<FileWork> out = new ArrayList<>(prefix);
        out.addAll(rest);
        return out;
    }

    /** The cost {@link #order} minimises, reading {@code a} then {@code b} from {@code head}. */
    private double planCost(String volume, List<FileWork> a, List<FileWork> b, long head, Set<RequestWork> reqs,
                            double now, int waiting) {
        Map<RequestWork, Double> done = new HashMap<>();
        double t = 0;
        long at = head;
        for (List<FileWork> part : List.of(a, b)) {
            for (FileWork f : part) {
                long o = f.offsetOn(volume);
                t += runPlanner.hopSeconds(at, o) + cost.readSeconds(f.sizeBytes);
                at = o + f.sizeBytes;
                for (RequestWork r : f.requests) if (reqs.contains(r)) done.put(r, t);
            }
        }
        double sum = waiting * t;
        for (var e : done.entrySet()) {
            sum += e.getValue();
            if (now - e.getKey().arrival + e.getValue() > recentP95) sum += OVER_RECENT_P95_S;
        }
        return sum;
    }
}
