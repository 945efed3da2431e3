package dev.stagehand.replication;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

/**
 * Where a missing replica should come from: the engine's decision, free of I/O so it is unit-tested.
 *
 * <p>Sources, best first: the local disk copy (the archive buffer), a done or verified replica at another
 * site (a third-party GridFTP copy), tape (the recall path). A source whose copy would cross a bottleneck
 * link is used only when no other will do, and then only once per file and far side: while a copy is
 * already on its way to a site on the target's side of the link, the target waits and later fans out from
 * that site. The local copy and tape sit at the home site ({@code stagehand.replication.home-site}).
 */
final class ReplicaPlanner {

    /** A site as the planner sees it. */
    record SiteRef(long id, String name, Map<String, String> attributes) implements SiteExpression.Candidate {}

    /** A bottleneck link between the sites matching {@code a} and those matching {@code b} (either way). */
    record Link(String name, SiteExpression a, SiteExpression b) {
        boolean crosses(SiteRef from, SiteRef to) {
            return (a.matches(from) && b.matches(to) && !a.matches(to)) || (b.matches(from) && a.matches(to) && !b.matches(to));
        }
    }

    sealed interface Decision permits FromSite, FromLocal, FromTape, Wait {}

    /** Third-party copy from a site holding a good replica; {@code crossing} names the bottleneck crossed, if any. */
    record FromSite(SiteRef site, String crossing) implements Decision {}

    record FromLocal(String crossing) implements Decision {}

    record FromTape(String crossing) implements Decision {}

    /** Not now: {@code reason} says why (shown to users as the replica's waiting_for). */
    record Wait(String reason) implements Decision {}

    /**
     * What is known of one file for one missing replica.
     *
     * @param target     the site that needs the copy
     * @param holders    sites with a done or verified replica of the file
     * @param inFlight   sites whose replica of the file is being made (staging or transferring)
     * @param local      a local disk copy exists
     * @param onTape     a readable tape copy exists
     * @param preference the rule's preferred source sites, or null
     */
    record FileView(SiteRef target, List<SiteRef> holders, List<SiteRef> inFlight, boolean local, boolean onTape,
                    SiteExpression preference) {}

    private final SiteRef home;
    private final List<Link> links;

    ReplicaPlanner(SiteRef home, List<Link> links) {
        this.home = home;
        this.links = List.copyOf(links);
    }

    /** The first bottleneck a copy from {@code from} to {@code to} crosses, or null. */
    String crossing(SiteRef from, SiteRef to) {
        for (Link l : links) if (l.crosses(from, to)) return l.name();
        return null;
    }

    Decision decide(FileView v) {
        List<SiteRef> holders = new ArrayList<>();
        for (SiteRef h : v.holders()) if (h.id() != v.target().id()) holders.add(h);
        holders.sort(Comparator.comparing(SiteRef::name));
        if (v.preference() != null) {
            List<SiteRef> preferred = holders.stream().filter(v.preference()::matches).toList();
            if (!preferred.isEmpty()) holders = new ArrayList<>(preferred);
        }
        String homeCrossing = crossing(home, v.target());
        // 1. a source that crosses no bottleneck
        if (v.local() && homeCrossing == null) return new FromLocal(null);
        for (SiteRef h : holders) if (crossing(h, v.target()) == null) return new FromSite(h, null);
        if (v.onTape() && homeCrossing == null) return new FromTape(null);
        // 2. a copy on its way to a site this one can fan out from
        for (SiteRef z : v.inFlight()) {
            if (z.id() == v.target().id() || crossing(z, v.target()) != null) continue;
            String crossed = v.local() || v.onTape() ? homeCrossing : holders.isEmpty() ? null : crossing(holders.getFirst(), v.target());
            return new Wait("waiting for the copy on its way to " + z.name()
                    + (crossed == null ? "" : " across bottleneck " + crossed) + ", to copy from there");
        }
        // 3. cross the bottleneck (this replica is the one copy that does)
        if (v.local()) return new FromLocal(homeCrossing);
        if (!holders.isEmpty()) return new FromSite(holders.getFirst(), crossing(holders.getFirst(), v.target()));
        if (v.onTape()) return new FromTape(homeCrossing);
        return new Wait("no source: no copy at any site, none on local disk, none on readable tape");
    }
}
