package dev.stagehand.transfer.gridftp;

import static org.assertj.core.api.Assertions.assertThat;

import dev.stagehand.transfer.FileCopy;
import java.net.URI;
import java.nio.file.Path;
import org.globus.ftp.GridFTPRestartMarker;
import org.junit.jupiter.api.Test;

/** What a retried piece resumes from: only what the server wrote since the piece was last started from byte 0. */
class RestartMarkersTest {

    static final Endpoint.HostPort A = new Endpoint.HostPort("a", 2811);
    static final Endpoint.HostPort B = new Endpoint.HostPort("b", 2811);

    static Job.Piece piece(long length) {
        FileCopy copy = new FileCopy("f", URI.create("file:/cache/f"), URI.create("ftp://a:2811,b:2811/d/f"), length, null);
        Job job = new Job(copy, Endpoint.parse(copy.destination()), null, Path.of("/cache/f"));
        Job.Piece p = new Job.Piece(job, 0, length);
        job.pieces(java.util.List.of(p));
        return p;
    }

    @Test
    void aRetryResumesAfterWhatTheMarkersSay() {
        Job.Piece p = piece(200_000_000);
        assertThat(p.resumeAt(A, false)).isZero();
        p.written(new GridFTPRestartMarker("Range Marker 0-100000000"), 0, A);
        assertThat(p.resumeAt(A, false)).isEqualTo(100_000_000);
    }

    @Test
    void anAttemptFromByteZeroMakesEarlierMarkersWorthless() {
        Job.Piece p = piece(200_000_000);
        assertThat(p.resumeAt(A, false)).isZero(); // attempt 1 on host A: STOR from byte 0
        p.written(new GridFTPRestartMarker("Range Marker 0-100000000"), 0, A);
        // attempt 2 goes to host B (unverified: A's markers are not trusted there): STOR from 0 truncates the
        // file, writes 10 MB and breaks
        assertThat(p.resumeAt(B, false)).isZero();
        p.written(new GridFTPRestartMarker("Range Marker 0-10000000"), 0, B);
        // attempt 3 on B must resume at 10 MB: the file holds nothing after that (100 MB would leave a hole)
        assertThat(p.resumeAt(B, false)).isEqualTo(10_000_000);
    }
}
