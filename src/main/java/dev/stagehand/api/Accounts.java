package dev.stagehand.api;

import java.util.Optional;
import java.util.Set;

/**
 * The service's accounts as other modules see them (the console logs its users in as these accounts, so an
 * account means the same role and experiments in the API and the console).
 */
public interface Accounts {

    /**
     * @param role        viewer, operator or admin
     * @param experiments the experiments it sees; {@code *}: all
     */
    record Account(String name, String role, Set<String> experiments) {}

    Optional<Account> find(String name);
}
