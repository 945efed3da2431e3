-- When the instance holding a shared drive's lease started a mount on it that is still under way (NULL: none). The
-- recall schedulers of the other instances sharing the library count these against the robot's accessor budget:
-- each counted only its own mounts, so two instances together started twice the exchanges the accessors can
-- serve, which then queued at the robot. Cleared when the mount ends (and by the holder's lease rounds); a dead
-- holder's row stops counting once its lease has lapsed.
ALTER TABLE drive_lease ADD COLUMN mounting_since timestamptz;
