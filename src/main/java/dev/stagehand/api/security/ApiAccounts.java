package dev.stagehand.api.security;

import java.sql.Array;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.RowMapper;
import org.springframework.stereotype.Service;

/** API accounts in PostgreSQL ({@code api_account}): name, role, experiments. */
@Service
public class ApiAccounts {

    /** The built-in administrator, always present; its first token comes from STAGEHAND_ADMIN_TOKEN. */
    public static final String ADMIN = "admin";
    static final Pattern NAME = Pattern.compile("[A-Za-z0-9._@+=-]{1,128}");
    private static final Pattern EXPERIMENT = Pattern.compile("[A-Za-z0-9._+-]{1,64}|\\*");

    public record Account(String name, ApiRole role, Set<String> experiments, Instant createdAt, Instant updatedAt) {}

    private final JdbcTemplate jdbc;

    ApiAccounts(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    public Optional<Account> find(String name) {
        return jdbc.query("SELECT name, role, experiments, created_at, updated_at FROM api_account WHERE name = ?", ROW, name)
                .stream().findFirst();
    }

    public List<Account> list() {
        return jdbc.query("SELECT name, role, experiments, created_at, updated_at FROM api_account ORDER BY name", ROW);
    }

    /** Creates or replaces an account; a bad name, role or experiment is an IllegalArgumentException naming it. */
    public Account put(String name, ApiRole role, List<String> experiments) {
        String why = problem(name, experiments);
        if (why != null) throw new IllegalArgumentException(why);
        if (ADMIN.equals(name) && role != ApiRole.ADMIN) throw new IllegalArgumentException("the built-in account 'admin' keeps the admin role");
        String[] exps = new LinkedHashSet<>(experiments).toArray(String[]::new);
        jdbc.update(con -> {
            var ps = con.prepareStatement("""
                    INSERT INTO api_account (name, role, experiments) VALUES (?, ?, ?)
                    ON CONFLICT (name) DO UPDATE SET role = EXCLUDED.role, experiments = EXCLUDED.experiments, updated_at = now()""");
            ps.setString(1, name);
            ps.setString(2, role.dbName());
            ps.setArray(3, con.createArrayOf("text", exps));
            return ps;
        });
        return find(name).orElseThrow();
    }

    /** Deletes an account and its tokens; false when there was none. The built-in admin cannot be deleted. */
    public boolean delete(String name) {
        if (ADMIN.equals(name)) throw new IllegalArgumentException("the built-in account 'admin' cannot be deleted");
        return jdbc.update("DELETE FROM api_account WHERE name = ?", name) > 0;
    }

    /** Why an account name or experiment list is not acceptable, or null. */
    static String problem(String name, List<String> experiments) {
        if (name == null || !NAME.matcher(name).matches()) return "account name: expected 1-128 of A-Z a-z 0-9 . _ @ + = -";
        if (experiments == null) return "experiments: required (a list; [\"*\"] for all)";
        for (String e : experiments) {
            if (e == null || !EXPERIMENT.matcher(e).matches()) return "experiments: '" + e + "' is not an experiment name (1-64 of A-Z a-z 0-9 . _ + -, or *)";
        }
        return null;
    }

    private static final RowMapper<Account> ROW = (rs, i) -> new Account(rs.getString(1), ApiRole.parse(rs.getString(2)),
            experiments(rs.getArray(3)), instant(rs, 4), instant(rs, 5));

    private static Set<String> experiments(Array a) throws SQLException {
        return a == null ? Set.of() : Set.copyOf(Arrays.asList((String[]) a.getArray()));
    }

    private static Instant instant(ResultSet rs, int col) throws SQLException {
        var t = rs.getTimestamp(col);
        return t == null ? null : t.toInstant();
    }
}
