package dev.stagehand.recall.scheduler;

import dev.stagehand.tape.ReadResult;

/** What the engine did, for metrics, simulation reports and logs. Times in seconds on the engine's line. */
public interface EngineListener {
    default void mountStarted(String drive, String volume, double t) {}
    default void mounted(String drive, String volume, double t) {}
    default void segmentRead(String drive, FileWork file, ReadResult result, double t) {}
    default void fileFailed(FileWork file, double t) {}
    default void requestFinished(RequestWork request, double t) {}
    default void dismountStarted(String drive, String volume, long bytesMoved, double t) {}
    default void dismounted(String drive, double t) {}

    EngineListener NONE = new EngineListener() {};
}
