-- Transfers by the time they ended, and cancelled request files by the time they were cancelled: a recall
-- hand-off round collects the transfers ended, and cancels those of files cancelled, since the last round
-- (instead of looking up every file waiting for its transfer at every round); the console's throughput chart
-- reads the last hour of transfers.
CREATE INDEX transfer_job_finished ON transfer_job (finished_at) WHERE finished_at IS NOT NULL;
CREATE INDEX stage_request_file_cancelled ON stage_request_file (finished_at) WHERE state = 'cancelled';
