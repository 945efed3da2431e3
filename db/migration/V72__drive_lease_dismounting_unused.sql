-- Other instances' dismounts are no longer counted against the robot's accessors (a dismount holds an accessor only
-- for its last move; counted whole they held mounts back): nothing writes or reads dismounting_since (V64) any more.
-- Kept for one release, so that instances of the previous release sharing this database during a rolling upgrade
-- still find the column they write; to be dropped after.
COMMENT ON COLUMN drive_lease.dismounting_since IS 'unused since V72 (kept for instances of the previous release); drop later';
