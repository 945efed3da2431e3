-- Status polls of large stage requests (WLCG GET /api/v1/stage/{id}, native GET /api/v1/requests/{id}, the
-- console's request page) without reading every file of the request.

-- Upgrading: this migration takes stage_request (ALTER: every access) and then stage_request_file (writes;
-- reads go on) until it commits, so the counts below start exact: both for as long as counting every file
-- takes (0.7 s for 1.1 x 10^6 files; bench/request-poll.sh). That is the order the service takes them in (a
-- request's row, then its files), so an instance still on the old code waits rather than deadlocks.
-- Old instances keep working during a rolling upgrade: the triggers count their changes too, and they do not
-- record path bounds (below), which only makes a scope check read the paths, as it did.

-- The smallest and largest of a request's paths (those not in the catalog included) in Java's String order,
-- recorded at submission and only ever compared in Java: when both lie beneath one path a token's storage
-- scope grants, so does every path of the request (each sorts between them, so it shares their prefix). NULL
-- for requests from before this migration or written by other means: their paths are read for the check.
ALTER TABLE stage_request ADD COLUMN first_path text, ADD COLUMN last_path text;

LOCK TABLE stage_request_file IN SHARE ROW EXCLUSIVE MODE;

-- A request's files per state, and how many of them are released, kept by the triggers below in the very
-- transactions that insert, change or delete the files, so every instance reads them exact at any time and
-- a crash loses nothing. Only states that hold files have a row: a request's rows go with its files.
-- No foreign key: a request's delete cascades to its files, whose trigger then takes its rows to zero.
CREATE TABLE stage_request_count (
    request_id uuid   NOT NULL,
    state      text   NOT NULL,
    files      bigint NOT NULL,
    released   bigint NOT NULL, -- no CHECK (>= 0): a change may upsert a negative delta first
    PRIMARY KEY (request_id, state)
);
INSERT INTO stage_request_count
SELECT request_id, state, count(*), count(*) FILTER (WHERE released) FROM stage_request_file GROUP BY request_id, state;

CREATE FUNCTION count_stage_request_files() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    d_request uuid[];
    d_state text[];
    d_files bigint[];
    d_released bigint[];
BEGIN
    IF TG_OP = 'TRUNCATE' THEN -- a bench's clean-up
        DELETE FROM stage_request_count;
        RETURN NULL;
    ELSIF TG_OP = 'INSERT' THEN
        SELECT array_agg(request_id), array_agg(state), array_agg(n), array_agg(r) INTO d_request, d_state, d_files, d_released
          FROM (SELECT request_id, state, count(*) AS n, count(*) FILTER (WHERE released) AS r FROM new_rows
                 GROUP BY request_id, state) d;
    ELSIF TG_OP = 'DELETE' THEN
        SELECT array_agg(request_id), array_agg(state), array_agg(n), array_agg(r) INTO d_request, d_state, d_files, d_released
          FROM (SELECT request_id, state, -count(*) AS n, -count(*) FILTER (WHERE released) AS r FROM old_rows
                 GROUP BY request_id, state) d;
    ELSE
        -- UNION ALL and GROUP BY rather than a join of the two transition tables: they have no statistics, and
        -- the planner's nested loop took minutes for 10^5 rows (V26)
        SELECT array_agg(request_id), array_agg(state), array_agg(n), array_agg(r) INTO d_request, d_state, d_files, d_released
          FROM (SELECT request_id, state, sum(one) AS n, sum(CASE WHEN released THEN one ELSE 0 END) AS r
                  FROM (SELECT request_id, state, released, 1 AS one FROM new_rows
                        UNION ALL
                        SELECT request_id, state, released, -1 FROM old_rows) x
                 GROUP BY request_id, state
                HAVING sum(one) <> 0 OR sum(CASE WHEN released THEN one ELSE 0 END) <> 0) d;
    END IF;
    IF d_request IS NULL THEN
        RETURN NULL; -- no file changed state or was released (an error or a time written)
    END IF;
    -- rows locked in one order by every statement: two that change several requests' files cannot deadlock
    INSERT INTO stage_request_count AS c (request_id, state, files, released)
    SELECT * FROM unnest(d_request, d_state, d_files, d_released) ORDER BY 1, 2
    ON CONFLICT (request_id, state) DO UPDATE SET files = c.files + excluded.files, released = c.released + excluded.released;
    DELETE FROM stage_request_count c USING unnest(d_request, d_state) AS u(request_id, state)
     WHERE c.request_id = u.request_id AND c.state = u.state AND c.files = 0;
    RETURN NULL;
END $$;

CREATE TRIGGER stage_request_file_inserted AFTER INSERT ON stage_request_file REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_stage_request_files();
CREATE TRIGGER stage_request_file_updated AFTER UPDATE ON stage_request_file
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_stage_request_files();
CREATE TRIGGER stage_request_file_deleted AFTER DELETE ON stage_request_file REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_stage_request_files();
CREATE TRIGGER stage_request_file_truncated AFTER TRUNCATE ON stage_request_file
    FOR EACH STATEMENT EXECUTE FUNCTION count_stage_request_files();
-- the counts must stay exact whatever session_replication_role a bulk path runs with (see V26)
ALTER TABLE stage_request_file ENABLE ALWAYS TRIGGER stage_request_file_inserted;
ALTER TABLE stage_request_file ENABLE ALWAYS TRIGGER stage_request_file_updated;
ALTER TABLE stage_request_file ENABLE ALWAYS TRIGGER stage_request_file_deleted;
ALTER TABLE stage_request_file ENABLE ALWAYS TRIGGER stage_request_file_truncated;
