-- A cancelled transfer's partial file is deleted while its row holds the deletion (partial_delete_until): a
-- transfer queued to the same destination meanwhile is not claimed until the delete is over (or its hold
-- lapses, its instance gone), so the delete cannot remove the new transfer's bytes. The claim's look-up walks
-- this index, over held rows only (usually none).
ALTER TABLE transfer_job ADD COLUMN partial_delete_until timestamptz;
CREATE INDEX transfer_job_partial_delete ON transfer_job (destination) WHERE partial_delete_until IS NOT NULL;
