package dev.stagehand.transfer;

/** Optional observer of a mover's progress (progress bars, metrics, tests). Called from mover threads. */
public interface TransferListener {

    /** {@code delta} more bytes of {@code copy} were sent. */
    default void bytes(FileCopy copy, long delta) {}

    /** An attempt finished writing {@code copy} on {@code host}; its checksum is verified next. */
    default void written(FileCopy copy, String host, int attempt) {}

    /** An attempt failed and will be retried. */
    default void retrying(FileCopy copy, TransferFailure failure) {}

    TransferListener NONE = new TransferListener() {};
}
