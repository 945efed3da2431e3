-- Completeness of a dataset whose file is deleted from the catalog (module replication). The file's replica
-- rows go with it, and their triggers (V19) find the dataset through the file, which is gone by then: the
-- dataset was not marked, and showed the deleted file missing until the full recompute (ten minutes). The
-- file's own delete marks it now. ENABLE ALWAYS and SECURITY DEFINER as for the file triggers of V26 (the
-- catalog import; an importer's account).
CREATE FUNCTION mark_dataset_status_dirty_by_deleted_file() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
    SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO dataset_status_dirty (dataset_id)
    SELECT DISTINCT o.dataset_id FROM old_rows o WHERE o.dataset_id IN (SELECT dataset_id FROM replication_rule);
    RETURN NULL;
END $$;

CREATE TRIGGER file_deleted AFTER DELETE ON file REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION mark_dataset_status_dirty_by_deleted_file();
ALTER TABLE file ENABLE ALWAYS TRIGGER file_deleted;
