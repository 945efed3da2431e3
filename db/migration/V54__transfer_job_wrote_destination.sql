-- Whether a transfer has begun writing at its destination: set (and committed) by the mover before its first
-- STOR or ESTO there. Only then is the file there the row's own: resumed or written over by its later claims
-- (restart markers, a restart of the service mid-file), and deleted when it fails for good or is cancelled.
-- A row that has not written there looks first: the same file (size and Adler32) is done without sending, another
-- one fails it (DESTINATION_EXISTS) unless overwriting is enabled (stagehand.transfer.existing-destination); and a
-- failure before any write (authentication, a directory it could not make, an unreadable source) deletes nothing.
ALTER TABLE transfer_job ADD COLUMN wrote_destination boolean NOT NULL DEFAULT false;
-- Rows claimed before this version may have written: they keep the behaviour they had (their destination is theirs).
UPDATE transfer_job SET wrote_destination = true WHERE state IN ('queued', 'active', 'failed') AND started_at IS NOT NULL;
-- A row whose caller owns its destination path (replication: a replica's place at a site, where a copy declared bad
-- or left by an earlier transfer may lie) writes over a file there it did not write, whatever existing-destination says.
ALTER TABLE transfer_job ADD COLUMN overwrite boolean NOT NULL DEFAULT false;
-- A recall request whose files' transfers do so (replication's recalls from tape to a site); not set by API clients.
ALTER TABLE stage_request ADD COLUMN overwrite boolean NOT NULL DEFAULT false;
-- Replication's rows from before this version overwrote (every transfer did): their unfinished ones still do.
UPDATE transfer_job SET overwrite = true WHERE correlation LIKE 'replica:%' AND state IN ('queued', 'active', 'failed');
UPDATE stage_request SET overwrite = true
 WHERE destination IS NOT NULL AND state IN ('submitted', 'active') AND id IN (SELECT stage_request_id FROM replica);
UPDATE transfer_job j SET overwrite = true FROM stage_request r
 WHERE r.overwrite AND j.correlation LIKE 'stage:' || r.id::text || ':%' AND j.state IN ('queued', 'active', 'failed');
