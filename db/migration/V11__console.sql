-- The console's own records (module console).
--
-- tape_mount_log: one row per mount, written by a LibraryEvents listener, so the drive timeline can show
-- which volume was on which drive when. Times are wall-clock (the simulated library may run on a scaled
-- clock; operators read the timeline against real time).
--   requested (mount asked) -> mounted (ready at BOT) | failed -> dismounted
CREATE TABLE tape_mount_log (
    id             bigserial   PRIMARY KEY,
    library        text        NOT NULL,
    drive          text        NOT NULL,
    volume_label   text        NOT NULL,
    requested_at   timestamptz NOT NULL,
    mounted_at     timestamptz,
    dismounted_at  timestamptz,
    failure        text,                    -- why the mount failed (TapeFailure kind and message)
    segments_read  bigint      NOT NULL DEFAULT 0 CHECK (segments_read >= 0),
    bytes_read     bigint      NOT NULL DEFAULT 0 CHECK (bytes_read >= 0),
    CHECK (mounted_at IS NULL OR mounted_at >= requested_at),
    CHECK (dismounted_at IS NULL OR dismounted_at >= requested_at)
);
CREATE INDEX tape_mount_log_time_idx ON tape_mount_log (requested_at);
-- at most one open mount per drive
CREATE UNIQUE INDEX tape_mount_log_open_idx ON tape_mount_log (library, drive)
    WHERE dismounted_at IS NULL AND failure IS NULL;

-- audit_log: every operator action taken through the console (who, what, when, on what, outcome).
CREATE TABLE audit_log (
    id        bigserial   PRIMARY KEY,
    at        timestamptz NOT NULL DEFAULT now(),
    actor     text        NOT NULL,
    action    text        NOT NULL,     -- e.g. request.cancel, request.priority, transfer.retry, volume.state
    target    text        NOT NULL,     -- the request id, transfer job id, volume label, drive name
    detail    text,                     -- parameters and outcome
    outcome   text        NOT NULL CHECK (outcome IN ('ok', 'refused', 'error'))
);
CREATE INDEX audit_log_at_idx ON audit_log (at DESC);
