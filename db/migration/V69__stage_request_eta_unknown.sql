-- Why a request open in the scheduler has no ETA (eta_at NULL), module recall: a large request is taken into the
-- scheduler's queue a slice a round, and an ETA from the slices taken so far read too early (their volumes are
-- not the whole request's). Until its last slice has come the scheduler writes eta_at NULL and the reason here;
-- with its first ETA it clears this. NULL with eta_at NULL: no estimate yet (or the request is not scheduled here).
ALTER TABLE stage_request ADD COLUMN eta_unknown text;
