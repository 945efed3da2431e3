package dev.stagehand.recall.scheduler;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Which volume to mount next: a pure decision over the queue aggregates (no I/O), O(volumes log volumes).
 *
 * <p>Tape-aware order: (1) requests older than the aging limit (less {@link #AGING_LEAD}) first, oldest first — nothing starves;
 * (2) higher priority; (3) the experiment furthest below its fair share; (4) queues worth a mount in CTA's
 * sense (enough bytes or files, or old enough); (5) volumes that complete requests: while no more queues wait
 * than there are drives, those completing a request that still ends under the recent p95 latency if mounted
 * now go first, least time to spare first (see {@link #rank}); then by response ratio
 * (wait + service) / service times the number of requests they finish — short, complete-able work first,
 * which is what cuts request latency; (6) volumes that complete nothing yet (parts of multi-tape requests):
 * those bringing their requests nearest to completion first ({@link #progress}), then longest first, which
 * is what keeps the makespan of a bulk recall near its bound (tape-fulls of bulk work are then placed by
 * {@link #balance}).
 * Greedy order: biggest queue first.
 */
public final class MountPlanner {

    private final SchedulerConfig config;
    private final CostModel cost;

    private final RunPlanner runPlanner;
    private final RunPlanner tourPlanner;

    /** Queues with at most this many runs get their locate time planned exactly (cached); bigger ones estimated. */
    static final int PLANNED_RUNS_LIMIT = 200;

    public MountPlanner(SchedulerConfig config, CostModel cost) {
        this(config, cost, new RunPlanner(cost, 0));
    }

    /**
     * @param tourPlanner the planner whose order the drives follow: balancing estimates a queue's locates
     *                    along its tour from BOT ({@link #balanceSeconds})
     */
    public MountPlanner(SchedulerConfig config, CostModel cost, RunPlanner tourPlanner) {
        this.config = config;
        this.cost = cost;
        this.runPlanner = new RunPlanner(cost, 0);
        this.tourPlanner = tourPlanner;
    }

    /** Estimated drive seconds to serve {@code q} from a mount to its dismount (SLTF locates: ranking, ETAs). */
    public double serviceSeconds(VolumeQueue q) {
        return cost.mountSeconds() + locateSeconds(q) + cost.readSeconds(q.bytes()) + cost.dismountSeconds(q.bytes());
    }

    /**
     * Drive seconds from a mount to the end of the dismount as the drive will read {@code q}, along the
     * planner's tour: what balancing plans finishing times with. SLTF from BOT overestimates the locates of
     * climate tapes by up to 50 s (a third), and drives balanced on such estimates end unevenly.
     */
    public double balanceSeconds(VolumeQueue q) {
        double locate;
        if (q.runs() > PLANNED_RUNS_LIMIT) {
            locate = locateSeconds(q);
        } else {
            if (q.cachedTourVersion != q.version) {
                q.cachedTourSeconds = tourPlanner.locateSeconds(q.label, tourPlanner.order(q.label, new ArrayList<>(q.files.values()), 0), 0);
                q.cachedTourVersion = q.version;
            }
            locate = q.cachedTourSeconds;
        }
        return cost.mountSeconds() + locate + cost.readSeconds(q.bytes()) + cost.dismountSeconds(q.bytes());
    }

    /** Locate seconds of reading {@code q} from BOT: planned (SLTF, cached per queue version) or estimated. */
    double locateSeconds(VolumeQueue q) {
        int k = q.runs();
        if (k <= PLANNED_RUNS_LIMIT) {
            if (q.cachedVersion != q.version) {
                List<FileWork> files = new ArrayList<>(q.files.values());
                q.cachedLocateSeconds = runPlanner.locateSeconds(q.label, runPlanner.orderSltf(q.label, files, 0), 0);
                q.cachedVersion = q.version;
            }
            return q.cachedLocateSeconds;
        }
        // a fixed cost and a wrap change per run, plus about two passes along the tape once well ordered
        return k * 12.0 + 120.0;
    }

    /**
     * Candidates to mount, best first. {@code busy}: volumes in a drive (any state); {@code drivesInUse}:
     * drives held per experiment now. Volumes whose experiment is at its drive cap are left out.
     * {@code tailLine}: the recent p95 latency, the line the ranking keeps requests under (infinite: not known
     * yet); {@code drives}: the library's drives (it orders by slack only while no more queues wait than this).
     */
    public List<VolumeQueue> rank(QueueModel model, double now, Set<String> busy, Map<String, Integer> drivesInUse,
                                  double tailLine, int drives) {
        List<Cand> cands = new ArrayList<>();
        for (VolumeQueue q : model.queues()) {
            if (busy.contains(q.label)) continue;
            String exp = q.experiment();
            Integer cap = config.experimentDriveCaps().get(exp);
            if (config.policy() == SchedulerConfig.Policy.TAPE_AWARE && cap != null
                    && drivesInUse.getOrDefault(exp, 0) >= cap) continue;
            if (config.policy() == SchedulerConfig.Policy.TAPE_AWARE && q.completable() == 0) progress(q);
            else q.progress = q.shortProgress = 0;
            cands.add(new Cand(q, exp, now - q.oldestArrival(), serviceSeconds(q)));
        }
        // Few queues waiting (no more than the drives): each gets a drive within about a round, so their order
        // mostly decides which requests end past the tail's line; those that can still end under it go least
        // slack first. With more queues than drives the ranking stays as it is: there, least slack first makes
        // one request late after another (at 4/2, 8 of the sweep's 20 workloads went above 0.8 x greedy's p95,
        // random-user seed 228 to 1.14, against none).
        if (config.policy() == SchedulerConfig.Policy.TAPE_AWARE && tailLine < Double.POSITIVE_INFINITY && cands.size() <= drives) {
            for (Cand c : cands) {
                if (c.q.completable() == 0 || longWork(c.q)) continue;
                double slack = slack(c.q, now, c.service - cost.dismountSeconds(c.q.bytes()), tailLine);
                if (slack >= 0) c.slack = slack;
            }
        }
        Comparator<Cand> order = config.policy() == SchedulerConfig.Policy.GREEDY
                ? Comparator.comparingLong((Cand c) -> c.q.bytes()).reversed()
                : tapeAware(drivesInUse);
        cands.sort(order.thenComparing(c -> c.q.label));
        List<VolumeQueue> out = new ArrayList<>(cands.size());
        for (Cand c : cands) out.add(c.q);
        return out;
    }

    private static final class Cand {
        final VolumeQueue q;
        final String experiment;
        final double age, service;
        /** Seconds to spare before the request it completes nearest the tail's line would cross it; +inf: none can still make it, or not planned so. */
        double slack = Double.POSITIVE_INFINITY;

        Cand(VolumeQueue q, String experiment, double age, double service) {
            this.q = q; this.experiment = experiment; this.age = age; this.service = service;
        }
    }

    /**
     * Of the requests {@code q} completes that would still end under {@code tailLine} if mounted now
     * ({@code seconds}: mount, locates and reads of the whole queue), the least time to spare; -1 if none would.
     */
    private double slack(VolumeQueue q, double now, double seconds, double tailLine) {
        double least = -1;
        for (FileWork f : q.files.values()) {
            for (RequestWork r : f.requests) {
                if (r.completesOn() == null) continue;
                double s = tailLine - (now - r.arrival + seconds);
                if (s >= 0 && (least < 0 || s < least)) least = s;
            }
        }
        return least;
    }

    /** Marks requests already counted by {@link #progress} (one number per call instead of a set). */
    private long progressVisit;

    /**
     * How far a mount of {@code q} brings the requests it serves towards completion, for a volume that
     * completes none: the sum over those requests of 1/n², n = volumes each still needs. A request spread
     * over many tapes completes only when its last tape is read, so among such tapes the ones shared by
     * requests that need few more go first (a weighted set cover). The square favours the nearly complete:
     * on 120 multi-experiment cases (bench/latency-sweep.sh) 1/n left more requests waiting past greedy's
     * p95 than 1/n² did. Sets {@code q.progress} and {@code q.shortProgress}, the same sum without bulk
     * requests (reading {@link #LONG_WORK_SECONDS} or more: they end with the recall's makespan, which
     * balancing keeps short), for this pass's ranking and balancing. O(files of q).
     */
    void progress(VolumeQueue q) {
        long visit = ++progressVisit;
        double all = 0, shortOnly = 0;
        for (FileWork f : q.files.values()) {
            for (RequestWork r : f.requests) {
                if (r.progressVisit == visit) continue;
                r.progressVisit = visit;
                // a request still being taken in needs at least one volume more, and is not known to be short
                double n = Math.max(1, r.queuedPerVolume.size() + (r.intakePending ? 1 : 0));
                all += 1 / (n * n);
                if (!r.intakePending && cost.readSeconds(r.bytes()) < LONG_WORK_SECONDS) shortOnly += 1 / (n * n);
            }
        }
        q.progress = all;
        q.shortProgress = shortOnly;
    }

    private Comparator<Cand> tapeAware(Map<String, Integer> drivesInUse) {
        double aging = startsAging();
        Map<String, Double> shares = config.experimentShares();
        return Comparator
                .comparing((Cand c) -> c.age < aging) // starving (false) first
                .thenComparing(c -> c.age >= aging ? -c.age : 0.0)
                .thenComparing(c -> !worthMounting(c))
                .thenComparing(c -> -c.q.maxPriority())
                .thenComparingDouble(c -> shares.isEmpty() ? 0.0
                        : drivesInUse.getOrDefault(c.experiment, 0) / shares.getOrDefault(c.experiment, 1e-3))
                .thenComparing(c -> c.q.completable() == 0)
                .thenComparingDouble(c -> c.slack)
                .thenComparingDouble(c -> c.q.completable() > 0
                        ? -((c.age + c.service) / c.service) * c.q.completable()
                        : -c.q.progress)
                .thenComparingDouble(c -> -c.service);
    }

    /**
     * Balancing for multi-tape work: among the candidates from {@code i} on that belong to the same tier as
     * {@code ranked.get(i)} (nothing completes yet, same priority, not starving), plans which drive reads
     * which volume so that the drives' reads end as early and evenly as possible ({@link #plan}) and returns
     * the index of the volume which, started on drive {@code drive} (free now), gives the best plan: the
     * latest end earliest, then (bulk tapes) the next latest. Plain longest-first leaves drives finishing at
     * uneven times at the end of a bulk recall; and when a drive already reading sets the latest end, every
     * choice ties on it, while the others can still end early or late (16 drives on one accessor).
     *
     * @param free     per drive: predicted time it can start a new mount (after its current dismount)
     * @param readEnds per drive: predicted end of the reads it holds now
     */
    public int balance(List<VolumeQueue> ranked, int i, double now, double[] free, double[] readEnds, int drive) {
        VolumeQueue first = ranked.get(i);
        // Starving queues go oldest first, except tape-fulls of bulk work: a recall longer than the aging
        // limit makes all its tapes starve together, and mounting them by age then ends drives unevenly
        // (bulk-hep-100k: 0.90 of the bound instead of 0.94). Those are balanced among themselves.
        boolean starving = starving(first, now);
        if (starving && !longWork(first)) return i;
        int prio = first.maxPriority();
        boolean completing = first.completable() != 0;
        // Short pieces of short multi-tape requests: which request completes first matters more than how evenly
        // the drives end, so balancing only chooses among those that bring requests as near to completion as
        // the first (the ranking's order, from this pass's rank). Among bulk tapes progress only sets which
        // ones balancing weighs.
        boolean byProgress = !completing && !longWork(first) && first.shortProgress > 0;
        int end = i;
        while (end < ranked.size() && end - i < 64) {
            VolumeQueue q = ranked.get(end);
            if (q.maxPriority() != prio || starving(q, now) != starving || (starving && !longWork(q))) break;
            if (!completing && q.completable() != 0) break;
            if (byProgress && Math.abs(q.progress - first.progress) > 1e-9) break;
            end++;
        }
        // A queue that completes requests keeps its place (latency) unless this is the last round: every
        // candidate left will start on the next free drive, so their order only decides how evenly drives end.
        if (completing && (end - i > free.length || end < ranked.size())) return i;
        int n = end - i;
        if (n <= 1) return i;
        double[] w = new double[n], u = new double[n];
        for (int k = 0; k < n; k++) {
            VolumeQueue q = ranked.get(i + k);
            w[k] = balanceSeconds(q); // mount, read, and the dismount before the drive's next mount
            u[k] = cost.dismountSeconds(q.bytes());
        }
        int best = 0;
        double[] bestEnds = null;
        for (int c = 0; c < Math.min(n, 24); c++) {
            double[] ends = plan(free, readEnds, w, u, drive, now, c);
            // Among queues that complete requests the ranking (latency) decides unless the latest end moves;
            // among bulk tapes the next latest ends decide too.
            if (bestEnds == null || (completing ? ends[0] < bestEnds[0] - 1e-6 : earlier(ends, bestEnds))) { bestEnds = ends; best = c; }
        }
        return i + best;
    }

    /** Whether {@code q}'s oldest request has reached the age from which it goes before everything else. */
    boolean starving(VolumeQueue q, double now) {
        return now - q.oldestArrival() >= startsAging();
    }

    /**
     * Share of the aging limit by which aging acts early. A queue that starts at the limit is done only after
     * waiting for a drive and its own service: at 4 drives random-user's oldest requests ended up to 463 s past
     * the 4 h limit. Starting at 90 % of it the latest end 14-19 min inside it (seeds 203-243, 3000-8000 files).
     */
    static final double AGING_LEAD = 0.1;

    /** Age from which a queue goes before everything else (a little before the aging limit, see {@link #AGING_LEAD}). */
    public double startsAging() {
        return config.agingLimitSeconds() * (1 - AGING_LEAD);
    }

    /** Reading time at least this long makes a queue bulk work: its place is set by balancing, not by latency. */
    static final double LONG_WORK_SECONDS = 600;

    /**
     * A queue whose locates and reads take long (a tape-full of a bulk recall): finishing its request a few
     * minutes sooner matters less than drives finishing evenly, so it is balanced even when it completes one.
     */
    public boolean longWork(VolumeQueue q) {
        return locateSeconds(q) + cost.readSeconds(q.bytes()) >= LONG_WORK_SECONDS;
    }

    /**
     * Whether plan ends {@code a} are better than {@code b}: the latest end earlier, or equal (within a
     * second) and the next latest earlier, and so on. When a drive already committed sets the latest end,
     * every choice ties on it; the next ends still tell how evenly the rest finishes.
     */
    static boolean earlier(double[] a, double[] b) {
        for (int k = 0; k < a.length; k++) {
            if (a[k] < b[k] - 1.0) return true;
            if (a[k] > b[k] + 1.0) return false;
        }
        return false;
    }

    /**
     * Predicted ends of the drives' last reads, latest first, when volume {@code c} starts on {@code drive}
     * at {@code now} and the others go longest first to the drive free earliest, then move or swap between
     * drives while a drive's end drops without another's rising to it (latest drives first). A drive ends
     * when its last read ends: the dismount after its last volume is not waited for (the makespan is the
     * end of the reads), and a drive given nothing ends with the reads it holds.
     *
     * @param free     per drive: when it can start a new mount (infinite: failed)
     * @param readEnds per drive: when the reads it holds end
     * @param w        per volume: drive seconds from its mount to the end of its dismount
     * @param u        per volume: its dismount seconds
     */
    static double[] plan(double[] free, double[] readEnds, double[] w, double[] u, int drive, double now, int c) {
        int n = w.length, m = free.length;
        int[] at = new int[n];
        double[] sum = free.clone();
        sum[drive] = now + w[c];
        at[c] = drive;
        Integer[] byWork = new Integer[n];
        for (int k = 0; k < n; k++) byWork[k] = k;
        java.util.Arrays.sort(byWork, (x, y) -> Double.compare(w[y], w[x]));
        for (int k : byWork) {
            if (k == c) continue;
            int best = drive;
            for (int d = 0; d < m; d++) if (sum[d] < sum[best]) best = d;
            at[k] = best;
            sum[best] += w[k];
        }
        Ends e = new Ends(at, u, w, sum, readEnds, c, m);
        double[] end = new double[m];
        Integer[] byEnd = new Integer[m];
        for (int iter = 0; iter < 200; iter++) {
            e.refresh();
            for (int d = 0; d < m; d++) {
                end[d] = Double.isInfinite(free[d]) ? Double.NEGATIVE_INFINITY : e.with(d, -1, -1);
                byEnd[d] = d;
            }
            java.util.Arrays.sort(byEnd, (x, y) -> Double.compare(end[y], end[x]));
            boolean moved = false;
            for (int t = 0; t < m && !moved; t++) {
                int top = byEnd[t];
                if (Double.isInfinite(end[top])) break;
                for (int k = 0; k < n && !moved; k++) {
                    if (at[k] != top || k == c) continue;
                    double topWithout = e.with(top, k, -1);
                    for (int d = 0; d < m && !moved; d++) {
                        if (d == top || Double.isInfinite(free[d])) continue;
                        if (Math.max(e.with(d, -1, k), topWithout) < end[top] - 1e-6) {
                            sum[d] += w[k]; sum[top] -= w[k]; at[k] = d; moved = true;
                            continue;
                        }
                        for (int j = 0; j < n && !moved; j++) {
                            if (at[j] != d || j == c || w[j] >= w[k]) continue;
                            if (Math.max(e.with(d, j, k), e.with(top, k, j)) < end[top] - 1e-6) {
                                double delta = w[k] - w[j];
                                sum[d] += delta; sum[top] -= delta; at[k] = d; at[j] = top; moved = true;
                            }
                        }
                    }
                }
            }
            if (!moved) break;
        }
        e.refresh();
        double[] ends = new double[m];
        for (int d = 0; d < m; d++) ends[d] = Double.isInfinite(free[d]) ? 0 : e.with(d, -1, -1);
        java.util.Arrays.sort(ends);
        for (int l = 0, r = m - 1; l < r; l++, r--) { double x = ends[l]; ends[l] = ends[r]; ends[r] = x; }
        return ends;
    }

    /**
     * Ends of drives' last reads in a plan ({@code at}: volume to drive; {@code sum}: per drive, time to its
     * last dismount). A drive's end is that time less the longest dismount among its volumes, which goes
     * last — except volume {@code c}, mounted now and so first: its dismount is waited for unless it is
     * alone — or the end of the reads it holds when it is given nothing. (Rewinds grow with the bytes a mount
     * moved: a drive that reads a small tape before a big one waits 55 s less than the other way round.)
     * The longest and second longest dismount per drive are kept so that each end is O(1).
     */
    private static final class Ends {
        final int[] at;
        final double[] u, w, sum, readEnds, max1, max2;
        final int[] max1Count;
        final int c;

        Ends(int[] at, double[] u, double[] w, double[] sum, double[] readEnds, int c, int m) {
            this.at = at; this.u = u; this.w = w; this.sum = sum; this.readEnds = readEnds; this.c = c;
            max1 = new double[m];
            max2 = new double[m];
            max1Count = new int[m];
        }

        /** Recomputes the per-drive longest dismounts after the plan changed. */
        void refresh() {
            java.util.Arrays.fill(max1, -1);
            java.util.Arrays.fill(max2, -1);
            java.util.Arrays.fill(max1Count, 0);
            for (int k = 0; k < at.length; k++) {
                if (k == c) continue;
                int d = at[k];
                if (u[k] > max1[d]) { max2[d] = max1[d]; max1[d] = u[k]; max1Count[d] = 1; }
                else if (u[k] == max1[d]) max1Count[d]++;
                else if (u[k] > max2[d]) max2[d] = u[k];
            }
        }

        /** End of drive {@code d} with volume {@code out} taken off it and {@code in} added (-1: none). */
        double with(int d, int out, int in) {
            double maxU = out >= 0 && out != c && at[out] == d && u[out] == max1[d] && max1Count[d] == 1 ? max2[d] : max1[d];
            if (in >= 0) maxU = Math.max(maxU, u[in]);
            if (maxU < 0) {
                if (at[c] != d) return readEnds[d];
                maxU = u[c];
            }
            return sum[d] + (in >= 0 ? w[in] : 0) - (out >= 0 ? w[out] : 0) - maxU;
        }
    }

    /** CTA's test: enough bytes or files queued, or the oldest request old enough. */
    public boolean worthMounting(VolumeQueue q, double now) {
        return q.bytes() >= config.minMountBytes() || q.fileCount() >= config.minMountFiles()
                || now - q.oldestArrival() >= config.minMountAgeSeconds();
    }

    boolean worthMounting(Cand c) {
        return c.q.bytes() >= config.minMountBytes() || c.q.fileCount() >= config.minMountFiles()
                || c.age >= config.minMountAgeSeconds();
    }
}
