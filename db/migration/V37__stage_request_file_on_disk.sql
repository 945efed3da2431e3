-- The transfer hand-off looks for files of open requests with a destination that are on disk, at every round
-- (every poll, and after files land). The only path was the request's own index: each round read every file
-- of every open request, nearly all of them sent or under way (0.14 s a round for one open request of 500,000
-- files in psql EXPLAIN ANALYZE; 1.5 ms along this index). Partial: only files on disk have an entry.
-- Upgrading: the build blocks writes to stage_request_file for one scan of the table (not CONCURRENTLY:
-- Flyway's lock connection holds a transaction open, which a concurrent build waits for without end).
CREATE INDEX stage_request_file_on_disk ON stage_request_file (request_id) WHERE state = 'on_disk';
