package dev.stagehand.recall.scheduler;

import dev.stagehand.recall.scheduler.RecallEngine.DState;
import dev.stagehand.recall.scheduler.RecallEngine.Drive;
import java.util.ArrayDeque;
import java.util.List;
import java.util.Map;

/**
 * The FIFO baseline policy ({@code --policy fifo}), the plain HSM queue: files in arrival order, the oldest
 * goes to the library alone and the next waits for its turn. Part of a {@link RecallEngine}: called only under
 * the engine's monitor, it holds no lock of its own; its only state is the arrival-order queue (a file on it
 * has {@link FileWork#inFifo} set).
 */
final class FifoPolicy {

    private final RecallEngine engine;
    private final Map<String, Drive> drives;
    private final QueueStore store;
    private final ArrayDeque<FileWork> queue = new ArrayDeque<>();

    FifoPolicy(RecallEngine engine, Map<String, Drive> drives, QueueStore store) {
        this.engine = engine;
        this.drives = drives;
        this.store = store;
    }

    /** A request arrived: its queued files join the end of the queue. */
    void arrived(List<FileWork> files) {
        for (FileWork f : files) if (f.state == FileWork.State.QUEUED && !f.inFifo) { f.inFifo = true; queue.add(f); }
    }

    /**
     * The file was not read after all (no cache space, its read failed or was cancelled, its drive failed, its
     * staged copy lost) and is queued again: it goes back in its arrival place, ahead of the files that arrived
     * after it (the head, unless several went back), its turn kept. The walk stops at that place, near the head.
     */
    void backToHead(FileWork f) {
        if (f.inFifo) return;
        f.inFifo = true;
        ArrayDeque<FileWork> earlier = new ArrayDeque<>();
        while (!queue.isEmpty() && queue.peek().firstArrival < f.firstArrival) earlier.push(queue.poll());
        queue.addFirst(f);
        while (!earlier.isEmpty()) queue.addFirst(earlier.pop());
    }

    /** The FIFO policy's pass: the head's volume is read, mounted, or a drive emptied for it. */
    void pass() {
        while (!queue.isEmpty()) {
            FileWork f = queue.peek();
            if (f.state != FileWork.State.QUEUED) {
                queue.poll().inFifo = false;
                continue;
            }
            String vol = f.home.volume();
            Drive holder = null;
            for (Drive d : drives.values()) if (vol.equals(d.volume)) holder = d;
            if (holder != null) {
                // its volume is busy, or its drive going down (the volume is mounted elsewhere after): the queue waits
                if (holder.state != DState.IDLE || holder.draining) return;
                queue.poll().inFifo = false;
                engine.startBatch(holder, List.of(f));
                if (f.inFifo) return; // no cache space: it waits at the head of the queue
                continue;
            }
            Drive empty = engine.firstDrive(DState.EMPTY, null);
            if (empty != null) {
                if (store.claimVolume(vol)) engine.mount(empty, vol, f.experiment);
                return;
            }
            Drive victim = null;
            for (Drive d : drives.values()) {
                if (d.state == DState.IDLE && (victim == null || d.busyUntil < victim.busyUntil)) victim = d;
            }
            if (victim != null) engine.dismount(victim);
            return;
        }
    }
}
