package dev.stagehand.transfer.gridftp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.stagehand.transfer.CopyBatch;
import dev.stagehand.transfer.FileCopy;
import dev.stagehand.transfer.MoverSettings;
import dev.stagehand.transfer.TransferFailure;
import java.net.URI;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** What the mover does with a batch before any connection: a file it cannot prepare fails alone. */
class GridFtpMoverTest {

    @Test
    void aFileThatCannotBePreparedFailsAloneAsABadRequest() throws Exception {
        FileCopy remoteHost = new FileCopy("1", URI.create("file://otherhost/cache/f"), URI.create("ftp://127.0.0.1:9/d/f1"), 10, null);
        FileCopy badPort = new FileCopy("2", URI.create("ftp://src:port/d/f"), URI.create("ftp://127.0.0.1:9/d/f2"), 10, null);
        try (GridFtpMover mover = new GridFtpMover(MoverSettings.defaults(), null)) {
            CopyBatch batch = mover.submit(List.of(remoteHost, badPort));
            for (FileCopy c : List.of(remoteHost, badPort)) {
                assertThatThrownBy(() -> batch.result(c).get(10, TimeUnit.SECONDS))
                        .isInstanceOf(ExecutionException.class)
                        .cause().isInstanceOfSatisfying(TransferFailure.class, f -> {
                            assertThat(f.kind()).isEqualTo(TransferFailure.Kind.BAD_REQUEST);
                            assertThat(f.getMessage()).contains(c.source().toString());
                        });
            }
        }
    }

    @Test
    void aDestinationWithABadPortOrAnEmptyHostIsRefusedAsABadRequest() throws Exception {
        // port 0 was refused by the kernel (CONNECTION: waited out as an outage for a day), 70000 failed as
        // PROTOCOL after every retry, and an empty host in a host list ("" resolves to this machine) was tried
        List<FileCopy> bad = List.of(
                new FileCopy("1", URI.create("file:///etc/hostname"), URI.create("ftp://127.0.0.1:70000/d/f1"), 10, null),
                new FileCopy("2", URI.create("file:///etc/hostname"), URI.create("ftp://127.0.0.1:0/d/f2"), 10, null),
                new FileCopy("3", URI.create("file:///etc/hostname"), URI.create("ftp://,127.0.0.1:9/d/f3"), 10, null),
                new FileCopy("4", URI.create("ftp://127.0.0.1:99999/d/f"), URI.create("ftp://127.0.0.1:9/d/f4"), 10, null));
        try (GridFtpMover mover = new GridFtpMover(MoverSettings.defaults(), null)) {
            CopyBatch batch = mover.submit(bad);
            for (FileCopy c : bad) {
                assertThatThrownBy(() -> batch.result(c).get(2, TimeUnit.SECONDS))
                        .as(c.toString())
                        .isInstanceOf(ExecutionException.class)
                        .cause().isInstanceOfSatisfying(TransferFailure.class,
                                f -> assertThat(f.kind()).isEqualTo(TransferFailure.Kind.BAD_REQUEST));
            }
        }
    }

    @Test
    void aPathWithALineBreakIsRefusedBeforeItReachesTheControlChannel() throws Exception {
        // the URL's path is decoded: %0D%0A in it ended the STOR (or DELE) line, and the rest was sent as a
        // command of its own, with the mover's credentials (jglobus refuses only a trailing line break)
        java.nio.file.Path local = java.nio.file.Files.createTempFile("stagehand", ".dat");
        java.nio.file.Files.write(local, new byte[10]);
        MoverSettings once = MoverSettings.defaults().withRetry(java.time.Duration.ofSeconds(2), 1,
                java.time.Duration.ofMillis(50), java.time.Duration.ofSeconds(1));
        try (FakeGridFtpServer server = new FakeGridFtpServer(); GridFtpMover mover = new GridFtpMover(once, null)) {
            String base = "ftp://127.0.0.1:" + server.port();
            FileCopy c = new FileCopy("1", local.toUri(), URI.create(base + "/d/x%0D%0ADELE%20/d/victim%0D%0A/f"), 10, null);
            Throwable put = batchFailure(mover.submit(List.of(c)), c);
            var deleted = mover.delete(List.of(URI.create(base + "/d/y%0D%0ADELE%20/d/victim2")));
            assertThat(server.commands).noneMatch(line -> line.toUpperCase(java.util.Locale.ROOT).startsWith("DELE /D/VICTIM"));
            assertThat(put).isInstanceOfSatisfying(TransferFailure.class,
                    f -> assertThat(f.kind()).isEqualTo(TransferFailure.Kind.BAD_REQUEST));
            assertThat(deleted.values()).singleElement().satisfies(
                    f -> assertThat(f.kind()).isEqualTo(TransferFailure.Kind.BAD_REQUEST));
        } finally {
            java.nio.file.Files.delete(local);
        }
    }

    @Test
    void aLocalFileOfAnotherSizeThanExpectedIsRefusedNotSentCutShort() throws Exception {
        // only the expected size was sent: a longer file arrived cut short and, with no Adler32 given (the sum is
        // then of what was sent), verified and was reported done
        java.nio.file.Path local = java.nio.file.Files.createTempFile("stagehand", ".dat");
        java.nio.file.Files.write(local, new byte[20]);
        try (FakeGridFtpServer server = new FakeGridFtpServer(); GridFtpMover mover = new GridFtpMover(MoverSettings.defaults(), null)) {
            FileCopy c = new FileCopy("1", local.toUri(), URI.create("ftp://127.0.0.1:" + server.port() + "/d/f"), 10, null);
            Throwable put = batchFailure(mover.submit(List.of(c)), c);
            assertThat(put).isInstanceOfSatisfying(TransferFailure.class, f -> {
                assertThat(f.kind()).isEqualTo(TransferFailure.Kind.BAD_REQUEST);
                assertThat(f.getMessage()).contains("is 20 bytes, expected 10");
            });
            assertThat(server.commands).noneMatch(line -> line.toUpperCase(java.util.Locale.ROOT).startsWith("STOR"));
        } finally {
            java.nio.file.Files.delete(local);
        }
    }

    /**
     * The local source goes bad after the batch was submitted (gone, cut short, a directory in its place), found
     * as the attempt begins: the copy fails at once as a bad request naming the local file, not the destination
     * host, and the destination is left exactly as it was: not taken as the transfer's (its writing hook, which
     * makes a failed transfer's file there deleted as its partial one), no STOR, no DELE. Before, this showed
     * only when the put opened the file, after the look and the hook (and a split file's DELE).
     */
    @Test
    void aLocalSourceThatWentBadIsFoundBeforeTheDestinationIsTouched(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
            throws Exception {
        var existing = java.util.Map.of("550 /d/f: No such file or directory.", FileCopy.Existing.KEEP, // nothing there
                "213 10", FileCopy.Existing.REPLACE); // another file, to be overwritten
        for (String bad : List.of("gone", "short", "a directory")) {
            for (var there : existing.entrySet()) {
                for (boolean split : new boolean[] {false, true}) {
                    String way = bad + ", " + there.getValue() + (split ? ", split" : "");
                    java.nio.file.Path local = dir.resolve("f" + way.hashCode());
                    int size = split ? 4 << 20 : 4096;
                    java.nio.file.Files.write(local, new byte[size]);
                    MoverSettings settings = MoverSettings.defaults().withStreams(1, 2, false)
                            .withRetry(java.time.Duration.ofSeconds(5), 2, java.time.Duration.ofMillis(20), java.time.Duration.ofSeconds(5))
                            .withChunking(split ? 1 << 20 : 64L << 20, split ? 1 << 20 : 1L << 40, 0);
                    var wrote = new java.util.concurrent.atomic.AtomicBoolean();
                    // the file goes bad as the first attempt opens it for its check: after the batch was
                    // submitted (which looked at it), before the attempt connects to the destination
                    LocalReadException.Opener opener = file -> {
                        synchronized (wrote) { // once
                            if (file.equals(local) && java.nio.file.Files.isRegularFile(local)
                                    && java.nio.file.Files.size(local) == size) {
                                if (bad.equals("short")) {
                                    try (var ch = java.nio.channels.FileChannel.open(local, java.nio.file.StandardOpenOption.WRITE)) {
                                        ch.truncate((split ? 1 << 20 : size) / 2);
                                    }
                                } else {
                                    java.nio.file.Files.delete(local);
                                    if (bad.equals("a directory")) java.nio.file.Files.createDirectory(local);
                                }
                            }
                        }
                        return java.nio.channels.FileChannel.open(file, java.nio.file.StandardOpenOption.READ);
                    };
                    try (FakeGridFtpServer server = new FakeGridFtpServer();
                         GridFtpMover mover = new GridFtpMover(settings, null, opener, false)) {
                        server.sizeReply = there.getKey();
                        FileCopy c = new FileCopy("1", local.toUri(), URI.create("ftp://127.0.0.1:" + server.port() + "/d/f"), size,
                                null, there.getValue(), () -> wrote.set(true));
                        Throwable put = batchFailure(mover.submit(List.of(c)), c);
                        assertThat(put).as(way).isInstanceOfSatisfying(TransferFailure.class, f -> {
                            assertThat(f.kind()).as(way).isEqualTo(TransferFailure.Kind.BAD_REQUEST);
                            assertThat(f.attempts()).as(way).isEqualTo(1);
                            assertThat(f.getMessage()).as(way).contains("local file " + local)
                                    .doesNotContain("(127.0.0.1:" + server.port() + ")"); // not put on the destination host
                        });
                        assertThat(wrote).as(way + ": the destination taken as the transfer's").isFalse();
                        assertThat(server.commands).as(way).noneMatch(line -> line.toUpperCase(java.util.Locale.ROOT)
                                .matches("(SIZE|STOR|ESTO|DELE|SCKS) .*"));
                        // checked before a connection is taken: no login either (before, the check came after it)
                        assertThat(server.count("USER")).as(way + ": logins").isZero();
                    }
                }
            }
        }
    }

    /**
     * The local source is cut short once the attempt has begun (after the look at the destination, before and
     * while its bytes are sent: a cache copy truncated, a read failing), through Stagehand's own MODE E sender
     * and through jglobus's (GSI with DCAU), a whole file and one sent as ranges: the copy fails at once as a
     * bad request naming the local file, not the destination host, which stays in rotation. Before, the read's
     * end of file was a retried PROTOCOL failure on the destination host (through jglobus, its data channel
     * thread's error came back as a reply of its own, text only).
     */
    @Test
    void aLocalSourceThatShrinksWhileSentIsTheSourcesFailureNotTheDestinationHosts(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
            throws Exception {
        for (boolean jglobus : new boolean[] {false, true}) {
            for (boolean split : new boolean[] {false, true}) {
                String way = (jglobus ? "jglobus" : "direct") + (split ? ", split" : "");
                java.nio.file.Path local = dir.resolve("f" + way.hashCode());
                int size = split ? 4 << 20 : 64 << 10;
                java.nio.file.Files.write(local, new byte[size]);
                // one connection: a split file's first range is being sent when the file is cut short (a later
                // range's attempt would find it short before the destination is touched)
                MoverSettings settings = MoverSettings.defaults().withStreams(1, 1, false)
                        .withRetry(java.time.Duration.ofSeconds(5), 3, java.time.Duration.ofMillis(20), java.time.Duration.ofSeconds(5))
                        .withChunking(split ? 1 << 20 : 64L << 20, split ? 1 << 20 : 1L << 40, 0);
                try (FakeGridFtpServer d1 = new FakeGridFtpServer(); FakeGridFtpServer d2 = new FakeGridFtpServer();
                     GridFtpMover mover = new GridFtpMover(settings, null, LocalReadException.READ, jglobus)) {
                    for (FakeGridFtpServer d : List.of(d1, d2)) {
                        d.sizeReply = "550 /d/f: No such file or directory."; // nothing there
                        d.heard = line -> {
                            // the look at the destination, after the source was checked: cut short from then on
                            if (!line.toUpperCase(java.util.Locale.ROOT).startsWith("SIZE")) return;
                            try (var ch = java.nio.channels.FileChannel.open(local, java.nio.file.StandardOpenOption.WRITE)) {
                                ch.truncate((split ? 1 << 20 : size) / 2);
                            } catch (java.io.IOException e) {
                                throw new java.io.UncheckedIOException(e);
                            }
                        };
                    }
                    // the catalog's Adler32 given: the file is read only as it is sent
                    FileCopy c = new FileCopy("1", local.toUri(), URI.create("ftp://127.0.0.1:" + d1.port() + ",127.0.0.1:"
                            + d2.port() + "/d/f"), size, 1L, FileCopy.Existing.KEEP, () -> {});
                    Throwable put = batchFailure(mover.submit(List.of(c)), c);
                    assertThat(put).as(way).isInstanceOfSatisfying(TransferFailure.class, f -> {
                        assertThat(f.kind()).as(way).isEqualTo(TransferFailure.Kind.BAD_REQUEST);
                        assertThat(f.attempts()).as(way).isEqualTo(1);
                        assertThat(f.getMessage()).as(way).contains("local file " + local, "shrank")
                                .doesNotContain("(127.0.0.1:"); // not put on a destination host
                    });
                    assertThat(mover.links()).as(way).singleElement().satisfies(l -> assertThat(l.hostsOut()).isEmpty());
                    assertThat(d1.count("SIZE") + d2.count("SIZE")).as(way).isEqualTo(1);
                }
            }
        }
    }

    private static Throwable batchFailure(CopyBatch batch, FileCopy c) throws Exception {
        try {
            batch.result(c).get(20, TimeUnit.SECONDS);
            return null;
        } catch (ExecutionException e) {
            return e.getCause();
        }
    }

    @Test
    void aSplitFileWhoseRangesWereRetriedIsStillResentWholeAfterAChecksumMismatch() throws Exception {
        // 4 MiB as 4 ranges of 1 MiB; two range retries, then every check of the written file mismatches: the
        // whole file is to be sent max-attempts (3) times, as for a file sent in one piece
        java.nio.file.Path local = java.nio.file.Files.createTempFile("stagehand", ".dat");
        java.nio.file.Files.write(local, new byte[4 << 20]);
        MoverSettings s = MoverSettings.defaults().withStreams(1, 4, false)
                .withRetry(java.time.Duration.ofSeconds(5), 3, java.time.Duration.ofMillis(20), java.time.Duration.ofSeconds(1))
                .withChunking(64L << 20, 1L << 20, 0);
        try (FakeGridFtpServer server = new FakeGridFtpServer(); GridFtpMover mover = new GridFtpMover(s, null)) {
            server.refuseEsto.set(2);
            server.cksm = "deadbeef";
            FileCopy c = new FileCopy("1", local.toUri(), URI.create("ftp://127.0.0.1:" + server.port() + "/d/big"), 4 << 20, null);
            Throwable f = batchFailure(mover.submit(List.of(c)), c);
            assertThat(f).isInstanceOfSatisfying(TransferFailure.class,
                    t -> assertThat(t.kind()).isEqualTo(TransferFailure.Kind.CHECKSUM_MISMATCH));
            // 2 refused + 4 ranges x 3 whole sends (before: the mismatch after 2 range retries was final at once)
            assertThat(server.count("ESTO")).isEqualTo(2 + 4 * 3);
        } finally {
            java.nio.file.Files.delete(local);
        }
    }

    @Test
    void aLocalSourceWhoseBytesAreOffTheCatalogsSumFailsAtOnceWhileADestinationMismatchIsSentAgain() throws Exception {
        // 4 MiB as 4 ranges of 1 MiB, the catalog's sum known (ranges not read while sent): every CKSM of the
        // written file mismatches. A source that itself reads off the catalog's sum (a cached copy rotted on
        // disk) would be sent max-attempts (3) times over to no end; a sound source is sent again
        java.nio.file.Path local = java.nio.file.Files.createTempFile("stagehand", ".dat");
        byte[] bytes = new byte[4 << 20];
        new java.util.Random(5).nextBytes(bytes);
        java.nio.file.Files.write(local, bytes);
        long sound = Link.adler32(local);
        MoverSettings s = MoverSettings.defaults().withStreams(1, 4, false)
                .withRetry(java.time.Duration.ofSeconds(5), 3, java.time.Duration.ofMillis(20), java.time.Duration.ofSeconds(1))
                .withChunking(64L << 20, 1L << 20, 0);
        try (FakeGridFtpServer server = new FakeGridFtpServer(); GridFtpMover mover = new GridFtpMover(s, null)) {
            server.cksm = "deadbeef";
            FileCopy rotted = new FileCopy("1", local.toUri(), URI.create("ftp://127.0.0.1:" + server.port() + "/d/rotted"), 4 << 20, sound ^ 0x40);
            Throwable f = batchFailure(mover.submit(List.of(rotted)), rotted);
            assertThat(f).isInstanceOfSatisfying(TransferFailure.class, t -> {
                assertThat(t.kind().name()).isEqualTo("SOURCE_CHECKSUM_MISMATCH");
                assertThat(t.retryable()).isFalse();
                assertThat(t.attempts()).isEqualTo(1);
                assertThat(t.getMessage()).contains("local source " + local + " reads as ADLER32 " + String.format("%08x", sound));
            });
            assertThat(server.count("ESTO")).as("sent once").isEqualTo(4);

            FileCopy sent = new FileCopy("2", local.toUri(), URI.create("ftp://127.0.0.1:" + server.port() + "/d/sent"), 4 << 20, sound);
            Throwable d = batchFailure(mover.submit(List.of(sent)), sent);
            assertThat(d).isInstanceOfSatisfying(TransferFailure.class, t -> {
                assertThat(t.kind()).isEqualTo(TransferFailure.Kind.CHECKSUM_MISMATCH);
                assertThat(t.attempts()).isEqualTo(3);
            });
            assertThat(server.count("ESTO")).as("the destination's mismatch: sent 3 times").isEqualTo(4 + 4 * 3);
        } finally {
            java.nio.file.Files.delete(local);
        }
    }
}
