package dev.stagehand.replication;

import java.nio.file.Path;
import java.util.Optional;

/**
 * A local disk copy of a catalog file that replication may send from (the archive buffer's
 * {@code locate(fileId)}). Without such a bean, replicas come from other sites or from tape.
 */
@FunctionalInterface
public interface LocalSource {

    Optional<Path> locate(long fileId);
}
