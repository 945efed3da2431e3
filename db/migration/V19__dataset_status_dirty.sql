-- Datasets whose per-site completeness must be recomputed (module replication). Triggers mark a dataset on
-- every change to its replicas, to the replicas rules want and to its rules, whoever makes it; the engine
-- then aggregates only the marked datasets each pass instead of every wanted replica (fine at 10^5, not at
-- 10^7), with a full recompute now and then as a safety net.
CREATE TABLE dataset_status_dirty (
    dataset_id bigint PRIMARY KEY
);

-- replica and replication_rule_replica rows carry file_id: the dataset is the file's
CREATE FUNCTION mark_dataset_status_dirty_by_file() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO dataset_status_dirty (dataset_id)
        SELECT DISTINCT f.dataset_id FROM new_rows n JOIN file f ON f.id = n.file_id WHERE f.dataset_id IS NOT NULL
        ON CONFLICT DO NOTHING;
    END IF;
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        INSERT INTO dataset_status_dirty (dataset_id)
        SELECT DISTINCT f.dataset_id FROM old_rows o JOIN file f ON f.id = o.file_id WHERE f.dataset_id IS NOT NULL
        ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION mark_dataset_status_dirty_by_rule() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO dataset_status_dirty (dataset_id) SELECT DISTINCT dataset_id FROM new_rows ON CONFLICT DO NOTHING;
    END IF;
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        INSERT INTO dataset_status_dirty (dataset_id) SELECT DISTINCT dataset_id FROM old_rows ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER replica_inserted AFTER INSERT ON replica REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION mark_dataset_status_dirty_by_file();
CREATE TRIGGER replica_updated AFTER UPDATE ON replica REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION mark_dataset_status_dirty_by_file();
CREATE TRIGGER replica_deleted AFTER DELETE ON replica REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION mark_dataset_status_dirty_by_file();
CREATE TRIGGER rule_replica_inserted AFTER INSERT ON replication_rule_replica REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION mark_dataset_status_dirty_by_file();
CREATE TRIGGER rule_replica_deleted AFTER DELETE ON replication_rule_replica REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION mark_dataset_status_dirty_by_file();
CREATE TRIGGER rule_changed AFTER UPDATE ON replication_rule REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION mark_dataset_status_dirty_by_rule();
CREATE TRIGGER rule_deleted AFTER DELETE ON replication_rule REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION mark_dataset_status_dirty_by_rule();
