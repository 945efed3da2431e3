package dev.stagehand.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.security.test.web.servlet.request.SecurityMockMvcRequestPostProcessors.user;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.webmvc.test.autoconfigure.AutoConfigureMockMvc;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.request.RequestPostProcessor;

/**
 * The datasets page's completeness matrix against real PostgreSQL, larger than the page shows: a user of some
 * experiments sees every row of theirs, and the page says when the matrix is cut. A database of its own (no
 * replication pass runs: the rows stay as written).
 */
@SpringBootTest(properties = {"stagehand.db.local-database=stagehand_console_datasets", "stagehand.recall.enabled=false",
        "stagehand.replication.enabled=false", "stagehand.console.admin-password=test-admin-pw"})
@AutoConfigureMockMvc
class ConsoleDatasetsPageIT {

    @Autowired MockMvc mvc;
    @Autowired JdbcTemplate jdbc;

    final String tag = UUID.randomUUID().toString().substring(0, 8);

    String page(RequestPostProcessor who) throws Exception {
        return mvc.perform(get("/console/datasets").with(who)).andExpect(status().isOk()).andReturn().getResponse()
                .getContentAsString();
    }

    /**
     * 5,001 rows of another experiment's datasets sort before the cms one: the page read the first 5,000 rows and
     * filtered them by experiment afterwards, so a cms operator saw no row at all, and nobody was told the
     * matrix was cut.
     */
    @Test
    void anExperimentsUserSeesItsRowsBeyondTheFirstPageAndTheCutIsSaid() throws Exception {
        long site = jdbc.queryForObject("INSERT INTO site (name) VALUES (?) RETURNING id", Long.class, "M-" + tag);
        jdbc.update("""
                INSERT INTO dataset (name, experiment) SELECT 'a-' || ? || '-' || lpad(i::text, 5, '0'), 'atlas'
                  FROM generate_series(1, 5001) i""", tag);
        jdbc.update("INSERT INTO dataset (name, experiment) VALUES (?, 'cms')", "z-" + tag);
        jdbc.update("""
                INSERT INTO dataset_site_status (dataset_id, site_id, files_total, files_done, files_verified, files_failed,
                                                 bytes_total, bytes_done, state)
                SELECT d.id, ?, 2, 1, 1, 0, 2000, 1000, 'REPLICATING' FROM dataset d WHERE d.name LIKE ? OR d.name = ?""",
                site, "a-" + tag + "-%", "z-" + tag);

        String cms = page(user(new ConsoleUser("cora", "{noop}x", Role.OPERATOR, Set.of("cms"))));
        assertThat(cms).contains("data-dataset=\"z-" + tag + "\"").doesNotContain("data-dataset=\"a-" + tag)
                .doesNotContain("matrix-truncated");

        String all = page(user(new ConsoleUser("opal", "{noop}x", Role.OPERATOR, Set.of(ConsoleUser.ALL))));
        assertThat(all).contains("id=\"matrix-truncated\"", "first 5000 rows").doesNotContain("data-dataset=\"z-" + tag + "\"");
    }

    /**
     * The rules table is filtered by experiment and cut in the query: the page read every rule (and every rule's
     * experiment) at each 2 s refresh and filtered them in Java, and showed them all. Past 1,000 rules the page says the
     * table is cut; a cms operator still sees the cms rule made after 1,001 atlas ones.
     */
    @Test
    void theRulesTableIsFilteredAndCutInTheQuery() throws Exception {
        jdbc.update("""
                INSERT INTO dataset (name, experiment) SELECT 'r-' || ? || '-' || lpad(i::text, 5, '0'), 'atlas'
                  FROM generate_series(1, 1001) i""", tag);
        jdbc.update("INSERT INTO dataset (name, experiment) VALUES (?, 'cms')", "zr-" + tag);
        jdbc.update("""
                INSERT INTO replication_rule (dataset_id, copies, site_expression)
                SELECT id, 1, 'RULES-' || ? FROM dataset WHERE name LIKE ? ORDER BY name""", tag, "r-" + tag + "-%");
        jdbc.update("INSERT INTO replication_rule (dataset_id, copies, site_expression) SELECT id, 1, 'RULES-' || ? FROM dataset WHERE name = ?",
                tag, "zr-" + tag);

        String cms = page(user(new ConsoleUser("cora", "{noop}x", Role.OPERATOR, Set.of("cms"))));
        assertThat(cms).contains(">zr-" + tag + "<").doesNotContain(">r-" + tag + "-").doesNotContain("rules-truncated");

        String all = page(user(new ConsoleUser("opal", "{noop}x", Role.OPERATOR, Set.of(ConsoleUser.ALL))));
        assertThat(all).contains("id=\"rules-truncated\"", "the first 1000 rules").doesNotContain(">zr-" + tag + "<");
        // how to read the rest: the API's keyset pages, from the page after the last rule shown (the hint named only
        // one dataset's rules, not how to page through them)
        long lastShown = jdbc.queryForObject("SELECT id FROM replication_rule ORDER BY id LIMIT 1 OFFSET 999", Long.class);
        assertThat(all).contains("GET /api/v1/replication/rules?after=" + lastShown + "&amp;limit=1000", "Link header (rel=next)");
        assertThat(all.split("<td class=\"mono\">r-" + tag + "-", -1).length - 1).isLessThanOrEqualTo(1000);
    }
}
