-- Submission details of stage requests (issue 2).
--
-- content_sha256: fingerprint of what the client sent (files in order, priority, lifetime, destination,
--   experiment). A retry with the same client_request_id and the same fingerprint returns the stored
--   request; the same id with another fingerprint is a conflict. Never a second request.
-- ordinal: the file's position (1-based) in the submitted list, so reads return files in request order.
ALTER TABLE stage_request ADD COLUMN content_sha256 text;
ALTER TABLE stage_request_file ADD COLUMN ordinal integer;

-- Listing with filters: newest first, by owner or by experiment.
CREATE INDEX stage_request_owner_created_idx ON stage_request (owner, created_at DESC);
CREATE INDEX stage_request_experiment_created_idx ON stage_request (experiment, created_at DESC);
CREATE INDEX stage_request_created_idx ON stage_request (created_at DESC);
