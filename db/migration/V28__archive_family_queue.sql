-- The flusher's poll at production sizes: it reads what its decision needs, not every queued copy.

-- It summed every queued copy (every 5 s on every instance) to choose a family: 1.6 s at
-- 10^6 queued copies. Now it reads running totals per family and copy, kept by a trigger in the very
-- transactions that queue, claim, write, fail or drop copies, so every instance sees them exact.

-- A copy's size and registration time (its file's, fixed): the totals need the size even when the file's
-- row is gone (a cascaded delete), and a family's oldest ready copy is found along an index.
ALTER TABLE archive_copy ADD COLUMN size_bytes bigint, ADD COLUMN registered_at timestamptz;
UPDATE archive_copy c SET size_bytes = a.size_bytes, registered_at = a.registered_at FROM archive_file a WHERE a.file_id = c.file_id;
ALTER TABLE archive_copy ALTER COLUMN size_bytes SET NOT NULL, ALTER COLUMN registered_at SET NOT NULL;

-- Copies in state 'queued', those not ready yet included (the poll takes those few out along the indexes below).
-- A family's row goes when its queue is empty: the table holds the families with something queued.
CREATE TABLE archive_family_queue (
    family  text     NOT NULL,
    copy_no smallint NOT NULL,
    files   bigint   NOT NULL,
    bytes   bigint   NOT NULL, -- no CHECK (>= 0): it would refuse the negative change a claim upserts
    PRIMARY KEY (family, copy_no)
);
INSERT INTO archive_family_queue
SELECT family, copy_no, count(*), sum(size_bytes) FROM archive_copy WHERE state = 'queued' GROUP BY family, copy_no;

CREATE FUNCTION count_archive_family_queue() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    d_family text[];
    d_copy smallint[];
    d_files bigint[];
    d_bytes bigint[];
BEGIN
    IF TG_OP = 'TRUNCATE' THEN -- a bench's clean-up: TRUNCATE file CASCADE
        DELETE FROM archive_family_queue;
        RETURN NULL;
    ELSIF TG_OP = 'INSERT' THEN
        SELECT array_agg(family), array_agg(copy_no), array_agg(n), array_agg(b) INTO d_family, d_copy, d_files, d_bytes
          FROM (SELECT family, copy_no, count(*) AS n, sum(size_bytes) AS b FROM new_rows
                 WHERE state = 'queued' GROUP BY family, copy_no) d;
    ELSIF TG_OP = 'DELETE' THEN
        SELECT array_agg(family), array_agg(copy_no), array_agg(n), array_agg(b) INTO d_family, d_copy, d_files, d_bytes
          FROM (SELECT family, copy_no, -count(*) AS n, -sum(size_bytes) AS b FROM old_rows
                 WHERE state = 'queued' GROUP BY family, copy_no) d;
    ELSE
        SELECT array_agg(family), array_agg(copy_no), array_agg(n), array_agg(b) INTO d_family, d_copy, d_files, d_bytes
          FROM (SELECT family, copy_no, sum(one) AS n, sum(size_bytes * one) AS b
                  FROM (SELECT family, copy_no, size_bytes, 1 AS one FROM new_rows WHERE state = 'queued'
                        UNION ALL
                        SELECT family, copy_no, size_bytes, -1 FROM old_rows WHERE state = 'queued') x
                 GROUP BY family, copy_no HAVING sum(one) <> 0 OR sum(size_bytes * one) <> 0) d;
    END IF;
    IF d_family IS NULL THEN
        RETURN NULL; -- no copy entered or left the queue (a lease renewed, a copy written)
    END IF;
    -- rows locked in one order by every transaction: two that change several families cannot deadlock
    INSERT INTO archive_family_queue AS q (family, copy_no, files, bytes)
    SELECT * FROM unnest(d_family, d_copy, d_files, d_bytes) ORDER BY 1, 2
    ON CONFLICT (family, copy_no) DO UPDATE SET files = q.files + excluded.files, bytes = q.bytes + excluded.bytes;
    DELETE FROM archive_family_queue q USING unnest(d_family, d_copy) AS u(family, copy_no)
     WHERE q.family = u.family AND q.copy_no = u.copy_no AND q.files = 0;
    RETURN NULL;
END $$;

CREATE TRIGGER archive_copy_inserted AFTER INSERT ON archive_copy REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_archive_family_queue();
CREATE TRIGGER archive_copy_updated AFTER UPDATE ON archive_copy REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_archive_family_queue();
CREATE TRIGGER archive_copy_deleted AFTER DELETE ON archive_copy REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_archive_family_queue();
CREATE TRIGGER archive_copy_truncated AFTER TRUNCATE ON archive_copy
    FOR EACH STATEMENT EXECUTE FUNCTION count_archive_family_queue();
-- the totals must stay exact whatever session_replication_role a bulk path runs with (see V26)
ALTER TABLE archive_copy ENABLE ALWAYS TRIGGER archive_copy_inserted;
ALTER TABLE archive_copy ENABLE ALWAYS TRIGGER archive_copy_updated;
ALTER TABLE archive_copy ENABLE ALWAYS TRIGGER archive_copy_deleted;
ALTER TABLE archive_copy ENABLE ALWAYS TRIGGER archive_copy_truncated;

-- The poll walks three ranges per family, each along an index only it can use (with statistics older than the
-- queue, the planner otherwise took a small index for a walk it cannot bound: 6 s at 10^6 queued copies):
-- its oldest ready copy, the first entry not waiting, and its copies registered after the flusher's now (another
-- instance's clock ahead: registration sets not_before to registered_at) ...
CREATE INDEX archive_copy_oldest_idx ON archive_copy (family, copy_no, registered_at) WHERE state = 'queued';
-- ... and its copies put back with a retry backoff not over (not_before moved off their registration).
CREATE INDEX archive_copy_requeued_idx ON archive_copy (family, copy_no, not_before)
    WHERE state = 'queued' AND not_before <> registered_at;
