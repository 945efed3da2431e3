package dev.stagehand.transfer.gridftp;

import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.transfer.TransferFailure;
import dev.stagehand.transfer.TransferFailure.Kind;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.StringReader;
import java.net.ConnectException;
import java.net.SocketTimeoutException;
import org.globus.ftp.vanilla.Reply;
import org.junit.jupiter.api.Test;

/** Failures are classified by the server's reply code; paths in a reply's text do not change the class. */
class FailuresTest {

    /** A server's reply as the mover's code throws it. */
    static Exception refused(String reply) throws Exception {
        Reply r = new Reply(new BufferedReader(new StringReader(reply.replace("\n", "\r\n") + "\r\n")));
        return StagehandClient.refused(r, "Server reported transfer failure");
    }

    @Test
    void numbersInAPathAreNotReplyCodes() throws Exception {
        assertThat(Failures.classify(refused("451 Local error: /data/run001530/raw.dat: I/O error"))).isEqualTo(Kind.PROTOCOL);
        // the same nested the way a link wraps it
        Exception wrapped = new TransferFailure(Kind.PROTOCOL, "x", 1, new IOException("put", refused(
                "451 Local error: /data/run001530/raw.dat: I/O error")));
        assertThat(Failures.classify(wrapped)).isEqualTo(Kind.PROTOCOL);
        // no reply object: a message is a reply only when it starts with one
        assertThat(Failures.classify(new IOException("/data/x530/f: broken"))).isEqualTo(Kind.PROTOCOL);
        assertThat(Failures.classify(new IOException("530 Login incorrect."))).isEqualTo(Kind.AUTHENTICATION);
    }

    @Test
    void wordsInAPathAreNotReasons() throws Exception {
        assertThat(Failures.classify(refused("""
                500-Command failed. : globus_l_gfs_file_open failed.
                500-globus_xio: Unable to open file /data/timeout_runs/quota/credential.gss
                500-globus_xio: System error in open: Input/output error
                500 End.""".stripIndent()))).isEqualTo(Kind.PROTOCOL);
        assertThat(Failures.classify(refused("550 /data/permission_denied/f: Is a directory"))).isEqualTo(Kind.PROTOCOL);
    }

    @Test
    void theServersReasonsAsGctWordsThem() throws Exception {
        // as the Debian GCT server answered a put into a read-only directory and into a missing one
        assertThat(Failures.classify(refused("""
                500-Command failed. : globus_l_gfs_file_open failed.
                500-globus_xio: Unable to open file /tmp/gx/locked/x
                500-globus_xio: System error in open: Permission denied
                500-globus_xio: A system call failed: Permission denied
                500 End.""".stripIndent()))).isEqualTo(Kind.PERMISSION_DENIED);
        assertThat(Failures.classify(refused("""
                500-Command failed. : globus_l_gfs_file_open failed.
                500-globus_xio: Unable to open file /tmp/gx/run001530/x
                500-globus_xio: System error in open: No such file or directory
                500 End.""".stripIndent()))).isEqualTo(Kind.NO_SUCH_PATH);
        assertThat(Failures.classify(refused("550 INCORRECT_CHECKSUM"))).isEqualTo(Kind.CHECKSUM_MISMATCH);
        assertThat(Failures.classify(refused("530 Login incorrect."))).isEqualTo(Kind.AUTHENTICATION);
        assertThat(Failures.classify(refused("552 Requested file action aborted. Exceeded storage allocation."))).isEqualTo(Kind.QUOTA_EXCEEDED);
        assertThat(Failures.classify(refused("500 Command failed: write: No space left on device"))).isEqualTo(Kind.QUOTA_EXCEEDED);
    }

    @Test
    void socketTroubleWithoutAReply() {
        assertThat(Failures.classify(new IOException("open", new ConnectException("Connection refused")))).isEqualTo(Kind.CONNECTION);
        assertThat(Failures.classify(new SocketTimeoutException("Read timed out"))).isEqualTo(Kind.TIMEOUT);
    }

    /** GCT's answer to a CKSM of an algorithm it lacks: final, and not the source's fault (no read from tape again). */
    @Test
    void aServerWithoutTheChecksumAlgorithmIsUnsupportedNotAProtocolError() throws Exception {
        Exception e = refused("500 Unknown checksum algorithm requested.");
        assertThat(Failures.classify(e)).isEqualTo(Kind.UNSUPPORTED);
        assertThat(Kind.UNSUPPORTED.retryable()).isFalse();
        assertThat(Kind.UNSUPPORTED.unreachable()).isFalse();
        assertThat(Failures.message(e)).isEqualTo("Unknown checksum algorithm requested.");
        // the words in a path are no reason
        assertThat(Failures.classify(refused("451 /data/Unknown checksum algorithm requested/f: I/O error"))).isEqualTo(Kind.PROTOCOL);
    }
}
