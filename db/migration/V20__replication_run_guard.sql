-- Guards on scheduled replication runs that hold whatever the clustered Quartz store does (module
-- replication): a rule's schedule paused in the service's own row, checked by each run as it starts; and
-- one run per scheduled firing (two nodes may acquire the same firing, quartz#107).
ALTER TABLE replication_rule ADD COLUMN schedule_paused boolean NOT NULL DEFAULT false;
ALTER TABLE replication_run ADD COLUMN fired_by text CHECK (fired_by IN ('schedule', 'operator')); -- NULL: before V20
CREATE UNIQUE INDEX replication_run_one_per_firing ON replication_run (rule_id, scheduled_at) WHERE fired_by = 'schedule';
