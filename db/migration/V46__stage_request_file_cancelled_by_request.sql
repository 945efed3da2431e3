-- The recall intake learns of files cancelled one by one in a still open request (the scheduler stops waiting
-- for them and stops their reads): it looks up the recent cancels of just the requests whose count of cancelled
-- files changed. The index on finished_at alone (V25) would walk every recent cancel, a whole 10^6-file request
-- cancelled a moment ago among them.
CREATE INDEX stage_request_file_cancelled_by_request ON stage_request_file (request_id, finished_at) WHERE state = 'cancelled';
