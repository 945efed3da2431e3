package dev.stagehand.recall.request;

import dev.stagehand.cache.CacheEntry;
import dev.stagehand.cache.DiskCache;
import dev.stagehand.catalog.FileNames;
import dev.stagehand.recall.FileLocality;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;

/** {@link FileLocality} from the catalog's segments and volumes and the disk cache's verified copies. */
@Service
class JdbcFileLocality implements FileLocality {

    private final JdbcTemplate jdbc;
    private final DiskCache cache;

    JdbcFileLocality(JdbcTemplate jdbc, DiskCache cache) {
        this.jdbc = jdbc;
        this.cache = cache;
    }

    private record Row(long id, int usable, int lost, int segments) {}

    @Override
    public List<Info> locality(List<String> paths) {
        List<String> valid = new ArrayList<>();
        for (String p : paths) if (p != null && FileNames.problem(p) == null) valid.add(p);
        Map<String, Row> rows = new HashMap<>();
        if (!valid.isEmpty()) {
            jdbc.query(con -> {
                var ps = con.prepareStatement("""
                        SELECT f.name, f.id,
                               count(s.file_id) FILTER (WHERE s.state = 'ok' AND v.state = 'available'),
                               count(s.file_id) FILTER (WHERE s.state = 'lost'),
                               count(s.file_id)
                          FROM file f LEFT JOIN segment s ON s.file_id = f.id LEFT JOIN volume v ON v.id = s.volume_id
                         WHERE f.name = ANY(?) GROUP BY f.name, f.id""");
                ps.setArray(1, con.createArrayOf("text", valid.toArray()));
                return ps;
            }, rs -> {
                rows.put(rs.getString(1), new Row(rs.getLong(2), rs.getInt(3), rs.getInt(4), rs.getInt(5)));
            });
        }
        Map<Long, CacheEntry> onDisk = cache.lookup(rows.values().stream().map(Row::id).toList());
        List<Info> out = new ArrayList<>(paths.size());
        for (String p : paths) {
            String why = p == null ? "not a path" : FileNames.problem(p);
            if (why != null) {
                out.add(new Info(p, null, why));
                continue;
            }
            Row r = rows.get(p);
            if (r == null) {
                out.add(new Info(p, null, "no such file in the catalog"));
                continue;
            }
            CacheEntry e = onDisk.get(r.id());
            boolean disk = e != null && e.cached();
            Locality l;
            if (r.usable() > 0) l = disk ? Locality.DISK_AND_TAPE : Locality.TAPE;
            else if (disk) l = Locality.DISK;
            else if (r.segments() == 0) l = Locality.NONE;
            else if (r.lost() == r.segments()) l = Locality.LOST;
            else l = Locality.UNAVAILABLE;
            out.add(new Info(p, l, null));
        }
        return out;
    }
}
