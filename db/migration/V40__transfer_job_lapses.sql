-- Claims of a transfer row that ended with no outcome: its lease lapsed, or its instance restarted under the same
-- name while holding it. A row that keeps taking down the instances moving it (a crash or a kill while moving it,
-- every time) fails after stagehand.transfer.queue.max-lapses of them instead of being claimed for ever.
ALTER TABLE transfer_job ADD COLUMN lapses int NOT NULL DEFAULT 0;
