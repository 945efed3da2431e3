package dev.stagehand.transfer.gridftp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.stagehand.transfer.FileCopy;
import dev.stagehand.transfer.MoverSettings;
import dev.stagehand.transfer.TransferFailure;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * jglobus writes GridFTP commands in the JVM's default charset: where that is not UTF-8 (-Dfile.encoding=COMPAT
 * and a non-UTF-8 locale) a non-ASCII name would reach the server garbled, so such names are refused, and the
 * mover says why once, at start.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ControlCharsetTest {

    static final URI ACCENTED = URI.create("gsiftp://127.0.0.1:9/d/d%C3%A9j%C3%A0%20vu.bin");

    @Test
    void aNonAsciiNameIsRefusedUnlessCommandsAreWrittenInUtf8() {
        assertThatThrownBy(() -> Endpoint.parse(ACCENTED, StandardCharsets.ISO_8859_1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("default charset is ISO-8859-1, not UTF-8")
                .hasMessageContaining("-Dfile.encoding=UTF-8");
        assertThat(Endpoint.parse(ACCENTED, StandardCharsets.UTF_8).path()).isEqualTo("/d/déjà vu.bin");
        assertThat(Endpoint.parse(URI.create("gsiftp://127.0.0.1:9/d/plain%20name.bin"), StandardCharsets.US_ASCII).path())
                .isEqualTo("/d/plain name.bin");
    }

    /** A JVM started as an operator with an old locale might: the file fails at once, and the log says why. */
    @Test
    void aMoverInAJvmWhoseCharsetIsNotUtf8RefusesNonAsciiNamesAndSaysSo() throws Exception {
        ProcessBuilder pb = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Dfile.encoding=COMPAT", "-cp", System.getProperty("java.class.path"), Probe.class.getName())
                .redirectErrorStream(true);
        pb.environment().put("LC_ALL", "C");
        pb.environment().put("LANG", "C");
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(50, TimeUnit.SECONDS)).isTrue();
        assertThat(out).contains("charset US-ASCII");
        assertThat(out).contains("ERROR").containsOnlyOnce("not UTF-8: jglobus writes GridFTP commands in it");
        assertThat(out).contains("failed BAD_REQUEST", "this JVM's default charset is US-ASCII, not UTF-8");
        assertThat(out).contains("plain.bin failed CONNECTION"); // an ASCII name goes on (to a port nobody serves)
    }

    /** Run in the child JVM: two movers, a non-ASCII and an ASCII name to a gsiftp:// destination. */
    public static final class Probe {
        public static void main(String[] args) throws Exception {
            System.out.println("charset " + java.nio.charset.Charset.defaultCharset());
            Path f = Files.createTempFile("stagehand-charset", ".bin");
            Files.write(f, new byte[10]);
            MoverSettings s = MoverSettings.defaults().withRetry(java.time.Duration.ofSeconds(2), 1,
                    java.time.Duration.ofMillis(10), java.time.Duration.ofSeconds(1));
            try (GridFtpMover first = new GridFtpMover(s, null); GridFtpMover mover = new GridFtpMover(s, null)) {
                for (URI to : List.of(ACCENTED, URI.create("ftp://127.0.0.1:9/d/plain.bin"))) {
                    FileCopy c = new FileCopy(to.getPath().substring(3), f.toUri(), to, 10, null);
                    try {
                        mover.submit(List.of(c)).result(c).get(30, TimeUnit.SECONDS);
                        System.out.println(c.id() + " done");
                    } catch (java.util.concurrent.ExecutionException e) {
                        TransferFailure tf = (TransferFailure) e.getCause();
                        System.out.println(c.id() + " failed " + tf.kind() + ": " + tf.getMessage());
                    }
                }
            } finally {
                Files.delete(f);
            }
        }
    }
}
