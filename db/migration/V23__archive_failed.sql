-- A buffer file that cannot be archived as registered (its bytes changed after registration, or its tape copies
-- kept failing their checksum) is failed for good with the reason in archive_copy.error, instead of being
-- written again every retry (each mismatch used to close a volume). The file keeps its bytes in the buffer.
ALTER TABLE archive_file DROP CONSTRAINT archive_file_state_check;
ALTER TABLE archive_file ADD CONSTRAINT archive_file_state_check
    CHECK (state IN ('queued', 'writing', 'archived', 'evictable', 'evicted', 'failed'));
ALTER TABLE archive_copy DROP CONSTRAINT archive_copy_state_check;
ALTER TABLE archive_copy ADD CONSTRAINT archive_copy_state_check CHECK (state IN ('queued', 'writing', 'done', 'failed'));
