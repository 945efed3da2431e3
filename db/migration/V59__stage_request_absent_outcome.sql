-- A file deleted from the catalog (an archive file cancelled before it was on tape: DELETE /api/v1/archive/files/{id})
-- that finished stage requests named. Their stage_request_file rows hold a foreign key to the file, which refused the
-- delete for as long as any request's history named it. The delete now moves those rows here, under the file's name,
-- with what they ended with, so a finished request still lists the file in its place with its outcome (its counts too).
-- A row whose state is NULL is what it was: a path not in the catalog at submission, failed with "no such file in the
-- catalog". Only finished requests' rows come here: an open request's, or a pinned file's, refuse the delete.
ALTER TABLE stage_request_absent
    ADD COLUMN state       text CHECK (state IN ('on_disk', 'done', 'failed', 'cancelled')),
    ADD COLUMN error       text,
    ADD COLUMN released    boolean NOT NULL DEFAULT false,
    ADD COLUMN started_at  timestamptz,
    ADD COLUMN finished_at timestamptz;
