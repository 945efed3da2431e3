package dev.stagehand.recall.scheduler;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The lower bound on a recall's makespan of ../shared/docs/tape-model.md, computed exactly: the maximum of
 * (a) the longest tape, (b) total drive work over D, (c) the pigeonhole bound when tapes outnumber drives,
 * (d) accessor work over A and (e) the latest arrival plus its read. Valid whatever the scheduler does.
 */
public final class LowerBound {

    /** One distinct requested file. */
    public record Item(String volume, long offsetBytes, long sizeBytes, double arrival) {}

    /** The bound and its parts, in seconds. */
    public record Result(double bound, double longestTape, double driveWork, double pigeonhole, double accessorWork,
                         double arrivals, int volumes) {}

    private LowerBound() {}

    public static Result compute(List<Item> files, int drives, int accessors, CostModel cost) {
        if (files.isEmpty()) return new Result(0, 0, 0, 0, 0, 0, 0);
        Map<String, List<Item>> perTape = new HashMap<>();
        double e = 0;
        for (Item f : files) {
            perTape.computeIfAbsent(f.volume(), k -> new ArrayList<>()).add(f);
            e = Math.max(e, f.arrival() + cost.readSeconds(f.sizeBytes()));
        }
        List<Double> p = new ArrayList<>();
        List<Double> u = new ArrayList<>();
        for (List<Item> tape : perTape.values()) {
            tape.sort((x, y) -> Long.compare(x.offsetBytes(), y.offsetBytes()));
            long bytes = 0;
            int runs = 0;
            long end = -1;
            double firstLocate = Double.POSITIVE_INFINITY;
            for (Item f : tape) {
                bytes += f.sizeBytes();
                if (f.offsetBytes() != end) runs++;
                end = f.offsetBytes() + f.sizeBytes();
                firstLocate = Math.min(firstLocate, cost.locateSeconds(0, f.offsetBytes()));
            }
            double pt = cost.mountSeconds() + cost.readSeconds(bytes) + firstLocate + cost.minLocateSeconds() * (runs - 1);
            p.add(pt);
            u.add(cost.dismountSeconds(bytes));
        }
        int n = p.size();
        p.sort(Collections.reverseOrder());
        Collections.sort(u);
        double a = p.get(0);
        double sumP = 0;
        for (double x : p) sumP += x;
        double sumU = 0;
        for (int i = 0; i < Math.max(0, n - drives); i++) sumU += u.get(i);
        double b = (sumP + sumU) / drives;
        double c = n > drives ? p.get(drives - 1) + u.get(0) + p.get(drives) : 0;
        double r = cost.accessorMoveSeconds();
        double d = (n + Math.max(0, n - drives)) * r / accessors + p.get(n - 1) - r;
        double lb = Math.max(Math.max(a, b), Math.max(Math.max(c, d), e));
        return new Result(lb, a, b, c, d, e, n);
    }
}
