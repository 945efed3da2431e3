-- A volume's next tape file number is unknown (NULL) once the library wrote a file there beyond the catalog's end of
-- data: the volume holds a write the catalog has no record of (a crash, or a failed record, between the write and its
-- record). Its later segments were numbered one short for every such file; they are now recorded without a number.
ALTER TABLE archive_volume ALTER COLUMN next_fseq DROP NOT NULL;
