package dev.stagehand.transfer;

import dev.stagehand.transfer.gridftp.GridFtpMover;

/** Factory for the mover implementations (the implementation classes are internal). */
public final class Movers {

    private Movers() {}

    /** The jglobus GridFTP mover for {@code ftp://} and {@code gsiftp://} destinations. */
    public static Mover gridFtp(MoverSettings settings, TransferListener listener) {
        return new GridFtpMover(settings, listener);
    }
}
