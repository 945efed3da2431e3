-- A destination that cannot be reached (refused, timed out, stalled) after the mover's own attempts does not
-- fail its files: they go back to the queue and wait (not_before) until the outage is over, for at most
-- stagehand.transfer.queue.outage.give-up-after since their first such failure (outage_since).
ALTER TABLE transfer_job
    ADD COLUMN not_before   timestamptz NOT NULL DEFAULT now(), -- not claimed before this
    ADD COLUMN deferrals    int NOT NULL DEFAULT 0,             -- times put back for an outage
    ADD COLUMN outage_since timestamptz;                        -- first of the current run of outage failures

UPDATE transfer_job SET not_before = created_at WHERE state = 'queued';

-- claims take ready rows in the order they became ready: fresh rows by arrival, put-back rows when due
DROP INDEX transfer_job_queued;
CREATE INDEX transfer_job_ready ON transfer_job (not_before, id) WHERE state = 'queued';
