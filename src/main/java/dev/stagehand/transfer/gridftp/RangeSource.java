package dev.stagehand.transfer.gridftp;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.function.LongConsumer;
import org.globus.ftp.Buffer;
import org.globus.ftp.DataSource;

/**
 * Reads one byte range of a local file for a (partial) put. Parallel streams call {@link #read()}
 * concurrently, hence synchronized. Offsets handed to jglobus are relative to the range start: GCT adds
 * the ESTO offset itself.
 */
final class RangeSource implements DataSource, AutoCloseable {

    private static final int BLOCK = 1 << 20;
    private final FileChannel channel;
    private final long start;
    private final long length;
    private final LongConsumer progress;
    private final java.util.zip.Adler32 sum;
    private long position;

    /** {@code checksum}: keep the Adler32 of the bytes sent (reads are in order, one at a time). */
    RangeSource(Path file, long start, long length, boolean checksum, LongConsumer progress) throws IOException {
        this.sum = checksum ? new java.util.zip.Adler32() : null;
        this.channel = FileChannel.open(file, StandardOpenOption.READ);
        this.start = start;
        this.length = length;
        this.progress = progress;
    }

    @Override
    public synchronized Buffer read() throws IOException {
        long remaining = length - position;
        if (remaining <= 0) return null;
        int n = (int) Math.min(BLOCK, remaining);
        byte[] data = new byte[n];
        ByteBuffer bb = ByteBuffer.wrap(data);
        while (bb.hasRemaining()) {
            int r = channel.read(bb, start + position + bb.position());
            if (r < 0) throw new IOException("file shrank while sending (at offset " + (start + position + bb.position()) + ")");
        }
        if (sum != null) sum.update(data, 0, n);
        Buffer buffer = new Buffer(data, n, position);
        position += n;
        progress.accept(n);
        return buffer;
    }

    /** Adler32 of everything sent, or null when not asked for or not finished. */
    synchronized Long adler32() {
        return sum != null && position == length ? sum.getValue() : null;
    }

    @Override
    public void close() throws IOException {
        channel.close();
    }

    @Override
    public long totalSize() {
        return length;
    }
}
