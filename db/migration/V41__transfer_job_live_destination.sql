-- A cancelled transfer's partial file is deleted only when no live transfer goes to the same destination
-- (replication's next attempt, an operator's retry): that look-up walks this index, over live rows only.
CREATE INDEX transfer_job_live_destination ON transfer_job (destination) WHERE state IN ('queued', 'active');
