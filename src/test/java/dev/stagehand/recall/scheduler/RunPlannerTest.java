package dev.stagehand.recall.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class RunPlannerTest {

    final TestCosts costs = new TestCosts();
    final RunPlanner planner = new RunPlanner(costs, 3_000_000);

    static FileWork f(long id, long offset, long size) {
        return new FileWork(id, "/f" + id, size, List.of(new Copy("V", offset)), "e", "d", null);
    }

    @Test
    void contiguousFilesFormOneRunReadWithoutLocates() {
        List<FileWork> files = List.of(f(3, 3000, 1000), f(1, 1000, 1000), f(2, 2000, 1000));
        assertThat(RunPlanner.runs("V", files)).hasSize(1);
        List<FileWork> order = planner.order("V", files, 0);
        assertThat(order).extracting(FileWork::id).containsExactly(1L, 2L, 3L);
        assertThat(planner.locateSeconds("V", order, 0)).isEqualTo(costs.locateSeconds(0, 1000));
    }

    @Test
    void beatsShortestLocateFirstOnACraftedTape() {
        // wrap 2 x=.1, wrap 1 x=.8, wrap 2 x=.3, wrap 0 x=.2, wrap 0 x=.5: SLTF from BOT strands a far file
        List<FileWork> files = List.of(f(1, 135_000_000_000L, 1_000_000_000L), f(2, 77_142_857_142L, 1_000_000_000L),
                f(3, 147_857_142_857L, 1_000_000_000L), f(4, 12_857_142_857L, 1_000_000_000L),
                f(5, 32_142_857_142L, 1_000_000_000L));
        double sltf = planner.locateSeconds("V", planner.orderSltf("V", files, 0), 0);
        double ours = planner.locateSeconds("V", planner.order("V", files, 0), 0);
        assertThat(sltf).isCloseTo(144.97, org.assertj.core.data.Offset.offset(0.01));
        assertThat(ours).isCloseTo(104.47, org.assertj.core.data.Offset.offset(0.01)); // the optimum (all 120 orders tried offline)
    }

    @Test
    void neverWorseAndOnAverageBetterThanSltfOnRandomTapes() {
        Random rnd = new Random(42);
        double sumSltf = 0, sumOurs = 0;
        for (int t = 0; t < 30; t++) {
            List<FileWork> files = new ArrayList<>();
            for (int i = 0; i < 60; i++) files.add(f(i, (long) (rnd.nextDouble() * 17e12), 2_000_000_000L + rnd.nextInt(1000)));
            double s = planner.locateSeconds("V", planner.orderSltf("V", files, 0), 0);
            List<FileWork> ordered = planner.order("V", files, 0);
            double o = planner.locateSeconds("V", ordered, 0);
            assertThat(ordered).containsExactlyInAnyOrderElementsOf(files);
            assertThat(o).isLessThanOrEqualTo(s + 1e-9);
            sumSltf += s;
            sumOurs += o;
        }
        assertThat(sumOurs).isLessThan(0.95 * sumSltf);
    }
}
