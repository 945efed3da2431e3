-- A buffer path is its file's while the file is in the buffer: once evicted, the next file landed at that path (a
-- producer landing each run's files at the same paths and naming them itself) may be registered there. The path was
-- unique over every file ever registered, and an evicted file refused every later registration of its path for ever.
ALTER TABLE archive_file DROP CONSTRAINT archive_file_path_key;
CREATE UNIQUE INDEX archive_file_path_live_idx ON archive_file (path) WHERE state <> 'evicted';
-- look-ups by path: the file there now and those that were
CREATE INDEX archive_file_path_idx ON archive_file (path);
