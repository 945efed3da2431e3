package dev.stagehand.api.security;

import dev.stagehand.api.Accounts;
import java.util.Optional;
import org.springframework.stereotype.Component;

/** {@link Accounts} for the other modules, read from {@code api_account} through {@link ApiAccounts}. */
@Component
class AccountDirectory implements Accounts {

    private final ApiAccounts accounts;

    AccountDirectory(ApiAccounts accounts) {
        this.accounts = accounts;
    }

    @Override
    public Optional<Account> find(String name) {
        return accounts.find(name).map(a -> new Account(a.name(), a.role().dbName(), a.experiments()));
    }
}
