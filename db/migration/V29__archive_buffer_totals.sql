-- The archive buffer's files and bytes per state, kept instead of summed: its use was summed over every file in
-- the buffer at every flusher poll, registration and eviction round (218 ms with 2x10^6 files), and the buffer's
-- figures of the API and the console grouped every file ever registered at each call.

-- Writers only append their change (one row per state a statement changed): they take no lock another
-- writer waits for. Updating a row per state in place would: a registration locks its state's row and then
-- its families' queue rows (V28), a claim its family's row and then the state's row, and the two deadlock.
CREATE TABLE archive_buffer_change (
    id    bigserial PRIMARY KEY,
    state text      NOT NULL,
    files bigint    NOT NULL,
    bytes bigint    NOT NULL
);
-- The changes folded so far (archive_buffer_fold_changes, by the rounds and registrations); one row per state.
CREATE TABLE archive_buffer_state (
    state text   PRIMARY KEY,
    files bigint NOT NULL,
    bytes bigint NOT NULL
);
-- What a reader adds up: at most a row per state, plus the changes since the last fold (one snapshot, so a fold
-- committing meanwhile is seen whole or not at all).
CREATE VIEW archive_buffer_totals AS
SELECT state, sum(files)::bigint AS files, sum(bytes)::bigint AS bytes
  FROM (SELECT state, files, bytes FROM archive_buffer_state
        UNION ALL
        SELECT state, files, bytes FROM archive_buffer_change) t
 GROUP BY state;

-- Writers of archive_file wait from here to the commit: the fill below and the triggers see the same rows.
LOCK TABLE archive_file IN SHARE ROW EXCLUSIVE MODE;
INSERT INTO archive_buffer_state SELECT state, count(*), sum(size_bytes) FROM archive_file GROUP BY state;

CREATE FUNCTION count_archive_buffer() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN -- a bench's clean-up (TRUNCATE file CASCADE); it holds archive_file exclusively
        DELETE FROM archive_buffer_change;
        DELETE FROM archive_buffer_state;
    ELSIF TG_OP = 'INSERT' THEN
        INSERT INTO archive_buffer_change (state, files, bytes)
        SELECT state, count(*), sum(size_bytes) FROM new_rows GROUP BY state;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO archive_buffer_change (state, files, bytes)
        SELECT state, -count(*), -sum(size_bytes) FROM old_rows GROUP BY state;
    ELSE -- no join of the transition tables (no statistics: a nested loop, see V26)
        INSERT INTO archive_buffer_change (state, files, bytes)
        SELECT state, sum(one), sum(size_bytes * one)
          FROM (SELECT state, size_bytes, 1 AS one FROM new_rows
                UNION ALL
                SELECT state, size_bytes, -1 FROM old_rows) x
         GROUP BY state HAVING sum(one) <> 0 OR sum(size_bytes * one) <> 0;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER archive_file_inserted AFTER INSERT ON archive_file REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_archive_buffer();
CREATE TRIGGER archive_file_updated AFTER UPDATE ON archive_file REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_archive_buffer();
CREATE TRIGGER archive_file_deleted AFTER DELETE ON archive_file REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_archive_buffer();
CREATE TRIGGER archive_file_truncated AFTER TRUNCATE ON archive_file
    FOR EACH STATEMENT EXECUTE FUNCTION count_archive_buffer();
-- exact whatever session_replication_role a bulk path runs with (see V26)
ALTER TABLE archive_file ENABLE ALWAYS TRIGGER archive_file_inserted;
ALTER TABLE archive_file ENABLE ALWAYS TRIGGER archive_file_updated;
ALTER TABLE archive_file ENABLE ALWAYS TRIGGER archive_file_deleted;
ALTER TABLE archive_file ENABLE ALWAYS TRIGGER archive_file_truncated;

-- Moves the committed changes into the per-state rows, in its own short transaction. Folds running at once on
-- several instances take disjoint changes (SKIP LOCKED) and lock the state rows in one order: no deadlock, and
-- no writer ever waits for them.
CREATE FUNCTION archive_buffer_fold_changes() RETURNS void LANGUAGE sql AS $$
    WITH folded AS (
        DELETE FROM archive_buffer_change
         WHERE id IN (SELECT id FROM archive_buffer_change FOR UPDATE SKIP LOCKED)
        RETURNING state, files, bytes)
    INSERT INTO archive_buffer_state AS s (state, files, bytes)
    SELECT state, sum(files), sum(bytes) FROM folded GROUP BY state ORDER BY state
    ON CONFLICT (state) DO UPDATE SET files = s.files + excluded.files, bytes = s.bytes + excluded.bytes;
$$;
