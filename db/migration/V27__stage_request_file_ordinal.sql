-- A request's files by their place in the submitted list. The console's request page (every 2 s) and the
-- API's request reads show one page of a request's files: a page is now a range of places on this index,
-- read in its own size, where it sorted every file of the request (10^6 in a whole-experiment recall: 0.5 s
-- at each refresh). Places 1..file_count are shared with stage_request_absent (files not in the catalog),
-- so the page at offset k holds the places k+1..k+limit of the two tables.
--
-- Rows written without a place (before V6) are numbered here after the request's others, by file id: the
-- order they were shown in.
UPDATE stage_request_file s SET ordinal = n.place
  FROM (SELECT request_id, file_id, ordinal,
               coalesce(max(ordinal) OVER (PARTITION BY request_id), 0)
                 + row_number() OVER (PARTITION BY request_id, ordinal IS NULL ORDER BY file_id) AS place
          FROM stage_request_file
         WHERE request_id IN (SELECT request_id FROM stage_request_file WHERE ordinal IS NULL)) n
 WHERE n.ordinal IS NULL AND s.request_id = n.request_id AND s.file_id = n.file_id;

ALTER TABLE stage_request_file ALTER COLUMN ordinal SET NOT NULL;
CREATE UNIQUE INDEX stage_request_file_ordinal_idx ON stage_request_file (request_id, ordinal);
