package dev.stagehand.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.security.test.web.servlet.request.SecurityMockMvcRequestPostProcessors.csrf;
import static org.springframework.security.test.web.servlet.request.SecurityMockMvcRequestPostProcessors.user;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

import dev.stagehand.ItDb;
import dev.stagehand.recall.StageRequests;
import dev.stagehand.recall.StageRequests.NewStageRequest;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.webmvc.test.autoconfigure.AutoConfigureMockMvc;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.request.RequestPostProcessor;

/**
 * The request page against real PostgreSQL: each page of files is read by place (absent files failed in their
 * place), the per-state counts follow the files at each refresh (running totals, V30), also after a cancel from
 * the console; another experiment's request is not found. A database of its own: the
 * cached contexts of other test classes run schedulers that would take its request in and read its files.
 */
@SpringBootTest(properties = {"stagehand.db.local-database=stagehand_console_page", "stagehand.recall.enabled=false",
        "stagehand.console.admin-password=test-admin-pw"})
@AutoConfigureMockMvc
class ConsoleRequestPageIT {

    static final Pattern PATH = Pattern.compile("<td class=\"path\">([^<]*)</td>");

    @Autowired MockMvc mvc;
    @Autowired JdbcTemplate jdbc;
    @Autowired StageRequests requests;
    @Autowired ConsoleViews views;

    final String dir = "/it/console-page/" + UUID.randomUUID().toString().substring(0, 8) + "/";
    final RequestPostProcessor operator = user(new ConsoleUser("opal", "{noop}x", Role.OPERATOR, Set.of(ConsoleUser.ALL)));

    @Test
    void pagesOfFilesByPlaceAndCountsFollowingEveryChange() throws Exception {
        // 250 files; f200 is not in the catalog and f005, f150 are not the caller's: failed in their place
        List<String> names = IntStream.rangeClosed(1, 250).mapToObj(i -> dir + String.format("f%03d", i)).toList();
        for (String n : names) if (!n.endsWith("f200")) ItDb.simulatedFile(jdbc, n, 1_000);
        UUID id = requests.submitFailingAbsent("opal", new NewStageRequest(null, names, null, null, null, "atlas"),
                Set.of(dir + "f005", dir + "f150")).request().id();

        String first = page(id, 0);
        assertThat(paths(first)).isEqualTo(names.subList(0, 100));
        assertThat(first).contains("Files 1–100 of 250", "no such file in the catalog", "next →").doesNotContain("← previous");
        assertThat(count(first, "queued")).isEqualTo(247);
        assertThat(count(first, "failed")).isEqualTo(3);

        assertThat(paths(page(id, 100))).isEqualTo(names.subList(100, 200));
        String last = page(id, 200);
        assertThat(paths(last)).isEqualTo(names.subList(200, 250));
        assertThat(last).contains("Files 201–250 of 250", "← previous").doesNotContain("next →");

        // the scheduler's changes show at the next refresh
        jdbc.update("UPDATE stage_request_file SET state = 'staging' WHERE request_id = ? AND ordinal <= 11", id); // f005 is absent
        String changed = page(id, 0);
        assertThat(count(changed, "staging")).isEqualTo(10);
        assertThat(count(changed, "queued")).isEqualTo(237);
        // and the overview's open requests, from the same running counts
        assertThat(views.openRequests(15)).filteredOn(r -> r.id().equals(id.toString())).singleElement()
                .satisfies(r -> {
                    assertThat(r.queued()).isEqualTo(237);
                    assertThat(r.staging()).isEqualTo(10);
                    assertThat(r.failed()).isEqualTo(3); // two not the caller's, one not in the catalog
                    assertThat(r.done() + r.onDisk() + r.cancelled()).isZero();
                });

        // another experiment's user does not find it, and cannot cancel it
        var cms = user(new ConsoleUser("cmsop", "{noop}x", Role.OPERATOR, Set.of("cms")));
        mvc.perform(get("/console/requests/" + id).with(cms)).andExpect(status().isNotFound());
        mvc.perform(post("/console/requests/" + id + "/cancel").with(cms).with(csrf())).andExpect(status().is3xxRedirection());
        assertThat(jdbc.queryForObject("SELECT state FROM stage_request WHERE id = ?", String.class, id)).isEqualTo("submitted");

        // an operator's cancel
        mvc.perform(post("/console/requests/" + id + "/cancel").with(operator).with(csrf())).andExpect(status().is3xxRedirection());
        String cancelled = page(id, 0);
        assertThat(count(cancelled, "cancelled")).isEqualTo(247);
        assertThat(count(cancelled, "queued")).isZero();
        assertThat(count(cancelled, "staging")).isZero();
    }

    /**
     * The overview's open requests count the files deleted from the catalog since they were named (an archive file not
     * on tape deleted, V59) in the state they ended in. Only the failed ones were counted: a request's states did not
     * add up to its files once one on disk or cancelled was deleted (and the overview had no cancelled column).
     */
    @Test
    void theOverviewCountsAFileDeletedFromTheCatalogInTheStateItEndedIn() throws Exception {
        List<String> names = IntStream.rangeClosed(1, 4).mapToObj(i -> dir + "g" + i).toList();
        for (String n : names) ItDb.simulatedFile(jdbc, n, 1_000);
        UUID id = requests.submit("opal", new NewStageRequest(null, names, null, null, null, "atlas")).request().id();
        // as the archive's delete leaves them: g1 ended on disk, g2 cancelled, both moved out of the request's file rows
        jdbc.update("UPDATE stage_request_file SET state = CASE WHEN ordinal = 1 THEN 'on_disk' ELSE 'cancelled' END, finished_at = now() "
                + "WHERE request_id = ? AND ordinal IN (1, 2)", id);
        jdbc.update("""
                INSERT INTO stage_request_absent (request_id, ordinal, path, state, finished_at)
                SELECT srf.request_id, srf.ordinal, f.name, srf.state, srf.finished_at
                  FROM stage_request_file srf JOIN file f ON f.id = srf.file_id WHERE srf.request_id = ? AND srf.ordinal IN (1, 2)""", id);
        jdbc.update("DELETE FROM stage_request_file WHERE request_id = ? AND ordinal IN (1, 2)", id);

        assertThat(views.openRequests(15)).filteredOn(r -> r.id().equals(id.toString())).singleElement().satisfies(r -> {
            assertThat(r.files()).isEqualTo(4);
            assertThat(r.queued()).isEqualTo(2);
            assertThat(r.onDisk()).isEqualTo(1);
            assertThat(r.cancelled()).isEqualTo(1);
            assertThat(r.failed() + r.done() + r.staging()).isZero();
        });
        var admin = user(new ConsoleUser("adele", "{noop}x", Role.ADMIN, Set.of(ConsoleUser.ALL)));
        String overview = mvc.perform(get("/console").with(admin)).andExpect(status().isOk()).andReturn().getResponse().getContentAsString();
        assertThat(overview).contains("<th class=\"num\">Cancelled</th>");
    }

    @Test
    void aNulInAFieldIsRefusedNotA500() throws Exception {
        // PostgreSQL refuses a NUL in a query parameter: each of these was a 500
        for (String filter : List.of("owner", "experiment")) {
            mvc.perform(get("/console/requests").param(filter, "a\0b").with(operator)).andExpect(status().isBadRequest());
        }
        var admin = user(new ConsoleUser("adele", "{noop}x", Role.ADMIN, Set.of(ConsoleUser.ALL)));
        mvc.perform(get("/console/volumes").param("q", "V\0").with(admin)).andExpect(status().isBadRequest());
        String label = "N" + UUID.randomUUID().toString().substring(0, 6);
        jdbc.update("INSERT INTO volume (label) VALUES (?)", label);
        mvc.perform(post("/console/volumes/" + label + "/state").param("state", "disabled").param("reason", "worn\0out")
                .with(admin).with(csrf())).andExpect(status().is3xxRedirection());
        assertThat(jdbc.queryForObject("SELECT state FROM volume WHERE label = ?", String.class, label)).isEqualTo("available");
    }

    String page(UUID id, int offset) {
        try {
            return mvc.perform(get("/console/requests/" + id).param("offset", String.valueOf(offset)).with(operator))
                    .andExpect(status().isOk()).andReturn().getResponse().getContentAsString();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    static List<String> paths(String html) {
        List<String> paths = new ArrayList<>();
        Matcher m = PATH.matcher(html);
        while (m.find()) paths.add(m.group(1));
        return paths;
    }

    static long count(String html, String state) {
        return Long.parseLong(find(html, "<b id=\"files-" + state + "\">([0-9]+)</b>"));
    }

    static String find(String html, String regex) {
        Matcher m = Pattern.compile(regex).matcher(html);
        assertThat(m.find()).as(regex).isTrue();
        return m.group(1);
    }
}
