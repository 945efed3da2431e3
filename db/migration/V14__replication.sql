-- Datasets at sites: replication rules, replicas, per-site completeness, scheduled runs (module replication).
-- Sites and their endpoints are the catalog's (V1: site, site_endpoint).

-- The Adler32 the destination reported for a finished transfer (the mover's CKSM/SCKS check); NULL when
-- the mover did not verify. Replication compares it with the catalog's checksum to call a replica verified.
ALTER TABLE transfer_job ADD COLUMN dest_adler32 bigint CHECK (dest_adler32 BETWEEN 0 AND 4294967295);

-- A bottleneck link between two groups of sites (each a site expression). At most one copy of a file
-- crosses it; further copies on the far side fan out from the site that received it.
CREATE TABLE replication_link (
    id          bigserial PRIMARY KEY,
    name        text NOT NULL UNIQUE,
    side_a      text NOT NULL,
    side_b      text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- A rule: dataset D must have `copies` copies at sites matching `site_expression`.
CREATE TABLE replication_rule (
    id                bigserial PRIMARY KEY,
    dataset_id        bigint NOT NULL REFERENCES dataset (id) ON DELETE CASCADE,
    copies            int    NOT NULL CHECK (copies BETWEEN 1 AND 100),
    site_expression   text   NOT NULL,
    source_expression text,                         -- preferred source sites (NULL: any)
    schedule          text,                         -- Quartz cron; NULL: continuous (new files at once)
    state             text   NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'expired')),
    note              text,                         -- why the rule cannot be met (e.g. too few sites match)
    owner             text   NOT NULL DEFAULT 'anonymous',
    expires_at        timestamptz,                  -- lifetime; after it the rule holds nothing
    created_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX replication_rule_dataset ON replication_rule (dataset_id);

-- The sites a rule chose (N of those matching); fixed once chosen so copies are not reshuffled.
CREATE TABLE replication_rule_site (
    rule_id  bigint NOT NULL REFERENCES replication_rule (id) ON DELETE CASCADE,
    site_id  bigint NOT NULL REFERENCES site (id) ON DELETE CASCADE,
    PRIMARY KEY (rule_id, site_id)
);

-- One copy of a file at a site. One row per (file, site) whatever the number of rules wanting it.
-- pending -> staging (from tape) -> transferring -> done -> verified; failed (final, after max attempts);
-- lost (declared lost or bad and wanted by no rule: not a source any more).
CREATE TABLE replica (
    file_id          bigint NOT NULL REFERENCES file (id) ON DELETE CASCADE,
    site_id          bigint NOT NULL REFERENCES site (id) ON DELETE CASCADE,
    state            text   NOT NULL DEFAULT 'pending'
                     CHECK (state IN ('pending', 'staging', 'transferring', 'done', 'verified', 'failed', 'lost')),
    source           text,                         -- where the current attempt reads: a site name, 'local' or 'tape'
    transfer_job_id  bigint,                       -- transfer_job row of the current attempt
    stage_request_id uuid,                         -- recall request of the current attempt (tape source)
    attempts         int    NOT NULL DEFAULT 0,
    last_error       text,
    waiting_for      text,                         -- why a pending replica is not dispatched yet
    next_attempt_at  timestamptz,
    adler32          char(8),                      -- verified destination checksum
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    done_at          timestamptz,
    PRIMARY KEY (file_id, site_id)
);
CREATE INDEX replica_open ON replica (state) WHERE state IN ('pending', 'staging', 'transferring');
CREATE INDEX replica_site ON replica (site_id);

-- Which rules want which replica (dedup across rules; scheduled rules add files on each run).
CREATE TABLE replication_rule_replica (
    rule_id  bigint NOT NULL REFERENCES replication_rule (id) ON DELETE CASCADE,
    file_id  bigint NOT NULL,
    site_id  bigint NOT NULL,
    PRIMARY KEY (rule_id, file_id, site_id),
    FOREIGN KEY (file_id, site_id) REFERENCES replica (file_id, site_id) ON DELETE CASCADE
);
CREATE INDEX replication_rule_replica_file ON replication_rule_replica (file_id, site_id);

-- Completeness of a dataset at a site (the files rules want there), recomputed by the engine.
CREATE TABLE dataset_site_status (
    dataset_id        bigint NOT NULL REFERENCES dataset (id) ON DELETE CASCADE,
    site_id           bigint NOT NULL REFERENCES site (id) ON DELETE CASCADE,
    files_total       bigint NOT NULL,
    files_done        bigint NOT NULL,
    files_verified    bigint NOT NULL,
    files_failed      bigint NOT NULL,
    bytes_total       bigint NOT NULL,
    bytes_done        bigint NOT NULL,
    state             text   NOT NULL CHECK (state IN ('OK', 'REPLICATING', 'STUCK')),
    reason            text,
    last_progress_at  timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (dataset_id, site_id)
);

-- One run of a scheduled rule (Quartz job), whichever instance ran it.
CREATE TABLE replication_run (
    id           bigserial PRIMARY KEY,
    rule_id      bigint NOT NULL REFERENCES replication_rule (id) ON DELETE CASCADE,
    instance     text   NOT NULL,
    scheduled_at timestamptz,                      -- the trigger's scheduled fire time
    started_at   timestamptz NOT NULL DEFAULT now(),
    finished_at  timestamptz,
    files_added  int,
    outcome      text                              -- settled | timed out | error: ...
);
CREATE INDEX replication_run_rule ON replication_run (rule_id, id);

-- Who runs the engine's pass now (one instance at a time; a lease, so a dead instance is taken over).
CREATE TABLE replication_engine_lease (
    name        text PRIMARY KEY,
    owner       text NOT NULL,
    until       timestamptz NOT NULL
);
INSERT INTO replication_engine_lease (name, owner, until) VALUES ('engine', '', '-infinity');
