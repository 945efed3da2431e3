package dev.stagehand.replication;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.quartz.JobPersistenceException;
import org.quartz.SchedulerConfigException;
import org.quartz.spi.ClassLoadHelper;
import org.quartz.spi.SchedulerSignaler;
import org.quartz.utils.ConnectionProvider;
import org.quartz.utils.DBConnectionManager;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.scheduling.quartz.LocalDataSourceJobStore;
import org.springframework.scheduling.quartz.SchedulerFactoryBean;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * Spring's job store, reading from its own context's DataSource only ({@code org.quartz.jobStore.class} in
 * application.yml).
 *
 * <p>Spring's {@link LocalDataSourceJobStore} registers its DataSource in Quartz's JVM-wide
 * {@link DBConnectionManager} under the scheduler's name ({@code springTxDataSource.stagehand}), and Quartz looks
 * connections up by that name at every use. With two application contexts in one JVM (the integration tests'
 * cached contexts, a CLI command run in-process) every scheduler named {@code stagehand} used the pool of the
 * context started last: once that context closed, the cluster managers of the others logged "HikariDataSource
 * (stagehand) has been closed" until a newer context registered its own. Here each job store registers its
 * DataSource under a name of its own.
 */
public class OwnDataSourceJobStore extends LocalDataSourceJobStore {

    private static final AtomicLong STORES = new AtomicLong();

    @Override
    public void initialize(ClassLoadHelper loadHelper, SchedulerSignaler signaler) throws SchedulerConfigException {
        DataSource tx = SchedulerFactoryBean.getConfigTimeDataSource();
        DataSource nonTx = SchedulerFactoryBean.getConfigTimeNonTransactionalDataSource();
        super.initialize(loadHelper, signaler); // registers under the shared names, which this store then leaves unused
        String own = getInstanceName() + "#" + STORES.incrementAndGet();
        DBConnectionManager.getInstance().addConnectionProvider(TX_DATA_SOURCE_PREFIX + own, new Provider(tx, true));
        DBConnectionManager.getInstance().addConnectionProvider(NON_TX_DATA_SOURCE_PREFIX + own,
                new Provider(nonTx != null ? nonTx : tx, false));
        setDataSource(TX_DATA_SOURCE_PREFIX + own);
        setNonManagedTXDataSource(NON_TX_DATA_SOURCE_PREFIX + own);
    }

    /**
     * Outside a Spring transaction a store operation runs as Quartz's own {@code JobStoreTX} runs it: on a
     * connection of its own, committed, Quartz's lock row held throughout. Spring's store ran it on an
     * autocommitting connection, so the lock its {@code SELECT ... FOR UPDATE} takes was released by that very
     * statement, and an operator's pause could interleave with a firing on another thread or node (seen once: a
     * trigger BLOCKED just after its pause, the firing having stored its state over the pause's). Running the
     * operator's calls in a Spring transaction instead held the lock, but Quartz wakes its scheduler thread
     * before that transaction commits, so a resume or "run now" waited for the thread's next idle look (up to
     * 30 s). Inside a transaction (creating or deleting a rule) an operation still takes part in it.
     */
    @Override
    @SuppressWarnings({"rawtypes", "unchecked"}) // JobStoreCMT overrides it with raw types
    protected Object executeInLock(String lockName, TransactionCallback txCallback) throws JobPersistenceException {
        if (!TransactionSynchronizationManager.isActualTransactionActive()) return executeInNonManagedTXLock(lockName, txCallback, null);
        return super.executeInLock(lockName, txCallback);
    }

    /** As Spring's two providers: the transactional one takes part in a Spring transaction on the thread. */
    private record Provider(DataSource dataSource, boolean transactional) implements ConnectionProvider {
        @Override
        public Connection getConnection() throws SQLException {
            return transactional ? DataSourceUtils.doGetConnection(dataSource) : dataSource.getConnection();
        }

        @Override
        public void shutdown() {} // the DataSource is the context's, closed with it

        @Override
        public void initialize() {}
    }
}
