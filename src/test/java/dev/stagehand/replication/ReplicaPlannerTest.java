package dev.stagehand.replication;

import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.replication.ReplicaPlanner.Decision;
import dev.stagehand.replication.ReplicaPlanner.FileView;
import dev.stagehand.replication.ReplicaPlanner.FromLocal;
import dev.stagehand.replication.ReplicaPlanner.FromSite;
import dev.stagehand.replication.ReplicaPlanner.FromTape;
import dev.stagehand.replication.ReplicaPlanner.Link;
import dev.stagehand.replication.ReplicaPlanner.SiteRef;
import dev.stagehand.replication.ReplicaPlanner.Wait;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ReplicaPlannerTest {

    static final SiteRef BNL = new SiteRef(1, "BNL", Map.of("region", "US", "tier", "0"));
    static final SiteRef FNAL = new SiteRef(2, "FNAL", Map.of("region", "US", "tier", "1"));
    static final SiteRef FZK = new SiteRef(3, "FZK", Map.of("region", "EU", "tier", "1"));
    static final SiteRef IN2P3 = new SiteRef(4, "IN2P3", Map.of("region", "EU", "tier", "1"));
    static final SiteRef DESY = new SiteRef(5, "DESY", Map.of("region", "EU", "tier", "2"));

    static final Link ATLANTIC = new Link("atlantic", SiteExpression.parse("region=US"), SiteExpression.parse("region=EU"));

    final ReplicaPlanner chained = new ReplicaPlanner(BNL, List.of(ATLANTIC));
    final ReplicaPlanner flat = new ReplicaPlanner(BNL, List.of());

    static FileView view(SiteRef target, List<SiteRef> holders, List<SiteRef> inFlight, boolean local, boolean tape) {
        return new FileView(target, holders, inFlight, local, tape, null);
    }

    @Test
    void localCopyFirstThenSitesThenTape() {
        assertThat(flat.decide(view(FNAL, List.of(FZK), List.of(), true, true))).isEqualTo(new FromLocal(null));
        assertThat(flat.decide(view(FNAL, List.of(FZK), List.of(), false, true))).isEqualTo(new FromSite(FZK, null));
        assertThat(flat.decide(view(FNAL, List.of(), List.of(), false, true))).isEqualTo(new FromTape(null));
        assertThat(flat.decide(view(FNAL, List.of(), List.of(), false, false))).isInstanceOf(Wait.class)
                .extracting(d -> ((Wait) d).reason()).asString().startsWith("no source");
    }

    @Test
    void theTargetIsNeverItsOwnSource() {
        assertThat(flat.decide(view(FZK, List.of(FZK), List.of(), false, true))).isEqualTo(new FromTape(null));
    }

    @Test
    void oneCopyCrossesTheBottleneckTheOthersFanOutFromIt() {
        // FZK is first: nothing on the EU side yet, so it crosses from the buffer at BNL
        Decision first = chained.decide(view(FZK, List.of(), List.of(), true, true));
        assertThat(first).isEqualTo(new FromLocal("atlantic"));
        // IN2P3 and DESY wait while FZK's copy is on its way
        Decision second = chained.decide(view(IN2P3, List.of(), List.of(FZK), true, true));
        assertThat(second).isInstanceOf(Wait.class);
        assertThat(((Wait) second).reason()).contains("FZK").contains("atlantic");
        // once FZK has it, the others copy from FZK, not across the link
        assertThat(chained.decide(view(DESY, List.of(FZK), List.of(), true, true))).isEqualTo(new FromSite(FZK, null));
        // a US site still reads the local copy (no bottleneck between BNL and FNAL)
        assertThat(chained.decide(view(FNAL, List.of(FZK), List.of(FZK), true, true))).isEqualTo(new FromLocal(null));
    }

    @Test
    void usSiteWithOnlyAnEuropeanCopyAndNoLocalCrossesFromIt() {
        assertThat(chained.decide(view(FNAL, List.of(FZK), List.of(), false, false))).isEqualTo(new FromSite(FZK, "atlantic"));
        // but prefers tape at home over crossing the link
        assertThat(chained.decide(view(FNAL, List.of(FZK), List.of(), false, true))).isEqualTo(new FromTape(null));
    }

    @Test
    void aSourcePreferenceIsHonouredWhenItCanBe() {
        FileView v = new FileView(DESY, List.of(FZK, IN2P3), List.of(), false, false, SiteExpression.parse("IN2P3"));
        assertThat(flat.decide(v)).isEqualTo(new FromSite(IN2P3, null));
        FileView none = new FileView(DESY, List.of(FZK), List.of(), false, false, SiteExpression.parse("IN2P3"));
        assertThat(flat.decide(none)).isEqualTo(new FromSite(FZK, null));
    }

    @Test
    void waitsForACopyUnderWayWhenThereIsNoSourceYet() {
        Decision d = flat.decide(view(DESY, List.of(), List.of(FZK), false, false));
        assertThat(d).isInstanceOf(Wait.class);
        assertThat(((Wait) d).reason()).contains("FZK");
    }
}
