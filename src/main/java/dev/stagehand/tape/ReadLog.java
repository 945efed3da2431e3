package dev.stagehand.tape;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Appends one line per segment read (or failed) to a file, for fault-injection tests and audits that
 * count how often each file came off tape across restarts: written with one {@code write} per line in
 * append mode, so a process killed at any moment leaves whole lines only (the kernel keeps what was
 * written). Line: {@code epoch-ms pid ok|failed:KIND volume file-id file-name}. Gap reads are not logged.
 */
final class ReadLog implements LibraryEvents, AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(ReadLog.class);

    private final FileChannel out;
    private final long pid = ProcessHandle.current().pid();

    ReadLog(Path file) {
        try {
            if (file.getParent() != null) Files.createDirectories(file.getParent());
            out = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open the tape read log " + file, e);
        }
    }

    @Override
    public void segmentRead(String drive, ReadResult result) {
        SegmentRead s = result.segment();
        if (s.fileId() >= 0) write(result.finishedAt(), "ok", s);
    }

    @Override
    public void segmentFailed(String drive, SegmentRead segment, TapeFailure failure, Instant at) {
        if (segment.fileId() >= 0) write(at, "failed:" + failure.kind(), segment);
    }

    private void write(Instant at, String outcome, SegmentRead s) {
        String line = System.currentTimeMillis() + " " + pid + " " + outcome + " " + s.volume() + " " + s.fileId() + " "
                + s.fileName() + "\n";
        try {
            ByteBuffer b = ByteBuffer.wrap(line.getBytes(StandardCharsets.UTF_8));
            synchronized (this) {
                while (b.hasRemaining()) out.write(b);
            }
        } catch (IOException e) {
            log.warn("tape read log: {}", e.toString());
        }
    }

    @Override
    public void close() throws IOException {
        out.close();
    }
}
