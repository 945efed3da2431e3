package dev.stagehand;

import dev.stagehand.catalog.CatalogImporter;
import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/** Test catalogs with names unique to one test run, so tests sharing the database never collide. */
public final class ItCatalog {

    public final String prefix = "/it/" + UUID.randomUUID();
    public final List<String> files = new ArrayList<>();

    /** The name of the dataset the files belong to. */
    public String dataset() {
        return "ds-" + prefix.substring(4, 12);
    }

    /** Imports {@code n} files of one dataset on two volumes and returns their names (in name order). */
    public static ItCatalog load(CatalogImporter importer, int n) {
        return load(importer, n, "atlas");
    }

    /** As {@link #load(CatalogImporter, int)}, the files belonging to {@code experiment}. */
    public static ItCatalog load(CatalogImporter importer, int n, String experiment) {
        ItCatalog c = new ItCatalog();
        String tag = c.prefix.substring(4, 12);
        StringBuilder csv = new StringBuilder("file,volume,offset_bytes,size_bytes,experiment,dataset\n");
        long offset = 0;
        for (int i = 0; i < n; i++) {
            String name = String.format("%s/f%06d", c.prefix, i);
            c.files.add(name);
            long size = 1_000_000L + i;
            csv.append(name).append(",IT").append(tag).append(i % 2).append(',').append(offset).append(',').append(size)
                    .append(',').append(experiment).append(",ds-").append(tag).append('\n');
            offset += size;
        }
        importer.importStream(new ByteArrayInputStream(csv.toString().getBytes(StandardCharsets.UTF_8)), "it catalog");
        return c;
    }
}
