package dev.stagehand.recall;

import java.util.List;

/**
 * Where files are: on tape (a good segment on an available volume), on disk (a verified copy in the disk
 * cache), both, or neither; what the WLCG Tape REST API's {@code archiveinfo} reports.
 */
public interface FileLocality {

    enum Locality {
        /** on tape only */
        TAPE,
        /** in the disk cache only (no usable tape copy) */
        DISK,
        DISK_AND_TAPE,
        /** no copy anywhere (never archived) */
        NONE,
        /** every tape copy is lost */
        LOST,
        /** tape copies exist but none can be read now (volume disabled or broken, segment suspect) */
        UNAVAILABLE
    }

    /** One path's answer: {@code locality}, or null with {@code error} (bad or unknown path). */
    record Info(String path, Locality locality, String error) {}

    /** One answer per path, in the order given. */
    List<Info> locality(List<String> paths);
}
