-- Copies no rule wants any more are deleted at their site after a grace period (module replication),
-- as Rucio's reaper does for replicas without locks.
-- done/verified -> deleting (the site is asked to delete the file) -> row removed, or pending again if a
-- rule came to want the copy meanwhile.
ALTER TABLE replica ADD COLUMN unwanted_since timestamptz;   -- since when no active rule wants this copy
ALTER TABLE replica DROP CONSTRAINT replica_state_check;
ALTER TABLE replica ADD CONSTRAINT replica_state_check
    CHECK (state IN ('pending', 'staging', 'transferring', 'done', 'verified', 'failed', 'lost', 'deleting'));
CREATE INDEX replica_unwanted ON replica (unwanted_since) WHERE unwanted_since IS NOT NULL;
