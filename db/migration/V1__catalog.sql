-- Catalog: what the HSM knows about files and where they sit on tape.

CREATE TABLE dataset (
    id          bigserial PRIMARY KEY,
    name        text        NOT NULL UNIQUE,
    experiment  text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE file (
    id          bigserial PRIMARY KEY,
    name        text        NOT NULL UNIQUE,          -- logical file name (absolute path)
    size_bytes  bigint      NOT NULL CHECK (size_bytes >= 0),
    adler32     char(8),                              -- lower-case hex; NULL while unknown
    dataset_id  bigint      REFERENCES dataset (id),
    experiment  text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX file_dataset_idx ON file (dataset_id);

CREATE TABLE volume (
    id          bigserial PRIMARY KEY,
    label       text        NOT NULL UNIQUE,          -- VID
    library     text        NOT NULL DEFAULT 'default',
    media_type  text        NOT NULL DEFAULT 'LTO-9',
    state       text        NOT NULL DEFAULT 'available'
                CHECK (state IN ('available', 'disabled', 'broken')),
    state_reason text,
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- A tape copy of a file. A file may have copies on several volumes.
CREATE TABLE segment (
    file_id      bigint NOT NULL REFERENCES file (id) ON DELETE CASCADE,
    volume_id    bigint NOT NULL REFERENCES volume (id),
    offset_bytes bigint NOT NULL CHECK (offset_bytes >= 0),
    fseq         integer,                             -- file sequence number, where the HSM uses them
    state        text   NOT NULL DEFAULT 'ok' CHECK (state IN ('ok', 'suspect', 'lost')),
    PRIMARY KEY (file_id, volume_id)
);
CREATE INDEX segment_volume_offset_idx ON segment (volume_id, offset_bytes);

CREATE TABLE site (
    id          bigserial PRIMARY KEY,
    name        text  NOT NULL UNIQUE,
    attributes  jsonb NOT NULL DEFAULT '{}'::jsonb    -- e.g. {"tier": 1, "country": "DE"} for rule expressions
);

CREATE TABLE site_endpoint (
    id          bigserial PRIMARY KEY,
    site_id     bigint NOT NULL REFERENCES site (id) ON DELETE CASCADE,
    url         text   NOT NULL,                      -- gsiftp://host:port/path or ftp://...
    enabled     boolean NOT NULL DEFAULT true,
    UNIQUE (site_id, url)
);
