package dev.stagehand.recall.service;

import java.util.Objects;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/** Transactions on the recall side's own {@link JdbcTemplate} (its classes are built by hand, not by Spring). */
final class Transactions {

    private Transactions() {}

    static TransactionTemplate on(JdbcTemplate jdbc) {
        return new TransactionTemplate(new DataSourceTransactionManager(Objects.requireNonNull(jdbc.getDataSource())));
    }
}
