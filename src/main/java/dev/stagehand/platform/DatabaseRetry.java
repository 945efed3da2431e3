package dev.stagehand.platform;

import java.sql.SQLException;
import java.sql.SQLTransientException;
import java.sql.SQLRecoverableException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.core.retry.RetryPolicy;
import org.springframework.core.retry.RetryTemplate;
import org.springframework.dao.DataAccessResourceFailureException;
import org.springframework.dao.PessimisticLockingFailureException;
import org.springframework.dao.RecoverableDataAccessException;
import org.springframework.dao.TransientDataAccessException;
import org.springframework.transaction.CannotCreateTransactionException;
import org.springframework.transaction.TransactionSystemException;

/**
 * Rides out a database that is restarting or briefly away: a write whose effect must not be lost (a file
 * staged, a transfer done) is retried with backoff until the database answers again; anything that is not
 * a lost connection is thrown at once. An outage is logged once when it starts and once when it ends, not
 * once per attempt. The pool (Hikari) reconnects by itself; this only waits for it.
 */
public final class DatabaseRetry {

    private static final Logger log = LoggerFactory.getLogger(DatabaseRetry.class);
    private static final AtomicBoolean down = new AtomicBoolean();
    static final Duration FIRST_BACKOFF = Duration.ofMillis(250);
    static final Duration MAX_BACKOFF = Duration.ofSeconds(5);

    private DatabaseRetry() {}

    /** Runs {@code action} until it succeeds or fails for another reason than an unreachable database. */
    public static <T> T call(String what, Supplier<T> action) {
        long backoff = FIRST_BACKOFF.toMillis();
        while (true) {
            try {
                T result = action.get();
                recovered();
                return result;
            } catch (RuntimeException e) {
                if (!isConnectionLoss(e)) throw e;
                lost(what, e);
                try {
                    Thread.sleep(backoff);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw e;
                }
                backoff = Math.min(backoff * 2, MAX_BACKOFF.toMillis());
            }
        }
    }

    /**
     * A retry of work that lost a deadlock (PostgreSQL aborts one side; the loser runs again): up to five
     * attempts, the first retry after about {@code delay}, jittered and doubling. Its {@code invoke} rethrows
     * the last deadlock when every attempt lost, and anything else at once.
     */
    public static RetryTemplate onDeadlock(Duration delay) {
        return new RetryTemplate(RetryPolicy.builder().includes(PessimisticLockingFailureException.class).maxRetries(4)
                .delay(delay).jitter(delay.dividedBy(2)).multiplier(2).build());
    }

    public static void run(String what, Runnable action) {
        call(what, () -> {
            action.run();
            return null;
        });
    }

    /**
     * For pollers that simply try again on their next round: logs the outage once (true) or the error
     * itself (false) and tells the caller whether to back off.
     */
    public static boolean noteFailure(String what, RuntimeException e) {
        if (isConnectionLoss(e)) {
            lost(what, e);
            return true;
        }
        return false;
    }

    /** A poller's round succeeded: the database is back (logged once). */
    public static void recovered() {
        if (down.get() && down.compareAndSet(true, false)) log.warn("database reachable again; carrying on");
    }

    private static void lost(String what, RuntimeException e) {
        if (down.compareAndSet(false, true)) {
            log.warn("database unreachable ({} failed: {}); retrying with backoff until it is back", what, rootMessage(e));
        }
    }

    /** Whether {@code e} is the database (or the way to it) being away, rather than a bad statement. */
    public static boolean isConnectionLoss(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof DataAccessResourceFailureException || t instanceof TransientDataAccessException
                    || t instanceof RecoverableDataAccessException || t instanceof CannotCreateTransactionException
                    || t instanceof SQLTransientException || t instanceof SQLRecoverableException
                    // a rollback or commit that failed: the connection broke under the transaction
                    || t instanceof TransactionSystemException) {
                return true;
            }
            if (t instanceof SQLException s && s.getSQLState() != null) {
                String state = s.getSQLState();
                // 08: connection exception; 57P: operator intervention (shutdown, crash); 53300: too many connections
                if (state.startsWith("08") || state.startsWith("57P") || state.equals("53300")) return true;
            }
        }
        return false;
    }

    private static String rootMessage(Throwable e) {
        Throwable t = e;
        while (t.getCause() != null && t.getCause() != t) t = t.getCause();
        return t.getClass().getSimpleName() + ": " + t.getMessage();
    }
}
