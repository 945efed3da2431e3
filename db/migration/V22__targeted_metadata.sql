-- WLCG Tape REST API targetedMetadata: the object a client addressed to this site (the key discovery's
-- sitename names) for each file it asked to stage. Kept with the request's file and handed to the tape
-- driver with the read (a site script gets it as a side file), as EOS hands it to CTA.
ALTER TABLE stage_request_file ADD COLUMN targeted_metadata jsonb
    CHECK (targeted_metadata IS NULL OR jsonb_typeof(targeted_metadata) = 'object');
