package dev.stagehand.cache;

/** Space wanted for one catalog file about to be read from tape into the cache. */
public record SpaceRequest(long fileId, long sizeBytes) {
    public SpaceRequest {
        if (sizeBytes < 0) throw new IllegalArgumentException("negative size " + sizeBytes + " for file " + fileId);
    }
}
