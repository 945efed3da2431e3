-- Recall scheduler state. The database is the queue: everything the scheduler decided lives in rows, so a
-- restart (or another instance) carries on from here.
--
-- recall_file: one row per file being recalled, whatever number of requests want it; the unit of claim,
-- so a file is read once even when several scheduler instances share the queue.
--   queued -> staging (claimed by one instance, with a lease) -> on_disk | failed
--   staging -> queued when the read is released (another copy, a retry) or its lease expires.
CREATE TABLE recall_file (
    file_id      bigint      PRIMARY KEY REFERENCES file (id) ON DELETE CASCADE,
    state        text        NOT NULL DEFAULT 'queued'
                 CHECK (state IN ('queued', 'staging', 'on_disk', 'failed')),
    volume       text,                                  -- the copy being (or last) read
    claimed_by   text,                                  -- scheduler instance holding the claim
    lease_until  timestamptz,                           -- the claim lapses after this unless renewed
    attempts     integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    adler32      char(8),                               -- as read from tape
    path         text,                                  -- where the staged bytes are
    error        text,
    updated_at   timestamptz NOT NULL DEFAULT now(),
    CHECK (state <> 'staging' OR (claimed_by IS NOT NULL AND lease_until IS NOT NULL AND volume IS NOT NULL))
);
CREATE INDEX recall_file_staging_idx ON recall_file (lease_until) WHERE state = 'staging';

-- The scheduler's estimate of when a request will be complete (shown by the API).
ALTER TABLE stage_request ADD COLUMN eta_at timestamptz;
