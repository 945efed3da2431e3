-- A cache directory taken out of service: its staged copies could not be forced to disk (fsync) 3 times in a row
-- (DiskCache.abortNotForced). It gets no new reservations, its verified copies stay readable. The mark was kept in the
-- running instance's memory, so a restart put a broken disk back in service (and every instance sharing it had to
-- find out on its own). Here it outlives restarts and is shared; an operator clears it once the disk is repaired
-- (POST /api/v1/admin/cache/directories/{id}/in-service, or the console's overview).
ALTER TABLE cache_directory
    ADD COLUMN out_of_service_since  timestamptz,
    ADD COLUMN out_of_service_reason text,
    ADD CONSTRAINT cache_directory_out_of_service_ck CHECK ((out_of_service_since IS NULL) = (out_of_service_reason IS NULL));
