-- The recall intake writes a recall_file row for every queued file of a new request in one statement; its
-- foreign key to file checked each row with a FOR KEY SHARE lock on the file's row (a write to that row: every
-- page of a 10^6-file request's catalog rows dirtied again), 13-15 s of the 18-22 s the rows took for 10^6
-- files against 5.4-5.9 s without it (bench/intake.sh's database, psql, this session).
-- The key is redundant: the intake creates these rows only from stage_request_file.file_id, which keeps its
-- own foreign key to file (no ON DELETE: a file some request holds cannot be deleted). Its ON DELETE CASCADE
-- went with it: a file deleted once no request holds it any more (by hand; the service never deletes catalog
-- files) leaves its recall_file row, which nothing reads (every reader comes from a request's files), and
-- which a TRUNCATE of file no longer empties (the benches truncate recall_file themselves).
ALTER TABLE recall_file DROP CONSTRAINT recall_file_file_id_fkey;
