-- The replica history's ?file= (module replication) finds a deleted file's id by its name in replica_event_file
-- (V68), which holds every file deleted within history-keep (a bulk delete of 10^6 files: 10^6 rows) and had no
-- index on the name: every ?file= query, of a live file too, read the whole table (~200 ms at 10^6 rows). The
-- index costs a bulk delete about 0.5-1 s per 2*10^5 files, beside 8-15 s of the foreign keys' cascades
-- (bench/replica-history.sh). All deleted files are named, not only those that had replicas: the file's statement
-- trigger runs after the cascade took the replicas, so it cannot tell them apart.
CREATE INDEX replica_event_file_name ON replica_event_file (name);
