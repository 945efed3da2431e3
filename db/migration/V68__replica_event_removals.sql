-- A replica's history (V61) records the replica rows a file or a site deleted whole takes with it (module
-- replication): V61 recorded only the reaper's removals, so a file deleted from the catalog (the archive API's
-- delete, or by hand) or a site removed (DELETE /sites/{name}) left its copies' histories ending in mid-air, and the
-- history (which joined file and site) dropped even their earlier events. Now one event per removed replica,
-- to_state NULL, with what removed it: 'file deleted', 'site removed' (the reaper's keeps no error, as before).
--
-- In a cascade the file or site row is gone when the replica's triggers run (the foreign key's action runs in the
-- file's row triggers, and the replica's statement triggers fire after the file's), so the file's dataset and the
-- names cannot be looked up then. The file's and the site's delete record them first, in replica_event_file and
-- replica_event_site; the replica's delete joins them. All set-based: statement triggers with transition tables,
-- a function call per statement, not per row (a dataset of 10^6 files deleted at once). The history shows the names
-- of files and sites that are gone from these tables; they are pruned with the events (history-keep).
CREATE TABLE replica_event_file (
    file_id    bigint PRIMARY KEY,
    dataset_id bigint,
    name       text        NOT NULL,
    removed_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE replica_event_site (
    site_id    bigint PRIMARY KEY,
    name       text        NOT NULL,
    removed_at timestamptz NOT NULL DEFAULT now()
);

-- SECURITY DEFINER: an account allowed to write the catalog only deletes files all the same (V48)
CREATE FUNCTION record_files_removed() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
    SET search_path FROM CURRENT AS $$
BEGIN
    -- a file id is not reused; a file put back by hand with its old id and deleted again: its last removal
    INSERT INTO replica_event_file (file_id, dataset_id, name)
    SELECT o.id, o.dataset_id, o.name FROM old_rows o
    ON CONFLICT (file_id) DO UPDATE SET dataset_id = EXCLUDED.dataset_id, name = EXCLUDED.name, removed_at = now();
    RETURN NULL;
END $$;

CREATE FUNCTION record_sites_removed() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
    SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO replica_event_site (site_id, name)
    SELECT o.id, o.name FROM old_rows o
    ON CONFLICT (site_id) DO UPDATE SET name = EXCLUDED.name, removed_at = now();
    RETURN NULL;
END $$;

CREATE TRIGGER file_deleted_replica_event AFTER DELETE ON file REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION record_files_removed();
CREATE TRIGGER site_deleted_replica_event AFTER DELETE ON site REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION record_sites_removed();
-- exact whatever session_replication_role a delete runs with (as V26's); and a trigger on file that replica mode
-- would skip makes the catalog import give up its set-based reference checks (CatalogImporter.bulkReferencesAllowed)
ALTER TABLE file ENABLE ALWAYS TRIGGER file_deleted_replica_event;
ALTER TABLE site ENABLE ALWAYS TRIGGER site_deleted_replica_event;

-- Every replica row removed, whoever removes it: the reaper's (a copy deleted at its site; no error, as in V61), a
-- file's or a site's delete (their reason), any other (a delete by hand). The file's dataset is the file's, else
-- the one its delete recorded.
CREATE FUNCTION record_replicas_removed() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
    SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO replica_event (file_id, site_id, dataset_id, from_state, to_state, attempts, error)
    SELECT o.file_id, o.site_id, coalesce(f.dataset_id, rf.dataset_id), o.state, NULL, o.attempts,
           CASE WHEN f.id IS NULL THEN 'file deleted'
                WHEN s.id IS NULL THEN 'site removed'
                WHEN o.state <> 'deleting' THEN 'replica record deleted' END
      FROM old_rows o LEFT JOIN file f ON f.id = o.file_id LEFT JOIN site s ON s.id = o.site_id
      LEFT JOIN replica_event_file rf ON f.id IS NULL AND rf.file_id = o.file_id;
    RETURN NULL;
END $$;

DROP TRIGGER replica_event_deleted ON replica;
CREATE TRIGGER replica_event_deleted AFTER DELETE ON replica REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION record_replicas_removed();
-- the row trigger's function keeps its DELETE branch, unused now (V61 is applied as written)
