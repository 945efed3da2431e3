package dev.stagehand.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.security.test.web.servlet.request.SecurityMockMvcRequestPostProcessors.csrf;
import static org.springframework.security.test.web.servlet.request.SecurityMockMvcRequestPostProcessors.user;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

import dev.stagehand.ItDb;
import dev.stagehand.ItWait;
import dev.stagehand.recall.StageRequests;
import dev.stagehand.recall.StageRequests.NewStageRequest;
import java.time.Duration;
import java.time.LocalTime;
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
 * place), the per-state counts are shared by the page's refreshes and follow the files within seconds, and at
 * once after a cancel from the console; another experiment's request is not found. A database of its own: the
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

    final String dir = "/it/console-page/" + UUID.randomUUID().toString().substring(0, 8) + "/";
    final RequestPostProcessor operator = user(new ConsoleUser("opal", "{noop}x", Role.OPERATOR, Set.of(ConsoleUser.ALL)));

    @Test
    void pagesOfFilesByPlaceCountsSharedAndFreshAfterACancel() throws Exception {
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
        String countedAt = find(first, "<span id=\"counts-as-of\">([0-9:]+)</span>");
        long apart = Math.abs(LocalTime.now().toSecondOfDay() - LocalTime.parse(countedAt).toSecondOfDay());
        assertThat(Math.min(apart, 86_400 - apart)).as("seconds since counted").isLessThan(60); // around midnight too

        assertThat(paths(page(id, 100))).isEqualTo(names.subList(100, 200));
        String last = page(id, 200);
        assertThat(paths(last)).isEqualTo(names.subList(200, 250));
        assertThat(last).contains("Files 201–250 of 250", "← previous").doesNotContain("next →");

        // the scheduler's changes show within the counts' age (2 s for a request this size)
        jdbc.update("UPDATE stage_request_file SET state = 'staging' WHERE request_id = ? AND ordinal <= 11", id); // f005 is absent
        ItWait.await("10 files staging on the page", Duration.ofSeconds(20), () -> count(page(id, 0), "staging") == 10);
        assertThat(count(page(id, 0), "queued")).isEqualTo(237);

        // another experiment's user does not find it, and cannot cancel it
        var cms = user(new ConsoleUser("cmsop", "{noop}x", Role.OPERATOR, Set.of("cms")));
        mvc.perform(get("/console/requests/" + id).with(cms)).andExpect(status().isNotFound());
        mvc.perform(post("/console/requests/" + id + "/cancel").with(cms).with(csrf())).andExpect(status().is3xxRedirection());
        assertThat(jdbc.queryForObject("SELECT state FROM stage_request WHERE id = ?", String.class, id)).isEqualTo("submitted");

        // an operator's cancel: the counts are made again for the next page, not reused
        mvc.perform(post("/console/requests/" + id + "/cancel").with(operator).with(csrf())).andExpect(status().is3xxRedirection());
        String cancelled = page(id, 0);
        assertThat(count(cancelled, "cancelled")).isEqualTo(247);
        assertThat(count(cancelled, "queued")).isZero();
        assertThat(count(cancelled, "staging")).isZero();
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
