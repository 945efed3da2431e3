package dev.stagehand.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.security.test.web.servlet.request.SecurityMockMvcRequestPostProcessors.user;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.webmvc.test.autoconfigure.AutoConfigureMockMvc;
import org.springframework.test.web.servlet.MockMvc;

/** Each console page's URL serves the whole page; the same URL plus /live serves only the part htmx polls. */
@SpringBootTest(properties = {"stagehand.recall.enabled=false", "stagehand.console.admin-password=test-admin-pw"})
@AutoConfigureMockMvc
class LivePartTest {

    @Autowired
    MockMvc mvc;

    @Test
    void aPageIsWholeAndItsLiveUrlIsOnlyThePolledPart() throws Exception {
        var viewer = user("vic").roles("VIEWER");
        String[][] pages = {{"/console", "/console/overview/live"}, {"/console/timeline", "/console/timeline/live"},
                {"/console/requests", "/console/requests/live"}, {"/console/transfers", "/console/transfers/live"},
                {"/console/datasets", "/console/datasets/live"}};
        for (String[] p : pages) {
            String page = mvc.perform(get(p[0]).with(viewer)).andExpect(status().isOk()).andReturn().getResponse().getContentAsString();
            String live = mvc.perform(get(p[1]).with(viewer)).andExpect(status().isOk()).andReturn().getResponse().getContentAsString();
            assertThat(page).as(p[0]).contains("<html").contains("id=\"live\"");
            assertThat(live.strip()).as(p[1]).startsWith("<div id=\"live\"").doesNotContain("<html");
        }
    }

    @Test
    void theViewNameFollowsTheUrl() {
        var http = new org.springframework.mock.web.MockHttpServletRequest("GET", "/console/requests/abc/live");
        assertThat(LivePart.view("console/request", http)).isEqualTo("console/request :: live");
        http.setRequestURI("/console/requests/abc");
        assertThat(LivePart.view("console/request", http)).isEqualTo("console/request");
    }
}
