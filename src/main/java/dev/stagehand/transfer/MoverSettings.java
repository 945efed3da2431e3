package dev.stagehand.transfer;

import java.time.Duration;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * How a mover moves: bound from {@code stagehand.transfer.mover.*} (documented in config/application.yml),
 * or built by {@code stagehand copy} from its options.
 *
 * @param parallelism        parallel TCP streams (MODE E data channels) per connection; a file of 16 MiB or more is
 *                           sent over all of them, a smaller one over one (only the channels in use are open; they
 *                           stay open from file to file)
 * @param tcpBufferBytes     TCP buffer size for data channels (SBUF); 0 keeps the system default
 * @param concurrency        concurrent transfers per link to start with
 * @param minConcurrency     lower bound of the adaptive concurrency
 * @param maxConcurrency     upper bound of the adaptive concurrency
 * @param adaptive           adjust concurrency per link from throughput and success rate (FTS3-like)
 * @param optimizerInterval  how often the adaptive concurrency is reconsidered
 * @param topUpBytes         each connection claims queued files until this many bytes are its own (BDM)
 * @param splitBytes         files at least this big are sent as byte ranges over several connections; 0 never
 * @param stallTimeout       no bytes moved for this long aborts the attempt (connection closed, retried from the
 *                           server's last restart marker); also the time limit for connecting, the banner, login
 *                           and the set-up commands of a new connection
 * @param maxAttempts        attempts per file before a retryable failure becomes final
 * @param backoff            delay before the first retry; doubles per attempt, capped at 60 s
 * @param hostQuarantine     how long a host that refused or stalled stays out of rotation
 * @param verifyChecksum     check every file with the server's Adler32: whole files by the server before it answers
 *                           (SCKS before STOR), byte ranges by CKSM after they are written
 * @param dataChannelAuth    gsiftp:// data channel authentication: SELF (DCAU A, the default) or NONE
 * @param proxy              X.509 proxy file for gsiftp://; empty uses $X509_USER_PROXY or /tmp/x509up_u&lt;uid&gt;;
 *                           read again when the file changes or the proxy nears its end
 * @param certDir            trusted CA directory for gsiftp://; empty uses $X509_CERT_DIR or /etc/grid-security/certificates
 * @param serverVerifyMaxBytes whole files up to this size are verified by the server before it answers the put
 *                           (SCKS: no extra command per file); bigger ones by CKSM from a checker connection
 *                           while the sending connection moves on; 0: always CKSM
 */
public record MoverSettings(
        @DefaultValue("4") int parallelism,
        @DefaultValue("0") int tcpBufferBytes,
        @DefaultValue("4") int concurrency,
        @DefaultValue("1") int minConcurrency,
        @DefaultValue("16") int maxConcurrency,
        @DefaultValue("true") boolean adaptive,
        @DefaultValue("10s") Duration optimizerInterval,
        @DefaultValue("67108864") long topUpBytes,
        @DefaultValue("536870912") long splitBytes,
        @DefaultValue("30s") Duration stallTimeout,
        @DefaultValue("5") int maxAttempts,
        @DefaultValue("1s") Duration backoff,
        @DefaultValue("60s") Duration hostQuarantine,
        @DefaultValue("true") boolean verifyChecksum,
        @DefaultValue("SELF") String dataChannelAuth,
        @DefaultValue("") String proxy,
        @DefaultValue("") String certDir,
        @DefaultValue("8388608") long serverVerifyMaxBytes) {

    public MoverSettings {
        if (parallelism < 1 || concurrency < 1 || minConcurrency < 1 || maxConcurrency < minConcurrency)
            throw new IllegalArgumentException("parallelism and concurrencies must be >= 1 and min <= max");
        if (maxAttempts < 1) throw new IllegalArgumentException("maxAttempts must be >= 1");
        // zero would mark every attempt stalled (waited out as an outage), or fail every file at the link's start
        if (!stallTimeout.isPositive()) throw new IllegalArgumentException("stallTimeout must be > 0");
        if (!optimizerInterval.isPositive()) throw new IllegalArgumentException("optimizerInterval must be > 0");
        if (backoff.isNegative() || hostQuarantine.isNegative())
            throw new IllegalArgumentException("backoff and hostQuarantine must not be negative");
        concurrency = Math.max(minConcurrency, Math.min(maxConcurrency, concurrency));
        proxy = proxy == null ? "" : proxy;
        certDir = certDir == null ? "" : certDir;
        dataChannelAuth = dataChannelAuth == null ? "SELF" : dataChannelAuth.toUpperCase(java.util.Locale.ROOT);
        if (!dataChannelAuth.equals("SELF") && !dataChannelAuth.equals("NONE")) // anything else meant SELF
            throw new IllegalArgumentException("dataChannelAuth must be SELF or NONE, not " + dataChannelAuth);
    }

    /** The documented defaults. */
    public static MoverSettings defaults() {
        return new MoverSettings(4, 0, 4, 1, 16, true, Duration.ofSeconds(10), 64L << 20, 512L << 20,
                Duration.ofSeconds(30), 5, Duration.ofSeconds(1), Duration.ofSeconds(60), true, "SELF", "", "", 8L << 20);
    }

    public MoverSettings withStreams(int parallelism, int concurrency, boolean adaptive) {
        return new MoverSettings(parallelism, tcpBufferBytes, concurrency,
                adaptive ? minConcurrency : concurrency, adaptive ? Math.max(maxConcurrency, concurrency) : concurrency,
                adaptive, optimizerInterval, topUpBytes, splitBytes, stallTimeout, maxAttempts, backoff,
                hostQuarantine, verifyChecksum, dataChannelAuth, proxy, certDir, serverVerifyMaxBytes);
    }

    public MoverSettings withRetry(Duration stallTimeout, int maxAttempts, Duration backoff, Duration hostQuarantine) {
        return new MoverSettings(parallelism, tcpBufferBytes, concurrency, minConcurrency, maxConcurrency, adaptive,
                optimizerInterval, topUpBytes, splitBytes, stallTimeout, maxAttempts, backoff, hostQuarantine,
                verifyChecksum, dataChannelAuth, proxy, certDir, serverVerifyMaxBytes);
    }

    public MoverSettings withChunking(long topUpBytes, long splitBytes, int tcpBufferBytes) {
        return new MoverSettings(parallelism, tcpBufferBytes, concurrency, minConcurrency, maxConcurrency, adaptive,
                optimizerInterval, topUpBytes, splitBytes, stallTimeout, maxAttempts, backoff, hostQuarantine,
                verifyChecksum, dataChannelAuth, proxy, certDir, serverVerifyMaxBytes);
    }

    public MoverSettings withSecurity(boolean verifyChecksum, String dataChannelAuth, String proxy, String certDir) {
        return new MoverSettings(parallelism, tcpBufferBytes, concurrency, minConcurrency, maxConcurrency, adaptive,
                optimizerInterval, topUpBytes, splitBytes, stallTimeout, maxAttempts, backoff, hostQuarantine,
                verifyChecksum, dataChannelAuth, proxy, certDir, serverVerifyMaxBytes);
    }

    public MoverSettings withServerVerifyMaxBytes(long serverVerifyMaxBytes) {
        return new MoverSettings(parallelism, tcpBufferBytes, concurrency, minConcurrency, maxConcurrency, adaptive,
                optimizerInterval, topUpBytes, splitBytes, stallTimeout, maxAttempts, backoff, hostQuarantine,
                verifyChecksum, dataChannelAuth, proxy, certDir, serverVerifyMaxBytes);
    }

    public MoverSettings withAdaptive(int min, int max, Duration interval) {
        return new MoverSettings(parallelism, tcpBufferBytes, concurrency, min, max, true, interval, topUpBytes,
                splitBytes, stallTimeout, maxAttempts, backoff, hostQuarantine, verifyChecksum, dataChannelAuth, proxy,
                certDir, serverVerifyMaxBytes);
    }
}
