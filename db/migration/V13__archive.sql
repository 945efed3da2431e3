-- Archive (write) path: the landing buffer, tape copies to write, and the volumes of each file family.
--
-- archive file: queued -> writing -> archived -> evictable -> evicted
--                 ^          |
--                 +----------+  a failed write goes back to queued (attempts, error) and is retried
--   'queued'/'writing' say whether any tape copy is still to write or being written; 'archived' means every
--   copy's write is confirmed and its segment is in the catalog; 'evictable' means every EvictionHold agreed.
--   Only evictable files are ever deleted from the buffer ('evicted').
CREATE TABLE archive_file (
    file_id       bigint      PRIMARY KEY REFERENCES file (id) ON DELETE CASCADE,
    path          text        NOT NULL UNIQUE,      -- the file in the landing buffer (absolute, normalised)
    size_bytes    bigint      NOT NULL CHECK (size_bytes >= 0),
    adler32       char(8)     NOT NULL,             -- measured at registration
    family        text        NOT NULL,             -- file family: the dataset or its configured group
    storage_class text        NOT NULL,
    copies        smallint    NOT NULL CHECK (copies IN (1, 2)),
    state         text        NOT NULL DEFAULT 'queued'
                  CHECK (state IN ('queued', 'writing', 'archived', 'evictable', 'evicted')),
    registered_at timestamptz NOT NULL DEFAULT now(),
    archived_at   timestamptz,
    evicted_at    timestamptz,
    updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX archive_file_state_idx ON archive_file (state, archived_at);
CREATE INDEX archive_file_archived_idx ON archive_file (archived_at) WHERE archived_at IS NOT NULL;

-- One tape copy to write. Copy n of a family goes to that family's copy-n volumes, so the two copies of a
-- file are always on different volumes. Claimed with FOR UPDATE SKIP LOCKED and a lease.
CREATE TABLE archive_copy (
    file_id      bigint      NOT NULL REFERENCES archive_file (file_id) ON DELETE CASCADE,
    copy_no      smallint    NOT NULL CHECK (copy_no IN (1, 2)),
    seq          bigserial,                          -- write order within a family (registration order)
    family       text        NOT NULL,
    state        text        NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'writing', 'done')),
    volume_id    bigint      REFERENCES volume (id),
    attempts     integer     NOT NULL DEFAULT 0,
    error        text,                               -- the last failure, kept after a successful retry
    not_before   timestamptz NOT NULL DEFAULT now(), -- retry backoff
    claimed_by   text,
    lease_until  timestamptz,
    PRIMARY KEY (file_id, copy_no)
);
CREATE INDEX archive_copy_queue_idx ON archive_copy (family, copy_no, seq) WHERE state = 'queued';
CREATE INDEX archive_copy_writing_idx ON archive_copy (claimed_by) WHERE state = 'writing';

-- Volumes the archive path writes: blank ones in the pool (family NULL), open ones being appended to by a
-- family's copy n, and full ones (closed). end_of_data is where the next file goes.
CREATE TABLE archive_volume (
    volume_id    bigint      PRIMARY KEY REFERENCES volume (id),
    family       text,
    copy_no      smallint    CHECK (copy_no IN (1, 2)),
    state        text        NOT NULL DEFAULT 'blank' CHECK (state IN ('blank', 'open', 'full')),
    end_of_data  bigint      NOT NULL DEFAULT 0 CHECK (end_of_data >= 0),
    files        integer     NOT NULL DEFAULT 0,
    next_fseq    integer     NOT NULL DEFAULT 1,
    claimed_by   text,                               -- the instance writing it now (one writer per volume)
    lease_until  timestamptz,
    opened_at    timestamptz,
    closed_at    timestamptz,
    CHECK ((state = 'blank') = (family IS NULL))
);
CREATE INDEX archive_volume_family_idx ON archive_volume (family, copy_no, state);

-- One row: registration takes its lock, so concurrent admissions see each other's bytes against the
-- high-water mark.
CREATE TABLE archive_buffer (
    id integer PRIMARY KEY CHECK (id = 1)
);
INSERT INTO archive_buffer VALUES (1);
