package dev.stagehand.archive;

/**
 * One file to register for archival.
 *
 * @param path         where it is: absolute, or relative to the landing area; must lie inside the landing area
 * @param sizeBytes    its size (checked against the file); null when not given
 * @param adler32      its Adler32 as hex (checked against the bytes); null when not given
 * @param dataset      dataset it belongs to (created when new); its file family unless a group is configured
 * @param experiment   owning experiment; null: the dataset's, or the configured default for a new dataset
 * @param name         logical file name; null: "/" + its path relative to the landing area
 * @param storageClass storage class (how many tape copies); null: the configured default
 */
public record NewArchiveFile(String path, Long sizeBytes, String adler32, String dataset, String experiment,
                             String name, String storageClass) {}
