-- Transfers of replication's copies whose replica row went without them being stopped (module replication):
-- a file deleted from the catalog (by hand: the service never deletes one) took its replica rows with it, and
-- their queued or running transfers went on writing a file the catalog no longer has to the site, retried,
-- with nothing to follow them. The replica's delete records its transfer here and the next replication pass
-- cancels it through the transfer queue. Only replication's own transfers: one handed on by the recall side
-- (stage_request_id set) is the recall side's. ENABLE ALWAYS and SECURITY DEFINER as for the file triggers
-- of V26 (the catalog import; an importer's account).
CREATE TABLE replication_orphan_transfer (
    job_id bigint PRIMARY KEY
);

CREATE FUNCTION record_replication_orphan_transfer() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
    SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO replication_orphan_transfer (job_id)
    SELECT DISTINCT o.transfer_job_id FROM old_rows o
     WHERE o.state = 'transferring' AND o.transfer_job_id IS NOT NULL AND o.stage_request_id IS NULL
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;

CREATE TRIGGER replica_deleted_orphan_transfer AFTER DELETE ON replica REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION record_replication_orphan_transfer();
ALTER TABLE replica ENABLE ALWAYS TRIGGER replica_deleted_orphan_transfer;

-- those left behind before this migration: live transfers of replication no replica follows
INSERT INTO replication_orphan_transfer (job_id)
SELECT j.id FROM transfer_job j
 WHERE j.state IN ('queued', 'active') AND j.correlation LIKE 'replica:%'
   AND NOT EXISTS (SELECT 1 FROM replica r WHERE r.transfer_job_id = j.id);
