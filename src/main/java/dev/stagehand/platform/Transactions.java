package dev.stagehand.platform;

import java.util.Objects;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/** Transactions on a {@link JdbcTemplate} of classes built by hand, not by Spring (the recall side, the transfer queue). */
public final class Transactions {

    private Transactions() {}

    public static TransactionTemplate on(JdbcTemplate jdbc) {
        return new TransactionTemplate(new DataSourceTransactionManager(Objects.requireNonNull(jdbc.getDataSource())));
    }
}
