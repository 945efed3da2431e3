-- Which service instance holds each volume (mounted, being mounted, or stuck in one of its failed drives)
-- when several instances share one library: a cartridge is in one drive, so one instance mounts it at a
-- time. Leased like file claims (recall_file): the holder renews, a lapsed lease may be taken over.

CREATE TABLE volume_lease (
    label        text        PRIMARY KEY,
    instance     text        NOT NULL,
    lease_until  timestamptz NOT NULL,
    acquired_at  timestamptz NOT NULL DEFAULT now()
);
