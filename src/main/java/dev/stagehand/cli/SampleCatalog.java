package dev.stagehand.cli;

import dev.stagehand.tape.SimulatedContent;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * A small deterministic catalog for the demo: 3 datasets of 40 files (10-60 MB) written back to back on
 * 6 LTO-9 volumes (each dataset on two volumes, after data already on them), the first files of one
 * dataset with a second copy on another volume. Checksums are those of the simulated library's content,
 * so every staged file is verified against the catalog for real. Files are small so the demo writes only
 * a few GB of real bytes.
 */
final class SampleCatalog {

    static final long MB = 1_000_000L;
    static final long TB = 1_000_000_000_000L;
    static final int FILES_PER_DATASET = 40;

    record Dataset(String name, String experiment, String directory, String firstVolume, String secondVolume, long startOffset) {}

    static final List<Dataset> DATASETS = List.of(
            new Dataset("atlas.run2026A.raw", "atlas", "/demo/atlas/run2026A", "DM0001", "DM0002", 3 * TB + 17 * MB),
            new Dataset("cms.run2026B.reco", "cms", "/demo/cms/run2026B", "DM0003", "DM0004", 7 * TB + 401 * MB),
            new Dataset("climate.cmip7.daily", "climate", "/demo/climate/cmip7", "DM0005", "DM0006", 1 * TB + 5 * MB));

    /** CSV in the HSM-dump format that {@code catalog import} reads. */
    static String csv() {
        Random random = new Random(2026);
        StringBuilder out = new StringBuilder("# stagehand demo catalog\nfile,volume,offset_bytes,size_bytes,experiment,dataset,adler32,fseq,library,media_type\n");
        for (Dataset d : DATASETS) {
            long offset = d.startOffset();
            int fseq = 1000;
            for (int i = 0; i < FILES_PER_DATASET; i++) {
                if (i == FILES_PER_DATASET / 2) { // the rest of the dataset continues on the second volume
                    offset = d.startOffset() / 2;
                    fseq = 500;
                }
                long size = 10 * MB + (long) (random.nextDouble() * 50 * MB);
                String volume = i < FILES_PER_DATASET / 2 ? d.firstVolume() : d.secondVolume();
                String name = fileName(d, i);
                String adler = SimulatedContent.adler32Hex(name, size);
                row(out, name, volume, offset, size, d, adler, fseq++);
                if (d.experiment().equals("climate") && i < 5) { // a second copy, written elsewhere on another tape
                    row(out, name, "DM0001", 12 * TB + i * 600 * MB, size, d, adler, 9000 + i);
                }
                offset += size;
            }
        }
        return out.toString();
    }

    private static void row(StringBuilder out, String name, String volume, long offset, long size, Dataset d, String adler, int fseq) {
        out.append(name).append(',').append(volume).append(',').append(offset).append(',').append(size).append(',')
                .append(d.experiment()).append(',').append(d.name()).append(',').append(adler).append(',').append(fseq)
                .append(",sim,LTO-9\n");
    }

    static String fileName(Dataset d, int i) {
        return String.format("%s/file%04d.root", d.directory(), i);
    }

    /** The sample recall: two whole datasets and part of the third, in name order (not tape order). */
    static List<String> sampleRecall() {
        List<String> files = new ArrayList<>();
        for (Dataset d : DATASETS) {
            int n = d.experiment().equals("climate") ? 10 : FILES_PER_DATASET;
            for (int i = 0; i < n; i++) files.add(fileName(d, i));
        }
        return files;
    }
}
