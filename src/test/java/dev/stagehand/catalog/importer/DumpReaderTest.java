package dev.stagehand.catalog.importer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.catalog.CatalogImportRejected.RowError;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class DumpReaderTest {

    record Read(DumpReader.Result result, String copy) {}

    static Read read(String csv) throws IOException {
        var out = new ByteArrayOutputStream();
        var result = new DumpReader(20).read(new ByteArrayInputStream(csv.getBytes(StandardCharsets.UTF_8)), (b, n) -> out.write(b, 0, n));
        return new Read(result, out.toString(StandardCharsets.UTF_8));
    }

    @Test
    void splitsQuotedFields() {
        List<String> f = new ArrayList<>();
        assertThat(DumpReader.split("a,\"b,c\",\"d\"\"e\",", f)).isNull();
        assertThat(f).containsExactly("a", "b,c", "d\"e", "");
        assertThat(DumpReader.split("a,\"b", f)).contains("unterminated");
        assertThat(DumpReader.split("a,\"b\"c", f)).contains("after a closing quote");
        assertThat(DumpReader.split("a,b\"c", f)).contains("quote inside");
    }

    @Test
    void writesCopyTextWithNullsAndEscapedBackslashes() throws IOException {
        Read r = read("# c\nfile,volume,offset_bytes,size_bytes,experiment,adler32\n\"/a\\\\b,c\",V1,0,10,atlas,ABCDEF01\n/d,V1,10,5,atlas,\n");
        assertThat(r.result().errorCount()).isZero();
        assertThat(r.result().rows()).isEqualTo(2);
        assertThat(r.copy()).isEqualTo("3\t/a\\\\\\\\b,c\tV1\t0\t10\tatlas\t\\N\tabcdef01\t\\N\t\\N\t\\N\n"
                + "4\t/d\tV1\t10\t5\tatlas\t\\N\t\\N\t\\N\t\\N\t\\N\n");
    }

    /**
     * Checksums in any form the API takes (1-8 digits, either case, 0x) are kept in the catalog's form; a dump
     * whose tool dropped the leading zero was refused whole. More than 32 bits is still refused, with its line.
     */
    @Test
    void takesChecksumsInEveryFormTheApiTakesAndRefusesTheRest() throws IOException {
        Read r = read("file,volume,offset_bytes,size_bytes,experiment,adler32\n"
                + "/a,V1,0,1,atlas,abcdef1\n/b,V1,1,1,atlas,0x0000ABCD\n/c,V1,2,1,atlas,1ffffffff\n");
        assertThat(r.result().errors()).extracting(RowError::line).containsExactly(4L);
        assertThat(r.result().errors().getFirst().reason()).contains("expected 1-8 hex digits");
        Read good = read("file,volume,offset_bytes,size_bytes,experiment,adler32\n/a,V1,0,1,atlas,abcdef1\n/b,V1,1,1,atlas,0x0000ABCD\n");
        assertThat(good.copy()).isEqualTo("2\t/a\tV1\t0\t1\tatlas\t\\N\t0abcdef1\t\\N\t\\N\t\\N\n"
                + "3\t/b\tV1\t1\t1\tatlas\t\\N\t0000abcd\t\\N\t\\N\t\\N\n");
    }

    @Test
    void reportsEveryBadFieldWithItsLineAndWritesNothing() throws IOException {
        Read r = read("file,volume,offset_bytes,size_bytes,experiment,fseq\n"
                + "/a,V1,0,1,atlas,1\n"
                + "/b,V 1,0,1,atlas,1\n"
                + "/c,V1,99999999999999999999,1,atlas,1\n"
                + "/d,V1,0,1.5,atlas,1\n"
                + "/e,V1,0,1,at las,1\n"
                + "/f,V1,0,1,atlas,-1\n");
        assertThat(r.result().errors()).extracting(RowError::line).containsExactly(3L, 4L, 5L, 6L, 7L);
        assertThat(r.copy()).isEmpty();
    }

    @Test
    void refusesInvalidUtf8AndDuplicateHeaderColumns() throws IOException {
        var bad = new ByteArrayOutputStream();
        bad.write("file,volume,offset_bytes,size_bytes,experiment\n/a".getBytes(StandardCharsets.UTF_8));
        bad.write(new byte[] {(byte) 0xC3, (byte) 0x28});
        bad.write(",V1,0,1,atlas\n".getBytes(StandardCharsets.UTF_8));
        var result = new DumpReader(20).read(new ByteArrayInputStream(bad.toByteArray()), (b, n) -> {});
        assertThat(result.errors().getFirst().reason()).contains("UTF-8");
        assertThat(read("file,file,volume,offset_bytes,size_bytes,experiment\n").result().errors().getFirst().reason()).contains("twice");
    }
}
