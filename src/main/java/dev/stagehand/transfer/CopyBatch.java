package dev.stagehand.transfer;

import java.util.concurrent.CompletableFuture;

/** Files under way in one {@link Mover#submit} call; each completes on its own. */
public interface CopyBatch {

    /** Completes when this file is on the destination and verified; fails with a {@link TransferFailure}. */
    CompletableFuture<CopyResult> result(FileCopy copy);

    /** Drops a file not yet finished (its future fails with kind CANCELLED). */
    void cancel(FileCopy copy);

    /** Cancels every file not yet finished. */
    void cancelAll();

    /** Completes when every file has completed, failed or been cancelled. */
    CompletableFuture<Void> done();
}
