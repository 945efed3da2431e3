-- The console's write failures (every 2 s while its archive page is open) were picked out of every copy ever
-- written (a sequential scan of archive_copy, 160 ms at 10^6 copies); the copies not written whose last attempt
-- failed are few, and read here newest first along this index.
CREATE INDEX archive_copy_failures_idx ON archive_copy (not_before DESC, file_id) WHERE state <> 'done' AND attempts > 0;
