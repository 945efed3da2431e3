package dev.stagehand.replication;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;
import dev.stagehand.recall.StageRequests;
import dev.stagehand.transfer.TransferQueue;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;
import org.springframework.transaction.annotation.Transactional;

/** Sites (catalog tables site, site_endpoint): a name, attributes for rule expressions, GridFTP endpoints. */
@Component
public class Sites {

    /** A site; {@code endpoints} are base directory URLs (ftp:// or gsiftp://), the first enabled one is used. */
    public record Site(long id, String name, Map<String, String> attributes, List<String> endpoints) {}

    private static final Pattern WORD = Pattern.compile("[A-Za-z0-9_.:+-]{1,64}");

    private final JdbcTemplate jdbc;
    private final TransferQueue transfers;
    private final StageRequests recalls;

    public Sites(JdbcTemplate jdbc, TransferQueue transfers, StageRequests recalls) {
        this.jdbc = jdbc;
        this.transfers = transfers;
        this.recalls = recalls;
    }

    /** Creates or replaces the site {@code name}: its attributes and endpoints become exactly these. */
    @Transactional
    public Site put(String name, Map<String, String> attributes, List<String> endpoints) {
        if (name == null || !WORD.matcher(name).matches())
            throw ReplicationRejected.invalid("name", "a site name is 1-64 of A-Z a-z 0-9 _ . : + -");
        Map<String, String> attrs = attributes == null ? Map.of() : attributes;
        for (var e : attrs.entrySet()) {
            if (!WORD.matcher(e.getKey()).matches())
                throw ReplicationRejected.invalid("attributes", "attribute name '" + e.getKey() + "': 1-64 of A-Z a-z 0-9 _ . : + -");
            if (e.getValue() == null || !WORD.matcher(e.getValue()).matches())
                throw ReplicationRejected.invalid("attributes", "value of '" + e.getKey() + "': 1-64 of A-Z a-z 0-9 _ . : + -");
        }
        List<String> urls = endpoints == null ? List.of() : endpoints;
        for (String u : urls) {
            String why = endpointProblem(u);
            if (why != null) throw ReplicationRejected.invalid("endpoints", "'" + u + "': " + why);
        }
        StringBuilder json = new StringBuilder("{");
        attrs.forEach((k, v) -> json.append(json.length() > 1 ? "," : "").append('"').append(k).append("\":\"").append(v).append('"'));
        json.append('}');
        long id = jdbc.queryForObject("""
                INSERT INTO site (name, attributes) VALUES (?, ?::jsonb)
                ON CONFLICT (name) DO UPDATE SET attributes = EXCLUDED.attributes RETURNING id""", Long.class, name, json.toString());
        jdbc.update("DELETE FROM site_endpoint WHERE site_id = ?", id);
        for (String u : urls) jdbc.update("INSERT INTO site_endpoint (site_id, url) VALUES (?, ?) ON CONFLICT DO NOTHING", id, u);
        // replicas waiting for this site (an endpoint, say), or for a source it holds, are looked at at the next
        // pass, not at their next look
        jdbc.update("""
                UPDATE replica r SET next_attempt_at = NULL
                 WHERE r.state = 'pending' AND r.waiting_for IS NOT NULL AND r.next_attempt_at IS NOT NULL
                   AND (r.site_id = ? OR r.file_id IN (SELECT h.file_id FROM replica h WHERE h.site_id = ? AND h.state IN ('done', 'verified')))""",
                id, id);
        return get(name).orElseThrow();
    }

    static String endpointProblem(String url) {
        if (url == null || url.isBlank() || url.length() > 2000) return "expected an ftp:// or gsiftp:// URL";
        try {
            URI u = new URI(url);
            if (!"ftp".equalsIgnoreCase(u.getScheme()) && !"gsiftp".equalsIgnoreCase(u.getScheme()))
                return "expected an ftp:// or gsiftp:// URL";
            if (u.getRawAuthority() == null || u.getPath() == null || !u.getPath().startsWith("/"))
                return "expected host and absolute directory, e.g. gsiftp://host:2811/data";
            return null;
        } catch (URISyntaxException e) {
            return "not a URL: " + e.getReason();
        }
    }

    public Optional<Site> get(String name) {
        return list().stream().filter(s -> s.name().equals(name)).findFirst();
    }

    public List<Site> list() {
        Map<Long, String> names = new LinkedHashMap<>();
        jdbc.query("SELECT id, name FROM site ORDER BY name", rs -> {
            names.put(rs.getLong(1), rs.getString(2));
        });
        Map<Long, Map<String, String>> attrs = new LinkedHashMap<>();
        jdbc.query("SELECT s.id, a.key, a.value #>> '{}' FROM site s, jsonb_each(s.attributes) a ORDER BY a.key",
                rs -> {
                    attrs.computeIfAbsent(rs.getLong(1), k -> new LinkedHashMap<>()).put(rs.getString(2), rs.getString(3));
                });
        Map<Long, List<String>> urls = new LinkedHashMap<>();
        jdbc.query("SELECT site_id, url FROM site_endpoint WHERE enabled ORDER BY id", rs -> {
            urls.computeIfAbsent(rs.getLong(1), k -> new ArrayList<>()).add(rs.getString(2));
        });
        List<Site> out = new ArrayList<>();
        names.forEach((id, n) -> out.add(new Site(id, n, Map.copyOf(attrs.getOrDefault(id, Map.of())),
                List.copyOf(urls.getOrDefault(id, List.of())))));
        return out;
    }

    /**
     * Deletes a site with its replicas' records (the remote files are not touched). Copies on their way to it are
     * cancelled: their transfers, and their files in the recall requests made for them (copies from tape), which
     * went on writing to the site once their rows were gone and nothing followed them.
     */
    @Transactional
    public boolean delete(String name) {
        List<Long> id = jdbc.queryForList("SELECT id FROM site WHERE name = ? FOR UPDATE", Long.class, name);
        if (id.isEmpty()) return false;
        List<ReplicationRules.InFlight> under = ReplicationRules.inFlightTo(jdbc, id.getFirst());
        for (ReplicationRules.InFlight f : under) if (f.job() != null) transfers.cancel(f.job());
        ReplicationRules.cancelRecalls(jdbc, recalls, under);
        return jdbc.update("DELETE FROM site WHERE id = ?", id.getFirst()) == 1;
    }
}
