package dev.stagehand.archive;

import java.util.Collection;
import java.util.List;

/**
 * A say in when an archived file may leave the landing buffer. Every bean of this type is asked (in bulk)
 * about files whose tape copies are all written and in the catalog; a file becomes evictable only when
 * every hold lets it go, and is never deleted before. Replication implements it to keep files until the
 * replicas its rules require are done. Asked when a file is archived (it then shows as 'evictable') and again just
 * before it is deleted, so a hold may change its mind until then. Called from the archive's housekeeping
 * thread, outside any transaction of the archive; it must not block for long.
 */
public interface EvictionHold {

    /**
     * @param fileIds catalog ids of archived files still in the buffer (at most a few thousand per call)
     * @return those of them that may be deleted from the buffer as far as this hold is concerned
     */
    Collection<Long> mayEvict(List<Long> fileIds);
}
