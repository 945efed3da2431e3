package dev.stagehand.console;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.springframework.mock.web.MockHttpServletRequest;

/** The view a page handler answers with: the page, or its live fragment for the page's /live URL. */
class LivePartTest {

    @Test
    void theViewNameFollowsTheUrl() {
        var http = new MockHttpServletRequest("GET", "/console/requests/abc/live");
        assertThat(LivePart.view("console/request", http)).isEqualTo("console/request :: live");
        http.setRequestURI("/console/requests/abc");
        assertThat(LivePart.view("console/request", http)).isEqualTo("console/request");
        http.setRequestURI("/console");
        assertThat(LivePart.view("console/overview", http)).isEqualTo("console/overview");
    }
}
