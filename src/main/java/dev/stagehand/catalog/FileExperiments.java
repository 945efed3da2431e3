package dev.stagehand.catalog;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;

/** Which experiment each catalog file belongs to: what per-experiment authorization decides on. */
@Service
public class FileExperiments {

    private final JdbcTemplate jdbc;

    FileExperiments(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    /** The experiment of each named file that is in the catalog (names not in it are absent), one query. */
    public Map<String, String> of(List<String> names) {
        Map<String, String> out = new HashMap<>(Math.max(16, names.size() * 2));
        if (names.isEmpty()) return out;
        jdbc.query(con -> {
            var ps = con.prepareStatement("SELECT name, experiment FROM file WHERE name = ANY (?)");
            ps.setArray(1, con.createArrayOf("text", names.toArray()));
            return ps;
        }, rs -> {
            out.put(rs.getString(1), rs.getString(2));
        });
        return out;
    }
}
