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

    /** Both listeners, this one first (the service's mover feeds the console's rates and the meters). */
    default TransferListener and(TransferListener other) {
        TransferListener first = this;
        return new TransferListener() {
            @Override
            public void bytes(FileCopy copy, long delta) {
                first.bytes(copy, delta);
                other.bytes(copy, delta);
            }

            @Override
            public void written(FileCopy copy, String host, int attempt) {
                first.written(copy, host, attempt);
                other.written(copy, host, attempt);
            }

            @Override
            public void retrying(FileCopy copy, TransferFailure failure) {
                first.retrying(copy, failure);
                other.retrying(copy, failure);
            }
        };
    }
}
