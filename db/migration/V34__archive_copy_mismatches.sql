-- Tape copies of a file that failed their checksum, apart from its other failed attempts: after 3 the file fails for
-- good. It counted every failed attempt, and a failed mount or drive counts one for each file of its write list,
-- so a file whose list had met two of them failed for good at its first mismatch. (No rewrite: a constant default.)
ALTER TABLE archive_copy ADD COLUMN mismatches smallint NOT NULL DEFAULT 0;
