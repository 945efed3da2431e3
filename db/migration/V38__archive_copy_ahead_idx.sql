-- The archive poll's count of copies registered on a clock ahead (ArchiveFlusher.QUEUED_SQL, every round) had no
-- index of its own: with statistics older than a burst of registrations the planner costed its two candidates the
-- same and, in 2 of 6 clean-clone runs, walked a family's whole queue along archive_copy_queue_idx (7,500 copies a
-- family, 1,500 blocks; ArchiveRoundsIT.thePollReadsTheFamiliesNotEveryQueuedCopy). Like archive_copy_requeued_idx
-- for the copies in backoff: this one holds only the copies its condition selects (0.6 ms, 212-309 blocks).
CREATE INDEX archive_copy_ahead_idx ON archive_copy (family, copy_no, registered_at)
 WHERE state = 'queued' AND not_before = registered_at;
