-- Verified copies lost after the fact (their file found gone from disk at start-up, or found corrupt by a reader):
-- the recall sweep looks up those ended since its last look, to read their files from tape again for the
-- requests still waiting on them. Partial: only such copies have an entry (few; evictions and aborted
-- reservations have none), so the look is cheap however long the cache's history.
CREATE INDEX cache_file_lost_idx ON cache_file (ended_at) WHERE state IN ('discarded', 'corrupt') AND verified_at IS NOT NULL;
