-- Tape drives: which drive does what and which volume is in it, so a restart knows where every tape is.
-- Written by the tape library on every drive transition; volume state itself is in volume (V1).

CREATE TABLE tape_drive (
    library       text        NOT NULL,
    name          text        NOT NULL,
    state         text        NOT NULL
                  CHECK (state IN ('empty', 'mounting', 'mounted_idle', 'locating', 'reading', 'writing',
                                   'unloading', 'failed', 'disabled')),
    volume_label  text,                               -- the cartridge in (or going into / out of) the drive
    bytes_moved   bigint      NOT NULL DEFAULT 0 CHECK (bytes_moved >= 0),  -- since the mount: sets the rewind time
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (library, name),
    -- an empty or disabled drive holds no tape; a working one always does; a failed one may
    CHECK (CASE WHEN state IN ('empty', 'disabled') THEN volume_label IS NULL
                WHEN state = 'failed' THEN true
                ELSE volume_label IS NOT NULL END)
);

-- A cartridge is in at most one drive of its library.
CREATE UNIQUE INDEX tape_drive_volume_idx ON tape_drive (library, volume_label) WHERE volume_label IS NOT NULL;
