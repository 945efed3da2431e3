package dev.stagehand.recall.scheduler;

import dev.stagehand.tape.TapeModel;

/** The tape module's model seen as the scheduler's cost model: one copy of the timing logic. */
public record TapeModelCosts(TapeModel model) implements CostModel {
    @Override public double locateSeconds(long from, long to) { return model.locateSeconds(from, to); }
    @Override public int wrap(long offset) { return model.wrap(offset); }
    @Override public double position(long offset) { return model.position(offset); }
    @Override public double minLocateSeconds() { return model.locateBaseSeconds(); }
    @Override public double readSeconds(long bytes) { return model.transferSeconds(bytes); }
    @Override public double mountSeconds() { return model.mountSeconds(); }
    @Override public double dismountSeconds(long bytesMoved) { return model.dismountSeconds(bytesMoved); }
    @Override public double accessorMoveSeconds() { return model.accessorMoveSeconds(); }
}
