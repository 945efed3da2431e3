package dev.stagehand.transfer.gridftp;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.function.LongConsumer;
import org.globus.ftp.Buffer;
import org.globus.ftp.DataSource;

/**
 * Reads one byte range of a local file for a (partial) put. Parallel streams call {@link #read()}
 * concurrently, hence synchronized. Offsets handed to jglobus are relative to the range start: GCT adds
 * the ESTO offset itself.
 */
final class RangeSource implements DataSource, AutoCloseable {

    // blocks small enough to stay in the CPU cache through read, sum and socket copy
    static final int BLOCK = Integer.getInteger("stagehand.gridftp.block", 256 << 10);
    /** Blocks of finished puts, reused instead of allocating (and zeroing) a new array per block. */
    private static final java.util.concurrent.ArrayBlockingQueue<byte[]> POOL = new java.util.concurrent.ArrayBlockingQueue<>(256);
    private final FileChannel channel;
    private final long start;
    private final long length;
    private final LongConsumer progress;
    private final java.util.zip.Adler32 sum;
    private final LocalReads reads;
    /** The block each jglobus stream thread holds: written to the socket once that thread asks for the next. */
    private final java.util.Map<Thread, byte[]> held = new java.util.HashMap<>();
    private final java.util.List<byte[]> spent = new java.util.ArrayList<>();
    private volatile long position; // written under this, read without it by finished()

    /**
     * {@code checksum}: keep the Adler32 of the bytes sent (reads are in order, one at a time); {@code reads}:
     * the attempt's, where each read of the file is recorded while under way.
     */
    RangeSource(LocalReadException.Opener opener, Path file, long start, long length, boolean checksum, LongConsumer progress,
                LocalReads reads) throws IOException {
        this.sum = checksum ? new java.util.zip.Adler32() : null;
        this.reads = reads;
        this.channel = LocalReadException.open(opener, file);
        this.start = start;
        this.length = length;
        this.progress = progress;
    }

    /** Files at most this big are read once, into memory, for their sum and the put alike. */
    static final long PRELOAD_MAX = 16L << 20;
    private java.util.ArrayDeque<byte[]> preloaded;

    /**
     * Reads the whole range now and returns its Adler32; {@link #read()} then serves the blocks from memory,
     * so a small file is read once for both its SCKS sum and its data.
     */
    synchronized long preload() throws IOException {
        java.util.zip.Adler32 whole = new java.util.zip.Adler32();
        java.util.ArrayDeque<byte[]> blocks = new java.util.ArrayDeque<>();
        // apart from the attempt's thread, whole (one thread per file, not per block): a read that hangs is left
        reads.apart(() -> {
            for (long at = 0; at < length; ) {
                int n = (int) Math.min(BLOCK, length - at);
                byte[] data = POOL.poll();
                if (data == null) data = new byte[BLOCK];
                fill(data, n, at);
                whole.update(data, 0, n);
                blocks.add(data);
                at += n;
            }
            return null;
        });
        preloaded = blocks;
        return whole.getValue();
    }

    /**
     * The first read of the file that failed ({@link LocalReadException}), kept: jglobus passes a data
     * source's failure on as a reply of its own (text), and the put's failure would otherwise be the
     * destination's.
     */
    private volatile LocalReadException failure;

    LocalReadException failure() {
        return failure;
    }

    private void fill(byte[] data, int n, long at) throws IOException {
        ByteBuffer bb = ByteBuffer.wrap(data, 0, n);
        try {
            while (bb.hasRemaining()) {
                int r = reads.read(channel, bb, start + at + bb.position());
                if (r < 0) throw LocalReadException.shrank("sending", start + at + bb.position());
            }
        } catch (IOException e) {
            IOException local = LocalReadException.of(e);
            if (local instanceof LocalReadException l && failure == null) failure = l;
            throw local;
        }
    }

    @Override
    public synchronized Buffer read() throws IOException {
        long remaining = length - position;
        if (remaining <= 0) return null;
        if (preloaded != null) {
            int n = (int) Math.min(BLOCK, remaining);
            byte[] data = preloaded.poll();
            Buffer buffer = new Buffer(data, n, position);
            byte[] previous = held.put(Thread.currentThread(), data);
            if (previous != null) spent.add(previous);
            position += n;
            progress.accept(n);
            return buffer;
        }
        int n = (int) Math.min(BLOCK, remaining);
        // jglobus's stream thread writes a block before it reads the next: the thread's last block is free again
        byte[] data = held.remove(Thread.currentThread());
        if (data == null) data = POOL.poll();
        if (data == null) data = new byte[BLOCK];
        fill(data, n, position);
        if (sum != null) sum.update(data, 0, n);
        Buffer buffer = new Buffer(data, n, position);
        held.put(Thread.currentThread(), data);
        position += n;
        progress.accept(n);
        return buffer;
    }

    /**
     * After a successful put only (every stream thread has finished writing): hands the blocks back for the
     * next file. After a failure they are left to the collector, as a stream thread may still be writing one.
     */
    synchronized void recycle() {
        for (byte[] b : held.values()) POOL.offer(b);
        for (byte[] b : spent) POOL.offer(b);
        held.clear();
        spent.clear();
    }

    /**
     * Whether every byte of the range has been read. Not waiting for a read under way, which may hang: a put
     * jglobus ended early (it takes the watchdog's interrupt for the transfer's end, and returns) is not done.
     */
    boolean finished() {
        return position == length;
    }

    /** Adler32 of everything sent, or null when not asked for or not finished. */
    synchronized Long adler32() {
        return sum != null && position == length ? sum.getValue() : null;
    }

    @Override
    public void close() throws IOException {
        reads.close(channel); // not waiting for a read that hangs
    }

    @Override
    public long totalSize() {
        return length;
    }
}
