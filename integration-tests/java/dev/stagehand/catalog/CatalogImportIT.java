package dev.stagehand.catalog;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.stagehand.catalog.CatalogImportRejected.RowError;
import dev.stagehand.cli.Main;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;
import java.util.zip.GZIPOutputStream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;

/** {@code catalog import} against the real database: all or nothing, idempotent, gzip, several copies. */
@SpringBootTest
class CatalogImportIT {

    @Autowired
    CatalogImporter importer;
    @Autowired
    JdbcTemplate jdbc;
    @TempDir
    Path tmp;

    String p; // a name prefix unique to this test
    String v; // a volume label prefix unique to this test

    @BeforeEach
    void names() {
        String u = UUID.randomUUID().toString().replace("-", "");
        p = "/imp/" + u;
        v = "V" + u.substring(0, 8);
    }

    /** The workload format, with a comment, a file requested twice and one file with two copies. */
    String workload() {
        return """
                # stagehand-workload v1 kind=test
                arrival_s,request,file,volume,offset_bytes,size_bytes,experiment,priority,dataset
                0.0,r0,P/a,VA,0,100,atlas,0,dsP
                0.0,r0,P/b,VA,100,200,atlas,0,dsP
                1.5,r1,P/a,VA,0,100,atlas,3,dsP
                1.5,r1,P/c,VB,5000,300,atlas,3,dsP
                2.0,r2,P/c,VC,0,300,atlas,0,dsP
                """.replace("P/", p + "/").replace("dsP", "ds" + p).replace("VA", v + "A").replace("VB", v + "B").replace("VC", v + "C");
    }

    ImportSummary load(String csv) {
        return importer.importStream(new ByteArrayInputStream(csv.getBytes(StandardCharsets.UTF_8)), "test");
    }

    long files() {
        return jdbc.queryForObject("SELECT count(*) FROM file WHERE name LIKE ?", Long.class, p + "/%");
    }

    long segments() {
        return jdbc.queryForObject("SELECT count(*) FROM segment s JOIN file f ON f.id = s.file_id WHERE f.name LIKE ?", Long.class, p + "/%");
    }

    long volumes() {
        return jdbc.queryForObject("SELECT count(*) FROM volume WHERE label LIKE ?", Long.class, v + "%");
    }

    @Test
    void importsTheWorkloadFormatDeduplicatingFilesAndKeepingEveryCopy() {
        ImportSummary s = load(workload());
        assertThat(s.rows()).isEqualTo(5);
        assertThat(s.files()).isEqualTo(3);
        assertThat(s.newFiles()).isEqualTo(3);
        assertThat(s.segments()).isEqualTo(4);
        assertThat(s.newVolumes()).isEqualTo(3);
        assertThat(s.newDatasets()).isEqualTo(1);
        assertThat(files()).isEqualTo(3);
        assertThat(segments()).isEqualTo(4);
        assertThat(jdbc.queryForList("SELECT v.label || '@' || s.offset_bytes FROM segment s JOIN volume v ON v.id = s.volume_id "
                + "JOIN file f ON f.id = s.file_id WHERE f.name = ? ORDER BY v.label", String.class, p + "/c"))
                .containsExactly(v + "B@5000", v + "C@0");
        assertThat(jdbc.queryForObject("SELECT d.experiment || ':' || f.size_bytes FROM file f JOIN dataset d ON d.id = f.dataset_id "
                + "WHERE f.name = ?", String.class, p + "/b")).isEqualTo("atlas:200");
    }

    /**
     * On a shared database the service's account is no superuser: the import cannot switch off the per-row
     * foreign-key checks (that needs {@code session_replication_role}, a superuser setting) and must take the
     * ordinary path, with the same result. The test imports as a role holding only the rights the service needs.
     */
    @Test
    void anAccountWithoutSuperuserRightsImportsByTheOrdinaryPath() throws Exception {
        String role = "importer_" + v.toLowerCase();
        String password = UUID.randomUUID().toString();
        String database = jdbc.queryForObject("SELECT current_database()", String.class);
        jdbc.execute("CREATE ROLE " + role + " LOGIN NOSUPERUSER PASSWORD '" + password + "'");
        try {
            jdbc.execute("GRANT TEMPORARY ON DATABASE \"" + database + "\" TO " + role);
            jdbc.execute("GRANT USAGE ON SCHEMA public TO " + role);
            jdbc.execute("GRANT SELECT, INSERT, UPDATE ON dataset, file, volume, segment TO " + role);
            jdbc.execute("GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO " + role);
            String url;
            try (var c = jdbc.getDataSource().getConnection()) {
                url = c.getMetaData().getURL();
            }
            var asRole = new org.springframework.jdbc.datasource.DriverManagerDataSource(url, role, password);
            assertThat(new JdbcTemplate(asRole).queryForObject(
                    "SELECT rolsuper FROM pg_roles WHERE rolname = current_user", Boolean.class)).isFalse();

            ImportSummary s = new CatalogImporter(asRole)
                    .importStream(new ByteArrayInputStream(workload().getBytes(StandardCharsets.UTF_8)), "test");

            assertThat(s.newFiles()).isEqualTo(3);
            assertThat(s.newSegments()).isEqualTo(4);
            assertThat(files()).isEqualTo(3);
            assertThat(segments()).isEqualTo(4);
            assertThat(jdbc.queryForList("SELECT v.label || '@' || s.offset_bytes FROM segment s JOIN volume v ON v.id = s.volume_id "
                    + "JOIN file f ON f.id = s.file_id WHERE f.name = ? ORDER BY v.label", String.class, p + "/c"))
                    .containsExactly(v + "B@5000", v + "C@0");
            // a contradiction is still refused whole on this path
            assertThatThrownBy(() -> new CatalogImporter(asRole).importStream(new ByteArrayInputStream(
                    workload().replace(",300,", ",301,").getBytes(StandardCharsets.UTF_8)), "test"))
                    .isInstanceOf(CatalogImportRejected.class);
            assertThat(files()).isEqualTo(3);
        } finally {
            jdbc.execute("DROP OWNED BY " + role);
            jdbc.execute("DROP ROLE " + role);
        }
    }

    @Test
    void reImportChangesNothing() {
        load(workload());
        ImportSummary again = load(workload());
        assertThat(again.files()).isEqualTo(3);
        assertThat(again.newFiles()).isZero();
        assertThat(again.newSegments()).isZero();
        assertThat(again.newVolumes()).isZero();
        assertThat(again.newDatasets()).isZero();
        assertThat(files()).isEqualTo(3);
        assertThat(segments()).isEqualTo(4);
    }

    @Test
    void readsGzipAndOptionalColumns() throws IOException {
        String csv = ("file,volume,offset_bytes,size_bytes,experiment,dataset,adler32,fseq,library,media_type,extra\n"
                + "P/g1,VG,0,10,cms,,0A1B2C3D,1,lib1,LTO-8,x\n"
                + "P/g2,VG,10,20,cms,,,2,lib1,LTO-8,y\n").replace("P/", p + "/").replace("VG", v + "G");
        Path gz = tmp.resolve("dump.csv.gz");
        try (OutputStream out = new GZIPOutputStream(Files.newOutputStream(gz))) {
            out.write(csv.getBytes(StandardCharsets.UTF_8));
        }
        ImportSummary s = importer.importFile(gz);
        assertThat(s.newFiles()).isEqualTo(2);
        assertThat(s.ignoredColumns()).containsExactly("extra");
        assertThat(jdbc.queryForObject("SELECT adler32 FROM file WHERE name = ?", String.class, p + "/g1")).isEqualTo("0a1b2c3d");
        assertThat(jdbc.queryForObject("SELECT adler32 IS NULL AND dataset_id IS NULL FROM file WHERE name = ?", Boolean.class, p + "/g2")).isTrue();
        assertThat(jdbc.queryForObject("SELECT library || '/' || media_type FROM volume WHERE label = ?", String.class, v + "G")).isEqualTo("lib1/LTO-8");
        assertThat(jdbc.queryForObject("SELECT s.fseq FROM segment s JOIN file f ON f.id = s.file_id WHERE f.name = ?", Integer.class, p + "/g2")).isEqualTo(2);
    }

    /**
     * A copy listed twice, its checksum only on the second row (a dump merged from a location export and a checksum
     * export): the checksum is stored, and one that contradicts the catalog is refused, as on a single row.
     */
    @Test
    void aChecksumGivenOnlyOnALaterRowOfACopyIsKept() {
        String csv = ("file,volume,offset_bytes,size_bytes,experiment,adler32\n"
                + "P/k,VK,0,10,cms,\n"
                + "P/k,VK,0,10,cms,0A1B2C3D\n").replace("P/", p + "/").replace("VK", v + "K");
        load(csv);
        assertThat(jdbc.queryForObject("SELECT adler32 FROM file WHERE name = ?", String.class, p + "/k"))
                .as("the dump's checksum of the file").isEqualTo("0a1b2c3d");

        String other = csv.replace("0A1B2C3D", "11111111");
        CatalogImportRejected e = catchThrowableOfType(CatalogImportRejected.class, () -> load(other));
        assertThat(e).as("a checksum contradicting the catalog is refused").isNotNull();
        assertThat(e.errors().getFirst().reason()).contains("adler32 11111111 differs from the catalog (0a1b2c3d)");
    }

    @Test
    void malformedRowsAreReportedByLineAndNothingIsCommitted() {
        String csv = workload()
                + ("0,r3,P/d,VA,-5,10,atlas,0,dsP\n"            // line 8: negative offset
                + "0,r3,P/e,VA,9,ten,atlas,0,dsP\n"              // line 9: size not a number
                + "0,r3,P/../etc/passwd,VA,9,1,atlas,0,dsP\n"    // line 10: ..
                + "0,r3,relative/f,VA,9,1,atlas,0,dsP\n"         // line 11: relative
                + "0,r3,P/f,VA,9,1,atlas,0\n"                    // line 12: missing field
                + "0,r3,P/g\u0001,VA,9,1,atlas,0,dsP\n")         // line 13: control character
                .replace("P/", p + "/").replace("dsP", "ds" + p).replace("VA", v + "A");
        CatalogImportRejected e = catchThrowableOfType(CatalogImportRejected.class, () -> load(csv));
        assertThat(e.errors()).extracting(RowError::line).containsExactly(8L, 9L, 10L, 11L, 12L, 13L);
        assertThat(e.errors().get(0).reason()).contains("offset_bytes");
        assertThat(e.errors().get(1).reason()).contains("size_bytes");
        assertThat(e.errors().get(2).reason()).contains("..");
        assertThat(e.errors().get(3).reason()).contains("absolute");
        assertThat(e.errors().get(4).reason()).contains("fields");
        assertThat(e.errors().get(5).reason()).contains("control");
        assertThat(files()).isZero();
        assertThat(volumes()).isZero();
    }

    @Test
    void contradictionsAcrossRowsAndWithTheCatalogAreRejected() {
        String inconsistent = workload() + "3.0,r4,P/b,VA,100,999,atlas,0,dsP\n" // line 8: other size for P/b
                .replace("P/", p + "/").replace("dsP", "ds" + p).replace("VA", v + "A");
        CatalogImportRejected e = catchThrowableOfType(CatalogImportRejected.class, () -> load(inconsistent));
        assertThat(e.errors()).extracting(RowError::line).contains(8L);
        assertThat(e.errors().toString()).contains("size 999 differs from 200 on line 4");
        assertThat(files()).isZero();

        load(workload());
        String resized = ("file,volume,offset_bytes,size_bytes,experiment,dataset\nP/new,VA,7000,1,atlas,dsP\nP/a,VA,0,101,atlas,dsP\n")
                .replace("P/", p + "/").replace("dsP", "ds" + p).replace("VA", v + "A");
        CatalogImportRejected e2 = catchThrowableOfType(CatalogImportRejected.class, () -> load(resized));
        assertThat(e2.errors()).extracting(RowError::line).containsExactly(3L);
        assertThat(e2.errors().getFirst().reason()).contains("differs from the catalog");
        assertThat(jdbc.queryForObject("SELECT count(*) FROM file WHERE name = ?", Long.class, p + "/new")).isZero();
    }

    /**
     * Two files at one position of a volume (a dump merged from two HSM exports, a repack half recorded): a read
     * there delivers the other file's bytes, accepted as the file's when the catalog has no checksum. Refused,
     * in the dump and against the catalog; an empty file takes no room and the next file may start where it is.
     */
    @Test
    void twoFilesAtOnePositionOfAVolumeAreRejected() {
        String header = "file,volume,offset_bytes,size_bytes,experiment,dataset\n";
        String clash = (header + "P/a,VA,0,100,atlas,dsP\nP/b,VA,100,200,atlas,dsP\nP/x,VA,100,50,atlas,dsP\n")
                .replace("P/", p + "/").replace("dsP", "ds" + p).replace("VA", v + "A");
        CatalogImportRejected e = catchThrowableOfType(CatalogImportRejected.class, () -> load(clash));
        assertThat(e).as("a second file at offset 100 of one volume is refused").isNotNull();
        assertThat(e.errors()).extracting(RowError::line).containsExactly(4L);
        assertThat(e.errors().getFirst().reason()).contains("offset 100 is that of file " + p + "/b on line 3");
        assertThat(files()).isZero();

        load(workload());
        String later = (header + "P/new,VA,7000,1,atlas,dsP\nP/y,VA,100,200,atlas,dsP\n")
                .replace("P/", p + "/").replace("dsP", "ds" + p).replace("VA", v + "A");
        CatalogImportRejected e2 = catchThrowableOfType(CatalogImportRejected.class, () -> load(later));
        assertThat(e2).as("a file at the catalog's offset of another file on that volume is refused").isNotNull();
        assertThat(e2.errors()).extracting(RowError::line).containsExactly(3L);
        assertThat(e2.errors().getFirst().reason()).contains("offset 100 is that of file " + p + "/b in the catalog");
        assertThat(jdbc.queryForObject("SELECT count(*) FROM file WHERE name = ?", Long.class, p + "/new")).isZero();

        String empty = (header + "P/e,VA,300,0,atlas,dsP\nP/after,VA,300,10,atlas,dsP\n")
                .replace("P/", p + "/").replace("dsP", "ds" + p).replace("VA", v + "A");
        assertThat(load(empty).newFiles()).isEqualTo(2);
    }

    /**
     * A file the catalog has under one experiment, listed under another: authorization goes by the file's
     * experiment, and the import said it had loaded the dump while the file silently kept its old one. Refused,
     * as a size that differs from the catalog is.
     */
    @Test
    void aFileUnderAnotherExperimentThanInTheCatalogIsRejected() {
        load(workload());
        String moved = ("file,volume,offset_bytes,size_bytes,experiment\nP/new,VA,7000,1,cms\nP/c,VB,5000,300,cms\n")
                .replace("P/", p + "/").replace("VA", v + "A").replace("VB", v + "B");
        CatalogImportRejected e = catchThrowableOfType(CatalogImportRejected.class, () -> load(moved));
        assertThat(e).as("a file's experiment contradicting the catalog is refused").isNotNull();
        assertThat(e.errors()).extracting(RowError::line).containsExactly(3L);
        assertThat(e.errors().getFirst().reason()).contains("experiment cms differs from the catalog (atlas)");
        assertThat(jdbc.queryForObject("SELECT count(*) FROM file WHERE name = ?", Long.class, p + "/new")).isZero();
    }

    /**
     * A file the catalog holds in one dataset, listed in another: replication rules and completeness go by the
     * file's dataset, and the import said it had loaded the dump while the file silently stayed where it was.
     * Refused; a dump naming a dataset for a file the catalog has in none fills it in, as it does a checksum.
     */
    @Test
    void aFileInAnotherDatasetThanInTheCatalogIsRejectedAndOneWithoutADatasetGetsIt() {
        load(workload());
        String moved = ("file,volume,offset_bytes,size_bytes,experiment,dataset\nP/c,VB,5000,300,atlas,other\n")
                .replace("P/", p + "/").replace("VB", v + "B");
        CatalogImportRejected e = catchThrowableOfType(CatalogImportRejected.class, () -> load(moved));
        assertThat(e).as("a file's dataset contradicting the catalog is refused").isNotNull();
        assertThat(e.errors()).extracting(RowError::reason)
                .containsExactly("file " + p + "/c: dataset other differs from the catalog (ds" + p + ")");

        load(("file,volume,offset_bytes,size_bytes,experiment\nP/lone,VA,9000,1,atlas\n").replace("P/", p + "/").replace("VA", v + "A"));
        load(("file,volume,offset_bytes,size_bytes,experiment,dataset\nP/lone,VA,9000,1,atlas,dsP\n")
                .replace("P/", p + "/").replace("VA", v + "A").replace("dsP", "ds" + p));
        assertThat(jdbc.queryForObject("SELECT d.name FROM file f JOIN dataset d ON d.id = f.dataset_id WHERE f.name = ?",
                String.class, p + "/lone")).isEqualTo("ds" + p);
        assertThat(jdbc.queryForObject("SELECT d.name FROM file f JOIN dataset d ON d.id = f.dataset_id WHERE f.name = ?",
                String.class, p + "/c")).as("unchanged by the refused dump").isEqualTo("ds" + p);
    }

    @Test
    void aDumpWithoutHeaderIsRejected() {
        CatalogImportRejected e = catchThrowableOfType(CatalogImportRejected.class,
                () -> load("# no header\n" + p + "/x," + v + "A,0,1,atlas,ds\n"));
        assertThat(e.errors().getFirst().line()).isEqualTo(2);
        assertThat(e.errors().getFirst().reason()).contains("header");
        assertThatThrownBy(() -> load("")).isInstanceOf(CatalogImportRejected.class).hasMessageContaining("no header");
        assertThat(files()).isZero();
    }

    @Test
    void onlyTheFirstTwentyErrorsAreListedButAllAreCounted() {
        StringBuilder csv = new StringBuilder("file,volume,offset_bytes,size_bytes,experiment\n");
        for (int i = 0; i < 50; i++) csv.append(p).append("/x").append(i).append(',').append(v).append(",-1,1,atlas\n");
        CatalogImportRejected e = catchThrowableOfType(CatalogImportRejected.class, () -> load(csv.toString()));
        assertThat(e.errors()).hasSize(CatalogImporter.MAX_REPORTED_ERRORS);
        assertThat(e.errorCount()).isEqualTo(50);
        assertThat(e.errors().getFirst().line()).isEqualTo(2);
    }

    @Test
    void theCommandExitsNonZeroOnAMalformedDumpAndZeroOnAGoodOne() throws IOException {
        Path bad = tmp.resolve("bad.csv");
        Files.writeString(bad, "file,volume,offset_bytes,size_bytes,experiment\n" + p + "/z," + v + ",x,1,atlas\n");
        var err = new ByteArrayOutputStream();
        var oldErr = System.err;
        System.setErr(new java.io.PrintStream(err, true, StandardCharsets.UTF_8));
        int code;
        try {
            code = Main.run("catalog", "import", bad.toString());
        } finally {
            System.setErr(oldErr);
        }
        assertThat(code).isEqualTo(1);
        assertThat(err.toString(StandardCharsets.UTF_8)).contains("line 2: offset_bytes");
        assertThat(files()).isZero();

        Path good = tmp.resolve("good.csv");
        Files.writeString(good, workload());
        assertThat(Main.run("catalog", "import", good.toString())).isZero();
        assertThat(files()).isEqualTo(3);
        assertThat(List.of(segments())).containsExactly(4L);
    }
}
