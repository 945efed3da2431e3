-- When the instance holding a shared drive's lease started a dismount on it that is still under way (NULL: none).
-- A dismount ends with the accessor moving the cartridge back to its slot (docs: the tape model), so the other
-- instances' recall schedulers count it against the robot's accessor budget as they count mounts under way
-- (mounting_since, V56). Cleared when the dismount ends (and by the holder's lease rounds).
ALTER TABLE drive_lease ADD COLUMN dismounting_since timestamptz;
