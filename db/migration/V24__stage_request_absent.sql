-- Files a WLCG stage request named that were not in the catalog, or not the caller's to see, when it came.
--
-- The WLCG Tape REST API accepts such a request and reports those files FAILED ("no such file in the
-- catalog"), as dCache and EOS do: FTS3 submits many files per call and expects an answer for every path, so a
-- 400 for the whole call would fail the good files with the bad. The native API still refuses them (400).
-- An absent file counts as a failed file of its request; it is never scheduled (no catalog id to read).
CREATE TABLE stage_request_absent (
    request_id uuid    NOT NULL REFERENCES stage_request (id) ON DELETE CASCADE,
    ordinal    integer NOT NULL,                 -- position (1-based) in the submitted list
    path       text    NOT NULL,
    PRIMARY KEY (request_id, ordinal)
);
