-- A replica's history (module replication): each change of its state, and each failed attempt (the retries a
-- replica makes before it is done or failed for good), with the error of that change. Retried errors were only
-- logged. Written by triggers, as the completeness marks (V19) are: every statement that changes a replica,
-- whoever makes it, records the change in its own transaction. Row triggers with WHEN for updates: a pass moving a
-- waiting replica's next look (most updates) records nothing and calls nothing. A pending replica made by a rule is not
-- an event (10^5 at a rule's first pass); one registered as already at a site is. The engine's pass deletes
-- events older than stagehand.replication.history-keep. No foreign keys: the history of a replica outlives it.
CREATE TABLE replica_event (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    file_id    bigint      NOT NULL,
    site_id    bigint      NOT NULL,
    dataset_id bigint,                       -- the file's, when it was recorded
    at         timestamptz NOT NULL DEFAULT now(),
    from_state text,                         -- NULL: the replica was made (registered)
    to_state   text,                         -- NULL: the replica row was removed (its copy deleted at the site)
    attempts   int,                          -- the replica's attempts after the change
    error      text                          -- the error this change recorded (a failed attempt's, a declaration's)
);
CREATE INDEX replica_event_dataset ON replica_event (dataset_id, id);
CREATE INDEX replica_event_at ON replica_event (at);

CREATE FUNCTION record_replica_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        INSERT INTO replica_event (file_id, site_id, dataset_id, from_state, to_state, attempts, error)
        VALUES (OLD.file_id, OLD.site_id, (SELECT dataset_id FROM file WHERE id = OLD.file_id), OLD.state, NULL,
                OLD.attempts, NULL);
        RETURN NULL;
    END IF;
    -- the error is this change's when it set one or counted a failed attempt; else the last one kept on the row
    -- (a replica sent again keeps its previous error) is not repeated
    INSERT INTO replica_event (file_id, site_id, dataset_id, from_state, to_state, attempts, error)
    VALUES (NEW.file_id, NEW.site_id, (SELECT dataset_id FROM file WHERE id = NEW.file_id), OLD.state, NEW.state, NEW.attempts,
            CASE WHEN NEW.last_error IS DISTINCT FROM OLD.last_error OR NEW.attempts > OLD.attempts THEN NEW.last_error END);
    RETURN NULL;
END $$;

-- replicas registered (10^6 at once, say) by one statement, each recorded by one: a row trigger was a call per row
CREATE FUNCTION record_replicas_made() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO replica_event (file_id, site_id, dataset_id, from_state, to_state, attempts, error)
    SELECT n.file_id, n.site_id, f.dataset_id, NULL, n.state, n.attempts, n.last_error
      FROM new_rows n LEFT JOIN file f ON f.id = n.file_id
     WHERE n.state <> 'pending';
    RETURN NULL;
END $$;

CREATE TRIGGER replica_event_inserted AFTER INSERT ON replica REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION record_replicas_made();
CREATE TRIGGER replica_event_updated AFTER UPDATE ON replica FOR EACH ROW
    WHEN (OLD.state IS DISTINCT FROM NEW.state OR NEW.attempts > OLD.attempts) EXECUTE FUNCTION record_replica_event();
-- a copy deleted at its site (the reaper); not the rows a file or site deleted whole takes with it
CREATE TRIGGER replica_event_deleted AFTER DELETE ON replica FOR EACH ROW
    WHEN (OLD.state = 'deleting') EXECUTE FUNCTION record_replica_event();
