-- The buffer file's modification time when it was registered (and checksummed): eviction deletes the file only while
-- it is still that file. A file written over it since (the same name landed again, refused registration meanwhile)
-- was deleted with it, though never on tape. Files registered before this have none and are deleted as before.
ALTER TABLE archive_file ADD COLUMN modified_at timestamptz;
