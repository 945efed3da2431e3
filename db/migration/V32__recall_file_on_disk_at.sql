-- The console overview's throughput chart: tape reads of the last hour are the recall_file rows that landed on
-- disk within it. Without an index every row ever staged was read at each refresh (tens of millions over a
-- service's life; 87 ms as a parallel scan at 10^6 rows, 0.06 ms along this index: psql EXPLAIN ANALYZE on
-- bench/intake.sh's database). Partial: only files on disk have an entry, so queue changes do not touch it.
-- Upgrading: the build blocks writes to recall_file for one scan of the table (not CONCURRENTLY: Flyway's
-- lock connection holds a transaction open, which a concurrent build waits for without end).
CREATE INDEX recall_file_on_disk_at ON recall_file (updated_at) WHERE state = 'on_disk';
