-- The replication pass (every 2 s; module replication) at production sizes: each step reads what changed
-- since the last pass, not every row (bench/replication.sh).

-- Datasets that got files since the engine last applied their continuous rules: a rule adds the replicas of
-- new files only when its dataset is marked, instead of re-inserting every file of its dataset at each pass.
-- ENABLE ALWAYS: the catalog import's set-based reference checks run with session_replication_role =
-- replica, which skips ordinary triggers. SECURITY DEFINER: an account allowed to write the catalog only (an
-- importer's) marks the dataset all the same.
CREATE TABLE dataset_files_added (
    dataset_id bigint PRIMARY KEY
);

CREATE FUNCTION mark_dataset_files_added() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO dataset_files_added (dataset_id)
        SELECT DISTINCT dataset_id FROM new_rows WHERE dataset_id IS NOT NULL ON CONFLICT DO NOTHING;
    ELSE
        INSERT INTO dataset_files_added (dataset_id)
        SELECT DISTINCT n.dataset_id FROM new_rows n JOIN old_rows o ON o.id = n.id
         WHERE n.dataset_id IS NOT NULL AND n.dataset_id IS DISTINCT FROM o.dataset_id ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER file_inserted AFTER INSERT ON file REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION mark_dataset_files_added();
CREATE TRIGGER file_updated AFTER UPDATE ON file REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION mark_dataset_files_added();
ALTER TABLE file ENABLE ALWAYS TRIGGER file_inserted;
ALTER TABLE file ENABLE ALWAYS TRIGGER file_updated;

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
    INSERT INTO dataset_status_dirty (dataset_id)
    SELECT DISTINCT f.dataset_id FROM new_rows n JOIN old_rows o ON o.file_id = n.file_id AND o.site_id = n.site_id
      JOIN file f ON f.id = n.file_id
     WHERE f.dataset_id IS NOT NULL
       AND (n.state, n.last_error, n.waiting_for, n.done_at) IS DISTINCT FROM (o.state, o.last_error, o.waiting_for, o.done_at)
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;

DROP TRIGGER replica_updated ON replica;
CREATE TRIGGER replica_updated AFTER UPDATE ON replica REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION mark_dataset_status_dirty_by_replica_update();
