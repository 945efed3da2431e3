-- The archive poll (ArchiveFlusher.QUEUED_SQL, every round) as a function whose planner settings leave it index
-- scans only. Its three per-family look-ups each have an index that bounds them (V28, V38), but with statistics
-- older than a burst of registrations the planner costs a family at about one row, and a whole-family read then
-- ties with the bounded one: V38 took one such tie away, and the next clean-clone failure was another lateral, its
-- oldest ready copy read by a bitmap scan and a sort of the family's 7,500 copies (1,476 blocks against 124;
-- ArchiveRoundsIT.thePollReadsTheFamiliesNotEveryQueuedCopy). At 10^6 queued copies such a plan reads them all at
-- every poll. With sequential and bitmap scans and sorts off, each look-up can only walk its own index (and JIT
-- off: the cost the disabled paths add would otherwise compile the statement, 400 ms a poll in psql).
CREATE FUNCTION archive_ready_queues(at timestamptz)
RETURNS TABLE (family text, copy_no smallint, bytes bigint, files bigint, oldest timestamptz)
LANGUAGE sql STABLE
SET enable_seqscan = off SET enable_bitmapscan = off SET enable_sort = off SET jit = off
AS $$
SELECT q.family, q.copy_no, (q.bytes - w.bytes - f.bytes)::bigint, q.files - w.files - f.files, o.oldest
  FROM archive_family_queue q
 -- copies put back with a backoff not over yet
 CROSS JOIN LATERAL (SELECT count(*) AS files, coalesce(sum(c.size_bytes), 0) AS bytes FROM archive_copy c
                      WHERE c.family = q.family AND c.copy_no = q.copy_no AND c.state = 'queued'
                        AND c.not_before <> c.registered_at AND c.not_before > at) w
 -- copies registered on a clock ahead of this one
 CROSS JOIN LATERAL (SELECT count(*) AS files, coalesce(sum(c.size_bytes), 0) AS bytes FROM archive_copy c
                      WHERE c.family = q.family AND c.copy_no = q.copy_no AND c.state = 'queued'
                        AND c.not_before = c.registered_at AND c.registered_at > at) f
 -- the oldest ready copy (a family with none is left out)
 CROSS JOIN LATERAL (SELECT c.registered_at AS oldest FROM archive_copy c
                      WHERE c.family = q.family AND c.copy_no = q.copy_no AND c.state = 'queued' AND c.not_before <= at
                      ORDER BY c.registered_at LIMIT 1) o
$$;
