-- The transfer queue: one row per file to move, drained by the GridFTP movers (module transfer).
-- queued -> active (claimed with a lease) -> done | failed; cancelled by the caller while queued/active.
-- An active row whose lease ran out (its service died) is claimed again.
CREATE TABLE transfer_job (
    id               bigserial PRIMARY KEY,
    correlation      text,                       -- the caller's reference (stage request, replication rule ...)
    source           text   NOT NULL,            -- file: URI, or gsiftp:// / ftp:// for third-party
    destination      text   NOT NULL,            -- destination file URL (host list allowed)
    size_bytes       bigint NOT NULL CHECK (size_bytes >= 0),
    adler32          bigint CHECK (adler32 BETWEEN 0 AND 4294967295),   -- expected; NULL: computed while sending
    state            text   NOT NULL DEFAULT 'queued'
                     CHECK (state IN ('queued', 'active', 'done', 'failed', 'cancelled')),
    attempts         int    NOT NULL DEFAULT 0,  -- claims by a mover (each claim may retry internally)
    mover_attempts   int    NOT NULL DEFAULT 0,  -- attempts the mover reported for the last claim
    last_error_class text,                       -- TransferFailure.Kind of the last failure
    last_error       text,
    bytes_moved      bigint NOT NULL DEFAULT 0,
    mb_per_s         double precision,
    lease_owner      text,
    lease_until      timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    started_at       timestamptz,
    finished_at      timestamptz,
    CHECK (state <> 'active' OR (lease_owner IS NOT NULL AND lease_until IS NOT NULL)),
    CHECK (state NOT IN ('done', 'failed', 'cancelled') OR finished_at IS NOT NULL)
);

CREATE INDEX transfer_job_queued ON transfer_job (id) WHERE state = 'queued';
CREATE INDEX transfer_job_active_lease ON transfer_job (lease_until) WHERE state = 'active';
CREATE INDEX transfer_job_correlation ON transfer_job (correlation);
