-- The files a family's volume holds now, beside those written to it (archive_volume.files, the flusher's count).
-- The volume lists (API and console) showed the written count as the volume's files: a file deleted after one
-- of its copies reached tape (its segment gone with it) was still counted there. The tape keeps its bytes as dead
-- space, as CTA's and dCache's tapes do; they count the files on the tape that are not deleted.

-- Kept by a trigger in the transactions that add and remove segments (a write, a file's delete cascading to
-- its segments), not counted at each read: the console's archive page lists every family volume at each refresh.
ALTER TABLE archive_volume ADD COLUMN live_files integer NOT NULL DEFAULT 0;

-- Writers of segment wait from here to the commit: the fill below and the trigger see the same rows.
LOCK TABLE segment IN SHARE ROW EXCLUSIVE MODE;
UPDATE archive_volume av SET live_files = s.n
  FROM (SELECT volume_id, count(*) AS n FROM segment GROUP BY volume_id) s
 WHERE s.volume_id = av.volume_id;

-- A segment's volume never changes (it is in the key): inserts and deletes are all that move the count.
-- SECURITY DEFINER as the file triggers of V26 and V48: an importer's account writes segments, not archive_volume.
CREATE FUNCTION count_archive_volume_files() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
    SET search_path FROM CURRENT AS $$
DECLARE
    d record;
BEGIN
    IF TG_OP = 'TRUNCATE' THEN -- a bench's clean-up: TRUNCATE file CASCADE
        UPDATE archive_volume SET live_files = 0 WHERE live_files <> 0;
        RETURN NULL;
    END IF;
    -- a volume at a time, in one order in every transaction: two that change several volumes cannot deadlock
    -- (a write touches one, a file's delete at most its copies' few)
    IF TG_OP = 'INSERT' THEN
        FOR d IN SELECT volume_id, count(*) AS n FROM new_rows GROUP BY volume_id ORDER BY volume_id LOOP
            UPDATE archive_volume SET live_files = live_files + d.n WHERE volume_id = d.volume_id;
        END LOOP;
    ELSE
        FOR d IN SELECT volume_id, count(*) AS n FROM old_rows GROUP BY volume_id ORDER BY volume_id LOOP
            UPDATE archive_volume SET live_files = live_files - d.n WHERE volume_id = d.volume_id;
        END LOOP;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER segment_inserted AFTER INSERT ON segment REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_archive_volume_files();
CREATE TRIGGER segment_deleted AFTER DELETE ON segment REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_archive_volume_files();
CREATE TRIGGER segment_truncated AFTER TRUNCATE ON segment
    FOR EACH STATEMENT EXECUTE FUNCTION count_archive_volume_files();
-- exact whatever session_replication_role a bulk path runs with (see V26)
ALTER TABLE segment ENABLE ALWAYS TRIGGER segment_inserted;
ALTER TABLE segment ENABLE ALWAYS TRIGGER segment_deleted;
ALTER TABLE segment ENABLE ALWAYS TRIGGER segment_truncated;
