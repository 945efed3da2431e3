package dev.stagehand.recall.scheduler;

/**
 * Test-only LTO-9 costs after ../shared/docs/tape-model.md, so the scheduler's unit tests run without the
 * simulated library. Production and simulation use the tape module's model through an adapter.
 */
final class TestCosts implements CostModel {
    static final double C = 18e12, W = 280, CW = C / W;

    @Override public int wrap(long offset) { return wrapOf(offset); }
    @Override public double position(long offset) { return x(offset); }

    static int wrapOf(long o) { return (int) Math.min(W - 1, Math.floor(o / CW)); }

    static double x(long o) {
        int w = wrapOf(o);
        double f = (o - w * CW) / CW;
        return w % 2 == 0 ? f : 1 - f;
    }

    @Override
    public double locateSeconds(long from, long to) {
        if (from == to) return 0;
        int w1 = wrapOf(from), w2 = wrapOf(to);
        double x1 = x(from), x2 = x(to);
        double s = 4.3;
        if (w1 != w2) s += 6.7;
        if (w1 / 70 != w2 / 70) s += 3.2;
        if (w1 % 2 != w2 % 2) s += 5.2;
        if (w1 == w2 && to < from) s += 11.3;
        return s + 60 * Math.abs(x2 - x1);
    }

    @Override public double minLocateSeconds() { return 4.3; }
    @Override public double readSeconds(long bytes) { return bytes / 400e6; }
    @Override public double mountSeconds() { return 6.7 + 17; }
    @Override public double dismountSeconds(long moved) { return unload(moved) + 6.7; }
    @Override public double accessorMoveSeconds() { return 6.7; }

    static double unload(long moved) { return (moved < 5e9 ? 55 : moved < 50e9 ? 110 : 165) + 30; }
}
