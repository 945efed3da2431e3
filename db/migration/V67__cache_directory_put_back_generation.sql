-- Counts an operator's put-backs of a cache directory (DiskCache.putInService). Each instance counts in memory the
-- staged copies it could not force to disk in a row and takes the directory out of service at 3; a put-back restarted
-- that count only on the instance that handled it, so another instance sharing the directory, still at 2 or 3 from
-- before the repair, took it straight out again at its next failure. Each instance reads this number with the
-- directory at a failure and counts again from 1 when it has grown, whichever instance put the directory back.
ALTER TABLE cache_directory ADD COLUMN put_back_generation integer NOT NULL DEFAULT 0;
