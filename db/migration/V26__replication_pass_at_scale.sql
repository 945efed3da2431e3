-- The replication pass (every 2 s; module replication) at production sizes: each step reads what changed
-- since the last pass, not every row (bench/replication.sh).

-- Files added to datasets that continuous rules replicate, since the engine last applied those rules: a rule
-- adds the replicas of these files only, where each pass re-inserted every file of every rule's dataset. A
-- row per file and no unique key: each inserting transaction's marks commit with its files (with one mark per
-- dataset, an insert that found a committed mark added none, and a pass could take that mark before the
-- insert committed: its files were missed). Only datasets with an active continuous rule are marked, so
-- nothing piles up where replication is not used; a rule created meanwhile is applied whole at its first
-- pass, and every rule every hour. ENABLE ALWAYS: the catalog import's set-based reference checks run with
-- session_replication_role = replica, which skips ordinary triggers. SECURITY DEFINER: an account allowed to
-- write the catalog only (an importer's) marks all the same.
CREATE TABLE replication_file_added (
    file_id    bigint NOT NULL,
    dataset_id bigint NOT NULL
);

CREATE FUNCTION mark_replication_files_added() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO replication_file_added (file_id, dataset_id)
        SELECT n.id, n.dataset_id FROM new_rows n
         WHERE n.dataset_id IN (SELECT dataset_id FROM replication_rule WHERE state = 'active' AND schedule IS NULL);
    ELSE
        -- rows whose dataset changed, by EXCEPT rather than by joining the two transition tables: they have no
        -- statistics, and the planner's nested loop took minutes for 10^5 rows
        INSERT INTO replication_file_added (file_id, dataset_id)
        SELECT c.id, c.dataset_id FROM (SELECT id, dataset_id FROM new_rows EXCEPT SELECT id, dataset_id FROM old_rows) c
         WHERE c.dataset_id IN (SELECT dataset_id FROM replication_rule WHERE state = 'active' AND schedule IS NULL);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER file_inserted AFTER INSERT ON file REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION mark_replication_files_added();
CREATE TRIGGER file_updated AFTER UPDATE ON file REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION mark_replication_files_added();
ALTER TABLE file ENABLE ALWAYS TRIGGER file_inserted;
ALTER TABLE file ENABLE ALWAYS TRIGGER file_updated;

-- The completeness marks lose their unique key for the same reason: a change that found its dataset already
-- marked added no mark, and a pass could take the mark before the change committed (until the full recompute,
-- ten minutes later, its dataset showed the old figures). The engine takes every mark at each pass.
ALTER TABLE dataset_status_dirty DROP CONSTRAINT dataset_status_dirty_pkey;

-- When the engine first applied the rule (NULL: never, so it is applied whole at the next pass).
ALTER TABLE replication_rule ADD COLUMN applied_at timestamptz;

-- Transferring replicas by their transfer: a pass follows the transfers that ended since the last one.
CREATE INDEX replica_transfer ON replica (transfer_job_id) WHERE state = 'transferring';
-- Pending replicas in the order a pass dispatches them: never tried first, then by when they are due (a
-- replica waiting for its source or its site is looked at again later, so it cannot hold up the others).
CREATE INDEX replica_due ON replica ((coalesce(next_attempt_at, '-infinity'::timestamptz)), file_id, site_id)
    WHERE state = 'pending';
-- Recall request files by when they failed (cancelled ones: V25): a staging replica fails with its file.
CREATE INDEX stage_request_file_failed ON stage_request_file (finished_at) WHERE state = 'failed';

-- A pass moves a waiting replica's next look without changing what completeness shows: only changes to what
-- it aggregates mark the dataset (file_id and site_id, the key, are never updated).
CREATE FUNCTION mark_dataset_status_dirty_by_replica_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- the rows changed in what completeness shows, by EXCEPT rather than by joining the two transition tables
    -- (no statistics: the planner's nested loop took 669 s for 10^5 rows)
    INSERT INTO dataset_status_dirty (dataset_id)
    SELECT DISTINCT f.dataset_id
      FROM (SELECT file_id, site_id, state, last_error, waiting_for, done_at FROM new_rows
            EXCEPT SELECT file_id, site_id, state, last_error, waiting_for, done_at FROM old_rows) c
      JOIN file f ON f.id = c.file_id
     WHERE f.dataset_id IS NOT NULL;
    RETURN NULL;
END $$;

DROP TRIGGER replica_updated ON replica;
CREATE TRIGGER replica_updated AFTER UPDATE ON replica REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION mark_dataset_status_dirty_by_replica_update();
