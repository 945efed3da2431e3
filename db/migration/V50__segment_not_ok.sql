-- The archive buffer's eviction round looks for tape copies a read has since found bad (segment suspect or lost)
-- while their file is still in the buffer, to write them again from its bytes: along this index of the few
-- segments that are not ok, not through every segment.
CREATE INDEX segment_not_ok ON segment (file_id) WHERE state <> 'ok';
