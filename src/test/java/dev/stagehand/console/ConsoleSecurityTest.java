package dev.stagehand.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.security.test.web.servlet.request.SecurityMockMvcRequestPostProcessors.csrf;
import static org.springframework.security.test.web.servlet.request.SecurityMockMvcRequestPostProcessors.user;
import static org.springframework.security.test.web.servlet.request.SecurityMockMvcRequestBuilders.formLogin;
import static org.springframework.security.test.web.servlet.response.SecurityMockMvcResultMatchers.authenticated;
import static org.springframework.security.test.web.servlet.response.SecurityMockMvcResultMatchers.unauthenticated;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.content;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.header;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.redirectedUrl;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.webmvc.test.autoconfigure.AutoConfigureMockMvc;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.web.servlet.MockMvc;

/**
 * Role rules and CSRF of the console, that the API stays outside the console's security, and that each
 * page's URL serves the whole page while its /live URL serves only the part htmx polls.
 */
@SpringBootTest(properties = {
        "stagehand.recall.enabled=false",
        "stagehand.console.admin-password=test-admin-pw",
})
@AutoConfigureMockMvc
class ConsoleSecurityTest {

    @org.springframework.test.context.DynamicPropertySource
    static void viewerPassword(org.springframework.test.context.DynamicPropertyRegistry registry) {
        String hash = new org.springframework.security.crypto.bcrypt.BCryptPasswordEncoder(4).encode("viewer-pw");
        // a list binds from one property source only: the whole entry is given here
        registry.add("stagehand.console.users[0].name", () -> "vic");
        registry.add("stagehand.console.users[0].password-hash", () -> hash);
        registry.add("stagehand.console.users[0].role", () -> "viewer");
    }

    @Autowired
    MockMvc mvc;
    @Autowired
    JdbcTemplate jdbc;
    @Autowired
    dev.stagehand.api.security.ApiTokens tokens;

    /** A console user who sees every experiment, as a form login makes it. */
    static org.springframework.test.web.servlet.request.RequestPostProcessor as(String name, Role role) {
        return user(new ConsoleUser(name, "{noop}x", role, java.util.Set.of(ConsoleUser.ALL)));
    }

    @Test
    void aUserOfSomeExperimentsIsKeptToTheirRequestsAndDatasets() throws Exception {
        var cmsViewer = user(new ConsoleUser("cms-vic", "{noop}x", Role.OPERATOR, java.util.Set.of("cms")));
        mvc.perform(get("/console").with(cmsViewer)).andExpect(status().is3xxRedirection()).andExpect(redirectedUrl("/console/requests"));
        for (String page : new String[] {"/console/requests", "/console/requests/live", "/console/datasets", "/console/datasets/live"}) {
            mvc.perform(get(page).with(cmsViewer)).andExpect(status().isOk());
        }
        for (String page : new String[] {"/console/overview/live", "/console/timeline", "/console/transfers", "/console/volumes",
                "/console/archive", "/console/audit"}) {
            mvc.perform(get(page).with(cmsViewer)).andExpect(status().isForbidden());
        }
        mvc.perform(post("/console/transfers/1/retry").with(cmsViewer).with(csrf())).andExpect(status().isForbidden());
        // an unknown request is not found, like another experiment's
        mvc.perform(get("/console/requests/" + UUID.randomUUID()).with(cmsViewer)).andExpect(status().isNotFound())
                .andExpect(content().string(org.hamcrest.Matchers.containsString("404")));
    }

    @Test
    void anonymousIsSentToTheLoginPage() throws Exception {
        mvc.perform(get("/console")).andExpect(status().is3xxRedirection()).andExpect(redirectedUrl("/console/login"));
        mvc.perform(get("/console/login")).andExpect(status().isOk()).andExpect(content().string(org.hamcrest.Matchers.containsString("Log in")));
    }

    @Test
    void theAdminFromTheEnvironmentLogsInAndAWrongPasswordDoesNot() throws Exception {
        mvc.perform(formLogin("/console/login").user("admin").password("test-admin-pw")).andExpect(authenticated().withRoles("VIEWER", "OPERATOR", "ADMIN"));
        mvc.perform(formLogin("/console/login").user("admin").password("wrong")).andExpect(unauthenticated());
        mvc.perform(formLogin("/console/login").user("vic").password("viewer-pw")).andExpect(authenticated().withRoles("VIEWER"));
    }

    @Test
    void loginWithoutCsrfTokenIsRefused() throws Exception {
        mvc.perform(post("/console/login").param("username", "admin").param("password", "test-admin-pw"))
                .andExpect(status().isForbidden());
    }

    @Test
    void aViewerReadsButCannotActOrSeeTheAuditLog() throws Exception {
        var viewer = as("vic", Role.VIEWER);
        for (String page : new String[] {"/console", "/console/overview/live", "/console/timeline", "/console/requests",
                "/console/transfers", "/console/volumes", "/console/datasets"}) {
            mvc.perform(get(page).with(viewer)).andExpect(status().isOk());
        }
        mvc.perform(get("/console/audit").with(viewer)).andExpect(status().isForbidden());
        mvc.perform(post("/console/requests/" + UUID.randomUUID() + "/cancel").with(viewer).with(csrf())).andExpect(status().isForbidden());
        mvc.perform(post("/console/transfers/1/retry").with(viewer).with(csrf())).andExpect(status().isForbidden());
        mvc.perform(post("/console/volumes/X/state").param("state", "broken").with(viewer).with(csrf())).andExpect(status().isForbidden());
    }

    @Test
    void aPageIsWholeAndItsLiveUrlIsOnlyThePolledPart() throws Exception {
        var viewer = as("vic", Role.VIEWER);
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
    void anOperatorActsOnRequestsAndTransfersButNotOnVolumes() throws Exception {
        var operator = as("olga", Role.OPERATOR);
        mvc.perform(post("/console/transfers/999999999/retry").with(operator).with(csrf())).andExpect(status().is3xxRedirection());
        mvc.perform(post("/console/volumes/X/state").param("state", "broken").with(operator).with(csrf())).andExpect(status().isForbidden());
        mvc.perform(post("/console/drives/drive01/enabled").param("enabled", "false").with(operator).with(csrf())).andExpect(status().isForbidden());
        mvc.perform(get("/console/audit").with(operator)).andExpect(status().isForbidden());
        assertThat(jdbc.queryForObject("SELECT count(*) FROM audit_log WHERE actor = 'olga' AND action = 'transfer.retry' AND outcome = 'refused'",
                Long.class)).isGreaterThanOrEqualTo(1);
    }

    @Test
    void anAdminChangesAVolumeAndTheActionIsAudited() throws Exception {
        String label = "SEC" + UUID.randomUUID().toString().substring(0, 6).toUpperCase();
        jdbc.update("INSERT INTO volume (label) VALUES (?)", label);
        var admin = as("root-op", Role.ADMIN);
        mvc.perform(post("/console/volumes/" + label + "/state").param("state", "broken").param("reason", "torn leader")
                .with(admin).with(csrf())).andExpect(status().is3xxRedirection());
        assertThat(jdbc.queryForObject("SELECT state || '/' || state_reason FROM volume WHERE label = ?", String.class, label))
                .isEqualTo("broken/torn leader");
        mvc.perform(get("/console/audit").with(admin)).andExpect(status().isOk())
                .andExpect(content().string(org.hamcrest.Matchers.containsString(label)));
        assertThat(jdbc.queryForObject("SELECT count(*) FROM audit_log WHERE actor = 'root-op' AND action = 'volume.state' AND target = ?",
                Long.class, label)).isEqualTo(1);
    }

    @Test
    void aChangeWithoutCsrfTokenIsRefusedEvenForAnAdmin() throws Exception {
        mvc.perform(post("/console/volumes/X/state").param("state", "broken").with(as("a", Role.ADMIN)))
                .andExpect(status().isForbidden());
    }

    @Test
    void pagesCarryTheCsrfTokenForHtmx() throws Exception {
        mvc.perform(get("/console").with(as("vic", Role.VIEWER)))
                .andExpect(content().string(org.hamcrest.Matchers.containsString("hx-headers=\"{&quot;X-CSRF-TOKEN&quot;")));
    }

    @Test
    void theApiIsNotBehindTheConsoleLogin() throws Exception {
        // the API's own chain: 401 with a problem body, not a redirect to the console's login page
        mvc.perform(get("/api/v1/requests")).andExpect(status().isUnauthorized())
                .andExpect(header().string("WWW-Authenticate", org.hamcrest.Matchers.startsWith("Bearer")));
        String token = tokens.create("admin", "console test", null, "test").token();
        mvc.perform(get("/api/v1/requests").header("Authorization", "Bearer " + token)).andExpect(status().isOk());
        mvc.perform(post("/api/v1/requests").header("Authorization", "Bearer " + token).contentType("application/json")
                        .content("{\"files\": []}"))
                .andExpect(status().isBadRequest()); // reaches the API's own validation: no console login, no CSRF
        // a console session is no API credential
        mvc.perform(get("/api/v1/requests").with(as("a", Role.ADMIN))).andExpect(status().is4xxClientError());
    }
}
