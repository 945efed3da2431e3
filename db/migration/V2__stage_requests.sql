-- Stage (recall) requests. The database is the queue: every state lives in these rows.
--
-- request: submitted -> active -> done | failed | cancelled
--   done when every file is done (or on disk, for a request without destination); failed when every
--   file has ended and at least one failed; cancelled when cancelled as a whole.
-- request file: queued -> staging -> on_disk -> transferring -> done | failed | cancelled
--   a request without a destination ends its files at on_disk (pinned until released or expired).

CREATE TABLE stage_request (
    id                uuid        PRIMARY KEY,
    client_request_id text,                                  -- idempotency key chosen by the client
    owner             text        NOT NULL,                  -- user (account) that submitted it
    experiment        text,                                  -- owning experiment / VO
    priority          integer     NOT NULL DEFAULT 0,        -- higher is more urgent
    destination       text,                                  -- optional: where staged files are sent
    disk_lifetime_s   bigint,                                -- pin lifetime once on disk (WLCG diskLifetime)
    state             text        NOT NULL DEFAULT 'submitted'
                      CHECK (state IN ('submitted', 'active', 'done', 'failed', 'cancelled')),
    file_count        integer     NOT NULL CHECK (file_count > 0),
    created_at        timestamptz NOT NULL DEFAULT now(),
    started_at        timestamptz,
    completed_at      timestamptz,
    UNIQUE (owner, client_request_id)
);
CREATE INDEX stage_request_state_idx ON stage_request (state, created_at);

CREATE TABLE stage_request_file (
    request_id   uuid   NOT NULL REFERENCES stage_request (id) ON DELETE CASCADE,
    file_id      bigint NOT NULL REFERENCES file (id),
    state        text   NOT NULL DEFAULT 'queued'
                 CHECK (state IN ('queued', 'staging', 'on_disk', 'transferring', 'done', 'failed', 'cancelled')),
    error        text,
    released     boolean NOT NULL DEFAULT false,          -- the client released (unpinned) it
    started_at   timestamptz,
    finished_at  timestamptz,
    PRIMARY KEY (request_id, file_id)
);
CREATE INDEX stage_request_file_file_idx ON stage_request_file (file_id);
CREATE INDEX stage_request_file_active_idx ON stage_request_file (state) WHERE state IN ('queued', 'staging', 'transferring');
