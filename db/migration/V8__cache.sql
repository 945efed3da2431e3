-- Disk cache: directories with capacities, cached copies of catalog files, space reservations, pins.
-- The database is the accounting: every service instance sharing a cache directory reserves and frees
-- space under a row lock on that directory (SELECT ... FOR UPDATE), so the directory is never overfilled.
--
-- cache file: reserved -> writing -> verified -> evicted
--                     \          \-> corrupt (checksum or size mismatch; the copy is deleted at once)
--                      \-> discarded (aborted, or half-written when its node restarted)
--   Only 'verified' copies are ever handed out. At most one live (reserved, writing, verified) copy per
--   file: a second stage of the same file joins the first instead of reading the tape again.

CREATE TABLE cache_directory (
    id             serial      PRIMARY KEY,
    path           text        NOT NULL UNIQUE,             -- absolute, normalised
    capacity_bytes bigint      NOT NULL CHECK (capacity_bytes >= 0),
    used_bytes     bigint      NOT NULL DEFAULT 0 CHECK (used_bytes >= 0),      -- verified copies
    reserved_bytes bigint      NOT NULL DEFAULT 0 CHECK (reserved_bytes >= 0),  -- open reservations
    updated_at     timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE cache_file (
    id            bigserial   PRIMARY KEY,
    file_id       bigint      NOT NULL REFERENCES file (id) ON DELETE CASCADE,
    directory_id  integer     NOT NULL REFERENCES cache_directory (id),
    path          text        NOT NULL UNIQUE,              -- absolute path of this copy
    size_bytes    bigint      NOT NULL CHECK (size_bytes >= 0),
    adler32       char(8),                                  -- measured while writing; NULL until committed
    state         text        NOT NULL DEFAULT 'reserved'
                  CHECK (state IN ('reserved', 'writing', 'verified', 'corrupt', 'discarded', 'evicted')),
    reason        text,                                     -- why corrupt or discarded
    created_at    timestamptz NOT NULL,
    verified_at   timestamptz,
    ended_at      timestamptz,                              -- corrupt, discarded or evicted
    last_access   timestamptz NOT NULL
);
-- One live copy per file: the dedup of in-flight stages is enforced here, across all instances.
CREATE UNIQUE INDEX cache_file_live_idx ON cache_file (file_id) WHERE state IN ('reserved', 'writing', 'verified');
-- Eviction scans verified copies of a directory oldest access first.
CREATE INDEX cache_file_lru_idx ON cache_file (directory_id, last_access) WHERE state = 'verified';
CREATE INDEX cache_file_dir_state_idx ON cache_file (directory_id, state);

-- Space held for a copy being written. Deleted when the copy is committed (verified or corrupt) or aborted.
CREATE TABLE cache_reservation (
    id             bigserial   PRIMARY KEY,
    cache_file_id  bigint      NOT NULL UNIQUE REFERENCES cache_file (id) ON DELETE CASCADE,
    directory_id   integer     NOT NULL REFERENCES cache_directory (id),
    bytes          bigint      NOT NULL CHECK (bytes >= 0),
    node           text        NOT NULL,                    -- service instance whose movers write it
    purpose        text        NOT NULL,                    -- who asked and why, e.g. 'recall volume L00001'
    created_at     timestamptz NOT NULL
);
CREATE INDEX cache_reservation_dir_idx ON cache_reservation (directory_id);
CREATE INDEX cache_reservation_node_idx ON cache_reservation (node);

-- A pin keeps a file on disk until it expires or its owner releases it. Several owners may pin one file.
-- Pins are on catalog files, not copies: a pin taken before the file arrives holds it once it is verified.
CREATE TABLE cache_pin (
    file_id     bigint      NOT NULL REFERENCES file (id) ON DELETE CASCADE,
    owner       text        NOT NULL,                       -- usually the stage request id
    expires_at  timestamptz NOT NULL,
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (file_id, owner)
);
CREATE INDEX cache_pin_owner_idx ON cache_pin (owner);
CREATE INDEX cache_pin_expiry_idx ON cache_pin (expires_at);
