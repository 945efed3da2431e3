-- Which service instance uses each drive of a library several instances share (stagehand.tape.shared-drives):
-- a drive is held from its mount until it is empty again (failed and disabled drives stay held), renewed by
-- its holder and taken over by another instance once the lease has lapsed (its holder died). Released on
-- shutdown. Without it two instances each took every drive as theirs and mounted on each other's drives.
CREATE TABLE drive_lease (
    library      text        NOT NULL,
    drive        text        NOT NULL,
    instance     text        NOT NULL,
    lease_until  timestamptz NOT NULL,
    acquired_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (library, drive)
);

-- Whether a tape copy's Adler32 was reported by the library for what reached the volume. False: the site
-- script reported none (stagehand.tape.script.write-checksum: trust-source) and the buffer file's sum stands
-- in, nothing confirming the bytes on the volume. Copies written before this column are taken as verified.
ALTER TABLE segment ADD COLUMN verified boolean NOT NULL DEFAULT true;
CREATE INDEX segment_unverified_idx ON segment (volume_id) WHERE NOT verified;

-- An operator disabled the drive while it held a volume: it takes no new work, is unloaded once its current
-- read or write list ends, and is then DISABLED. Kept here so a restart goes on taking it down.
ALTER TABLE tape_drive ADD COLUMN down_requested boolean NOT NULL DEFAULT false;
